"""The judge registry: ``judge.kind`` → a factory that makes a debate's leaf judge.

The built-in kinds (``llm``, ``oracle``, ``oracle-or-llm``, ``deferred``, ``human``) are
registered in :mod:`llmdebate.judging.model_judges`; a package adds a kind through the entry-point
group ``llmdebate.judges``, like every other extension point (docs/extending.md)::

    @JUDGES.register("panel", capabilities={WHOLE_DEBATES, USES_MODEL})
    def panel(team: Team) -> Judge: ...

What a kind can do is declared by its capabilities, never tested by its name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from llmdebate.registry import Registry

if TYPE_CHECKING:
    from llmdebate.core.roles import Judge

JudgeFactory = Callable[[Any], "Judge"]
"""Makes the judge of one debate from the run's :class:`~llmdebate.agents.factory.Team`."""

DEFERS = "defers"
"""A person gives the verdict later: the debate stops where the judge would decide."""
WHOLE_DEBATES = "whole-debates"
"""Rules on a whole debate (two-sided, consultancy, direct), not only on a leaf claim."""
ASKS = "asks"
"""May ask the debaters questions (``judge.interactive``)."""
USES_MODEL = "uses-model"
"""Plays with the ``judge`` role's model."""

JUDGES: Registry[JudgeFactory] = Registry(
    "judge kind", group="llmdebate.judges", builtins=("llmdebate.judging.model_judges",)
)
