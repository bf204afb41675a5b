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
* the speech family's: one speech described once (:class:`Speech`: its prompt
  ``speech.prompt(act)``, the speech under the run's rules ``await speech.deliver(messages)``,
  both ``await speech.say(act)``; :class:`Rules`), an
  open role's pick (:func:`chosen_position`), the interactive judge (:class:`JudgeTurns`);
* what a deferred judge's ruling is (:class:`LeafVerdict`, :class:`FirstOption`);
* forks: :func:`fork` (``at``, ``speaker`` or ``step``, ``swapped``) and :func:`team_for`;
* a speech protocol as data: :class:`Topology` (its :class:`Step` s) and
  :func:`register_topology`, as the built-in ``consultancy.yaml``, ``two_sided.yaml`` and
  ``direct.yaml`` are registered.

Authoring API 1's ``speech_prompt`` and ``deliver`` still import, with a
:class:`DeprecationWarning` naming :class:`Speech` (:data:`llmdebate.authoring.API_VERSION`).
"""

import warnings
from typing import Any

from llmdebate.agents.factory import Team
from llmdebate.core.schemas import Transcript, Turn
from llmdebate.protocols import speeches
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
from llmdebate.protocols.speeches import Rules, Speech
from llmdebate.protocols.topology import register_topology
from llmdebate.protocols.topology_schema import Step, Topology
from llmdebate.retired import API_VERSION
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
    "Speech",
    "SpeechProtocol",
    "Step",
    "Team",
    "Topology",
    "Transcript",
    "Turn",
    "chosen_position",
    "decided",
    "fork",
    "judge_choice",
    "judge_variables",
    "options_text",
    "register",
    "register_topology",
    "team_for",
    "transcript_text",
    "view_of",
    "with_quote_penalty",
]

API_1 = {
    "speech_prompt": "Speech(team, spec, view, ...).prompt(act, **variables)",
    "deliver": "Speech(team, spec, view, ...).deliver(messages)",
}
"""Names of authoring API 1 this module still gives, with a warning -> what replaces them."""


def __getattr__(name: str) -> Any:
    if name in API_1:
        warnings.warn(
            f"{__name__}.{name} is authoring API 1; use {API_1[name]} "
            f"(llmdebate.authoring.API_VERSION {API_VERSION})",
            DeprecationWarning, stacklevel=2,
        )
        return getattr(speeches, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
