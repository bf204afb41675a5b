"""Open roles: the debater (consultant) picks the answer it defends (``prover.assignment:
choose``), as in open consultancy.

The seat's model answers the question between the two options the judge will see (prompt
``answer``, decision ``answer``, asked before the first speech); the debate is variant
``chosen`` and its seats record the side the model picked, so reports rate open roles apart
from assigned ones.
"""

from __future__ import annotations

from llmdebate.agents.factory import Team
from llmdebate.protocols.spec import DebateSpec, Log


async def chosen_position(team: Team, spec: DebateSpec, seat: str, log: Log) -> str:
    """The option of ``spec.shown`` that ``seat``'s model chooses to defend."""
    item = {**spec.item_dict, "choices": list(spec.shown)}
    return await team.make_answerer(seat).pick_answer(item, log)
