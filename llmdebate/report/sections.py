"""The report's optional sections: a registry of parts a feature adds to a run's report.

A section reads the run's transcripts (and the verdicts people gave, ``judged.jsonl``) and
returns a :class:`Part` — its data under ``comparison.json[key]``, Markdown, HTML and figures —
or None when the run has nothing for it. Built in: the human judges
(:mod:`llmdebate.judging.report_section`), the judge who asks
(:mod:`llmdebate.judging.asking_report`), the debater tournament
(:mod:`llmdebate.tournament.report_section`) and the labels of a labelling run
(:mod:`llmdebate.report.labels`). A package adds one through the entry-point group
``llmdebate.report_sections`` (docs/extending.md)::

    @SECTIONS.register("my-section")
    def my_section(run: RunView) -> Part | None: ...

Sections appear in registration order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from llmdebate.core.schemas import Transcript
from llmdebate.registry import Registry


@dataclass(frozen=True)
class RunView:
    """What a section reads: the run's debates, the verdicts people gave, the report's seeds."""

    transcripts: Sequence[Transcript]
    judged: Sequence[Transcript] = ()
    seed: int = 0
    n_boot: int = 2000
    n_bins: int = 10


@dataclass
class Part:
    """One section: its data (``comparison.json[key]``), Markdown, HTML and figures."""

    key: str
    data: Any
    markdown: str
    html: str
    pngs: dict[str, bytes] = field(default_factory=dict)


Section = Callable[[RunView], "Part | None"]

SECTIONS: Registry[Section] = Registry(
    "report section",
    group="llmdebate.report_sections",
    builtins=(
        "llmdebate.judging.report_section",
        "llmdebate.judging.asking_report",
        "llmdebate.tournament.report_section",
        "llmdebate.report.labels",
    ),
)


def parts(run: RunView) -> list[Part]:
    """Every registered section that has something to say about ``run``, in order."""
    out: list[Part] = []
    for entry in SECTIONS.entries():
        part = entry.value(run)
        if part is not None:
            out.append(part)
    return out
