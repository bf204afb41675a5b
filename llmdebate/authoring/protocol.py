"""Everything a protocol's author needs, from one place (docs/extending.md, "Adding a
protocol", is a complete example).

* the families a protocol subclasses (:class:`RecursiveProtocol`, :class:`ChoiceProtocol`,
  :class:`SpeechProtocol`), what it declares (:class:`Capabilities`, :class:`Additions`) and
  :func:`register`;
* what its ``run(spec, team, settings, log)`` is given (:class:`DebateSpec`, :class:`Team`,
  :class:`ProtocolSettings`, :data:`Log`) and returns (:class:`Transcript` of
  :class:`Turn`);
* the choice family's helpers: the passage a judge sees (:func:`view_of`), what a prompt
  shows (:func:`options_text`, :func:`transcript_text`, :func:`judge_variables`), the judge's
  choice (:func:`judge_choice`), the transcript (:func:`decided`,
  :func:`with_quote_penalty`);
* the speech family's: a speech's prompt (:func:`speech_prompt`) and the speech under the
  run's rules (:func:`deliver`, :class:`Rules`), an
  open role's pick (:func:`chosen_position`), the interactive judge (:class:`JudgeTurns`);
* what a deferred judge's ruling is (:class:`LeafVerdict`, :class:`FirstOption`);
* forks: :func:`fork` (``at``, ``speaker``, ``swapped``) and :func:`team_for`;
* a speech protocol as data: :class:`Topology` (its :class:`Step` s) and
  :func:`register_topology`, as the built-in ``consultancy.yaml``, ``two_sided.yaml`` and
  ``direct.yaml`` are registered.
"""

from llmdebate.agents.factory import Team
from llmdebate.core.schemas import Transcript, Turn
from llmdebate.protocols.common import (
    decided,
    judge_choice,
    judge_variables,
    options_text,
    transcript_text,
    view_of,
    with_quote_penalty,
)
from llmdebate.protocols.families import ChoiceProtocol, RecursiveProtocol, SpeechProtocol
from llmdebate.protocols.interactive import JudgeTurns
from llmdebate.protocols.interface import (
    Additions,
    Capabilities,
    FirstOption,
    LeafVerdict,
    Ruling,
)
from llmdebate.protocols.open_roles import chosen_position
from llmdebate.protocols.registry import register
from llmdebate.protocols.spec import DebateSpec, Log, ProtocolSettings
from llmdebate.protocols.speeches import Rules, deliver, speech_prompt
from llmdebate.protocols.topology import register_topology
from llmdebate.protocols.topology_schema import Step, Topology
from llmdebate.rl.replay import fork, team_for

__all__ = [
    "Additions",
    "Capabilities",
    "ChoiceProtocol",
    "DebateSpec",
    "FirstOption",
    "JudgeTurns",
    "LeafVerdict",
    "Log",
    "ProtocolSettings",
    "RecursiveProtocol",
    "Rules",
    "Ruling",
    "SpeechProtocol",
    "Step",
    "Team",
    "Topology",
    "Transcript",
    "Turn",
    "chosen_position",
    "decided",
    "deliver",
    "fork",
    "judge_choice",
    "judge_variables",
    "options_text",
    "register",
    "register_topology",
    "speech_prompt",
    "team_for",
    "transcript_text",
    "view_of",
    "with_quote_penalty",
]
