"""Direct judge: the judge answers the question alone (no debater).

On an item with a passage the direct protocol is the two baselines of the QA debate studies,
one debate each (``judge.direct_passage``): ``blind`` (the passage hidden: the judge answers
from the question and the two answers alone) and ``expert`` (the passage shown). The protocol
is data: its topology, with no turns, ships as ``direct.yaml`` beside this module
(:class:`llmdebate.protocols.topology.JudgeAlone` runs it).
"""

from __future__ import annotations

from llmdebate.protocols.topology import load_shipped, register_topology

register_topology("direct", load_shipped("direct"), shipped=True)
