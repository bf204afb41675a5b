"""The export format registry: name → a function from decision rows to a trainer's records.

A format is a function ``(rows, context) -> list[dict]`` registered in :data:`FORMATS`
(``@FORMATS.register(name, capabilities=...)``); the built-in ones are in
:mod:`llmdebate.export.formats`, a third-party package adds its own through the entry-point
group ``llmdebate.formats``::

    [project.entry-points."llmdebate.formats"]
    my-format = "my_package.my_format"   # a module whose import registers it

Capability ``online``: the format feeds online RL, so it gets only the rows a policy's reply
can be injected into (:func:`llmdebate.export.api.injectable`) and each row's ``state``
(:attr:`FormatContext.state`: the debate, its config and the decision, as JSON) from which
:mod:`llmdebate.rl` replays the rest of the debate. ``llmdebate export --format`` takes its
choices from :meth:`FORMATS.names() <llmdebate.registry.Registry.names>`.

File types: a row format's records are written as JSONL, CSV, parquet or a ``datasets``
directory (:data:`llmdebate.export.writers.KINDS`, chosen by ``--out``'s suffix or ``--as``);
a format whose records fit fewer declares them (:func:`declare_files`), and ``llmdebate
export`` refuses the others in one line. A whole-run format writes its own file; the row
options (``--role``, ``--split``, ``--include-pending``, ...) are refused for it.

Capability ``audit``: the format gets every row, also those of decisions no model made
(``source`` rejected, rule, assigned); the others get only :data:`~.rows.TRAINED_SOURCES`
rows unless ``llmdebate export --include-audit``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmdebate.export.rows import Row
from llmdebate.export.writers import KINDS
from llmdebate.registry import Registry

ONLINE = "online"
"""Capability: rows a reply can be injected into, each with its replay ``state``."""
AUDIT = "audit"
"""Capability: every row, also those of decisions no model made (rejected replies, rule-made
directions, assigned answers), which the other formats leave out."""
WHOLE_RUN = "whole-run"
"""Capability: not a layout of rows but a :data:`RunWriter` that writes the whole run
directory as one file (``inspect-log``: an Inspect eval log); ``--role`` and the row options
do not apply."""


@dataclass(frozen=True)
class FormatContext:
    """What a format may use besides the rows: ``text`` (plain-text prompts rather than
    messages), the ``baseline`` of ``trl-unpaired`` and ``state`` (a row's replay state)."""

    text: bool
    baseline: str | float
    state: Callable[[Row], str]


Format = Callable[[list[Row], FormatContext], list[dict[str, Any]]]
RunWriter = Callable[[Path, Path], str]
"""``(run_dir, out) -> what it wrote``: the value of a :data:`WHOLE_RUN` format's entry."""

FORMATS: Registry[Format] = Registry(
    "export format",
    group="llmdebate.formats",
    builtins=("llmdebate.export.formats", "llmdebate.inspect_ext.export_format",
              "llmdebate.export.answers"),
)

_FILES: dict[str, tuple[str, ...]] = {}


def declare_files(name: str, *kinds: str) -> None:
    """Declare that row format ``name`` writes only the containers ``kinds`` (of
    :data:`~llmdebate.export.writers.KINDS`)."""
    unknown = [k for k in kinds if k not in KINDS]
    if not kinds or unknown:
        raise ValueError(f"format {name}: file types are some of {', '.join(KINDS)}")
    _FILES[name] = tuple(kinds)


def files_of(name: str) -> tuple[str, ...]:
    """The containers row format ``name`` writes (every one unless it declared fewer)."""
    return _FILES.get(name, KINDS)
