"""Two-sided debate: debaters A and B argue for the two options for n rounds; the judge decides.

Every item is run in both orders (variant ``order-0``: A defends ``shown[0]``; ``order-1``:
A defends ``shown[1]``), so any advantage of speaking first or of an option's position cancels
across the pair. With ``prover.assignment: choose`` (open debate) every item is run once
(variant ``chosen``): debater A's model picks the answer it defends before the first speech
(decision ``answer``), B defends the other, and the judge sees the options in the item's order.
``mode``: ``sequential`` (B sees A's speech of the same round) or ``simultaneous``. The
protocol is data: its topology ships as ``two_sided.yaml`` beside this module
(:mod:`llmdebate.protocols.topology` runs it).
"""

from __future__ import annotations

from llmdebate.protocols.topology import load_shipped, register_topology

register_topology("two-sided", load_shipped("two_sided"), shipped=True)
