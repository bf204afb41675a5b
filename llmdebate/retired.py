"""What an extension written against an earlier authoring API names, and what replaced it.

:data:`API_VERSION` is the version of the authoring API (:mod:`llmdebate.authoring`): the
major number changes when a name an extension uses is removed or renamed, the minor one
when names are added. An extension written against an earlier version either keeps
working, with a :class:`DeprecationWarning` naming the replacement, or is refused in one
line naming the replacement; nothing it declares is silently ignored:

* a module that moved (:data:`MOVED_MODULES`): importing it is a
  :class:`ModuleNotFoundError` naming the module to import instead (:func:`install`, run
  when the package is imported);
* a protocol class attribute of authoring API 1 (:data:`TO_ADDITIONS`,
  :data:`TO_CAPABILITIES`): read as its replacement, with a warning;
* a protocol class member the package no longer reads (:data:`NOT_READ`): the protocol is
  refused at registration (:func:`retired_members`).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType

API_VERSION = (2, 0)
"""(major, minor) of :mod:`llmdebate.authoring`. 2.0: a protocol declares what it adds as
``adds = Additions(...)`` and what it can do as ``can = Capabilities(...)``, subclasses a
family (``SpeechProtocol`` for seats that speak) and describes a speech once
(``Speech``); 1: flat class attributes (``seat_roles``, ``roles``, ``prompts_package``,
``speeches``, ``assigned``, ...), ``llmdebate.protocols.base``."""

PROTOCOL_API = "llmdebate.authoring.protocol"

MOVED_MODULES: dict[str, str] = {
    "llmdebate.protocols.base": f"{PROTOCOL_API} (DebateSpec, ProtocolSettings, Log, Team)",
    "llmdebate.agents.base": "llmdebate.core.roles",
    "llmdebate.models.base": "llmdebate.authoring.backend",
    "llmdebate.models.registry": "llmdebate.authoring.backend",
    "llmdebate.export.registry": "llmdebate.authoring.export_format",
    "llmdebate.schemas": "llmdebate.core.schemas",
    "llmdebate.scoring": "llmdebate.core.scoring",
    "llmdebate.engine": "llmdebate.core.engine",
    "llmdebate.decisions": "llmdebate.core.decisions",
    "llmdebate.rules": "llmdebate.core.rules",
    "llmdebate.rule_grammar": "llmdebate.core.rule_grammar",
    "llmdebate.speech": "llmdebate.qa.speech",
    "llmdebate.quotes": "llmdebate.qa.quotes",
    "llmdebate.context_fit": "llmdebate.qa.context_fit",
    "llmdebate.agents.passage": "llmdebate.qa.passage",
    "llmdebate.jsonl": "llmdebate.records.jsonl",
    "llmdebate.paths": "llmdebate.records.paths",
    "llmdebate.redact": "llmdebate.records.redact",
    "llmdebate.rundir": "llmdebate.records.rundir",
    "llmdebate.transcripts": "llmdebate.records.transcripts",
    "llmdebate.ratings": "llmdebate.tournament.ratings",
    "llmdebate.schedule": "llmdebate.tournament.schedule",
    "llmdebate.experiment.roster": "llmdebate.tournament.roster",
    "llmdebate.experiment.executors.base": "llmdebate.experiment.executors.executor",
    "llmdebate.agents.judges": "llmdebate.judging.model_judges",
    "llmdebate.formal.problems.base": "llmdebate.formal.problems.problem",
}
"""A module that no longer exists -> what to import instead."""

TO_ADDITIONS = {
    "seat_roles": "seats",
    "roles": "roles",
    "prompts_package": "prompts",
    "models": "models",
}
"""A protocol attribute of authoring API 1 -> the field of ``adds = Additions(...)`` that
holds it now."""

TO_CAPABILITIES = ("assigned", "open_roles", "judge_deferrable", "estimator_rewards")
"""Protocol flags of authoring API 1 that are fields of ``can = Capabilities(...)`` now."""

NOT_READ = {
    "speeches": "subclass SpeechProtocol",
    "passage_variants": "override variants(assignment, index, views)",
    "two_answer": "subclass ChoiceProtocol (a protocol's family says it)",
    "player_of": "declare adds = Additions(roles={...})",
    "assigned_answer": "read spec.answer in run",
    "needs_wrong_answer": "declare can = Capabilities(assigned=True)",
    "check_record": "declare fork_records on a SpeechProtocol",
    "rescore": "override payoff(t)",
    "judgment_scores": "override payoff(t)",
    "in_generation_metrics": "override payoff(t)",
}
"""A protocol member the package no longer reads -> what to do instead."""


def moved_message(name: str) -> str:
    """One line: module ``name`` no longer exists, and what to import instead."""
    return (f"No module named {name!r}: removed in llmdebate's authoring API "
            f"{API_VERSION[0]}; import {MOVED_MODULES[name]} instead")


class _MovedFinder(importlib.abc.MetaPathFinder):
    """Answers the import of a moved module with one line naming its replacement."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname in MOVED_MODULES:
            raise ModuleNotFoundError(moved_message(fullname), name=fullname)
        return None


def install() -> None:
    """Put the finder of moved modules in front of the import system (once)."""
    if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _MovedFinder())


def declared(cls: type, name: str) -> bool:
    """Whether ``cls`` or a base class of it outside the package declares ``name``."""
    return any(
        name in vars(base) for base in cls.__mro__
        if not base.__module__.startswith("llmdebate.")
    )


def retired_members(cls: type) -> tuple[list[str], str | None]:
    """What a protocol class declares of authoring API 1: (the attributes read as their
    replacement, the one line refusing it: a member no longer read, None: none)."""
    for name, instead in NOT_READ.items():
        if declared(cls, name):
            return [], (f"{name} is no longer read (authoring API {API_VERSION[0]}): "
                        f"{instead}")
    shimmed = [n for n in (*TO_ADDITIONS, *TO_CAPABILITIES) if declared(cls, n)]
    return shimmed, None


def replacement(name: str) -> str:
    """What replaces attribute ``name`` of :data:`TO_ADDITIONS` or :data:`TO_CAPABILITIES`."""
    if name in TO_ADDITIONS:
        return f"adds = Additions({TO_ADDITIONS[name]}=...)"
    return f"can = Capabilities({name}=...)"
