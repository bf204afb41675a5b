"""``export_run``: a run directory to one trainer format, and the sum check."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmdebate.core import scoring
from llmdebate.core.schemas import Transcript
from llmdebate.errors import UserError
from llmdebate.export import formats
from llmdebate.export.format_registry import (
    AUDIT,
    FORMATS,
    ONLINE,
    WHOLE_RUN,
    FormatContext,
    files_of,
)
from llmdebate.export.rows import (
    TRAINED_SOURCES,
    Row,
    RunInfo,
    config_digest,
    players,
    seat_players,
    transcript_rows,
)
from llmdebate.export.writers import kind_for, write_rows
from llmdebate.prompts import Prompts
from llmdebate.protocols.registry import adopt_recorded, get_protocol
from llmdebate.records.paths import resolve_path
from llmdebate.records.rundir import CONFIG_FILE, load_transcripts, read_run_config


def injectable(r: Row) -> bool:
    """A decision that a reply can stand for, by the row's protocol
    (:meth:`llmdebate.protocols.interface.Protocol.injectable`)."""
    return get_protocol(r.protocol).injectable(r)


@dataclass
class Export:
    """What an export wrote."""

    path: Path
    kind: str
    rows: int
    debates: int


def run_info(run_dir: Path, config: dict[str, Any], test_fraction: float) -> RunInfo:
    prompts_dir = config.get("prompts_dir")
    return RunInfo(
        run_id=run_dir.name,
        config_digest=config_digest(config),
        judge_kind=str((config.get("judge") or {}).get("kind", "llm")),
        test_fraction=test_fraction,
        prompts=Prompts(resolve_path(prompts_dir) if prompts_dir else None),
    )


def decision_rows(
    transcripts: list[Transcript],
    info: RunInfo,
    *,
    role: str | None = None,
    include_pending: bool = False,
) -> list[tuple[Row, Transcript]]:
    """Every decision row of the given player (all players: None), with its transcript. The
    players are the built-in ones and those the protocols of ``transcripts`` add (a config's
    topology the transcripts record is registered first)."""
    adopt_recorded(transcripts)
    if role is not None and role not in players():
        player = seat_players().get(role)
        if player is not None:
            raise UserError(f"--role {role!r}: a seat, exported as the player {player!r} "
                            f"(--role {player}); choose from {', '.join(players())}")
        raise UserError(f"--role {role!r}: choose from {', '.join(players())}")
    out = []
    for t in transcripts:
        if t.status == "awaiting_verdict" and not include_pending:
            continue
        try:
            rows = transcript_rows(t, info)
        except ValueError as exc:
            raise UserError(f"{exc}: check the run with llmdebate score") from None
        out += [(r, t) for r in rows if role is None or r.role == role]
    return out


def build(
    pairs: list[tuple[Row, Transcript]],
    fmt: str,
    config: dict[str, Any],
    *,
    text: bool = False,
    baseline: str | float = "advantage",
    include_audit: bool = False,
) -> list[dict[str, Any]]:
    """The records of format ``fmt``: of the decisions a model made (rows of
    :data:`TRAINED_SOURCES`) unless the format is an ``audit`` one or ``include_audit``."""
    rows = [r for r, _ in pairs]
    by_id = {id(r): t for r, t in pairs}
    states = formats.States(config)

    def state(r: Row) -> str:
        return states(r, by_id[id(r)])

    entry = FORMATS.entry(fmt, where="--format")
    if entry.can(WHOLE_RUN):  # not rows: `llmdebate export RUN --format x --out FILE`
        raise UserError(f"--format {fmt} writes a whole run, not rows (llmdebate export RUN "
                        f"--format {fmt} --out FILE)")
    if not (include_audit or entry.can(AUDIT)):
        rows = [r for r in rows if r.source in TRAINED_SOURCES]
    if entry.can(ONLINE):  # rows whose decision a reply can be injected into (llmdebate.rl)
        rows = [r for r in rows if injectable(r)]
    return entry.value(rows, FormatContext(text=text, baseline=baseline, state=state))


def export_run(
    run_dir: str | Path,
    out: str | Path,
    *,
    role: str,
    fmt: str = "trl-prompt-completion",
    kind: str | None = None,
    include_pending: bool = False,
    text: bool = False,
    baseline: str | float = "advantage",
    test_fraction: float = 0.1,
    split: str | None = None,
    include_audit: bool = False,
) -> Export:
    """Write the ``role`` player's decisions of ``run_dir`` in ``fmt`` to ``out``."""
    run_dir, out = Path(run_dir), Path(out)
    if not (run_dir / CONFIG_FILE).exists():
        raise UserError(f"{run_dir}: not a run directory (no {CONFIG_FILE})")
    if not 0.0 <= test_fraction <= 1.0:
        raise UserError(f"--test-fraction must be in [0, 1] (got {test_fraction})")
    container = kind_for(out, kind, files_of(fmt))
    config = read_run_config(run_dir)
    transcripts = load_transcripts(run_dir)
    info = run_info(run_dir, config, test_fraction)
    pairs = decision_rows(transcripts, info, role=role, include_pending=include_pending)
    if split is not None:
        pairs = [(r, t) for r, t in pairs if r.split == split]
    records = build(pairs, fmt, config, text=text, baseline=baseline,
                    include_audit=include_audit)
    if not records:
        raise UserError(no_rows(run_dir, fmt, role, len(transcripts), bool(pairs)))
    write_rows(records, out, container)
    return Export(out, container, len(records), len({r.debate_id for r, _ in pairs}))


NO_ROWS_HINTS = {
    "trl-preference": "a preference pairs sibling samples (one decision in one state, "
    "different replies), and this run made one sample of each decision: run with "
    "--prover-best-of N (N >= 2; prover.best_of in a config) for best-of-n candidates to pair",
}
"""What produces the rows of a format that a run may lack, by format name."""


def no_rows(run_dir: Path, fmt: str, role: str, debates: int, decisions: bool) -> str:
    """The one line of an export that has no row: why, and what would make the rows."""
    head = f"{run_dir}: no {fmt} rows for the {role} ({debates} debates)"
    if fmt in NO_ROWS_HINTS and decisions:
        return f"{head}: {NO_ROWS_HINTS[fmt]}"
    return f"{head}: no decision of the {role} was made by a model"


def carrier_sums(rows: list[Row]) -> dict[tuple[str, str], tuple[float, float]]:
    """(debate, speaker) → the sums of ``reward`` and ``expected_reward`` over the carrier rows
    (``credited``), added in protocol order by the scoring module's own sum."""
    acc: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for r in rows:
        if r.credited:
            acc[(r.debate_id, r.speaker)].append(r)
    out = {}
    for key, rs in acc.items():
        rs = sorted(rs, key=_term_order)
        out[key] = (
            float(scoring.total(r.reward or 0.0 for r in rs)),
            float(scoring.total(r.expected_reward or 0.0 for r in rs)),
        )
    return out


def _term_order(r: Row) -> float:
    """Protocol order: r_init, then r_d, …, r_0."""
    if r.term == "r_init" or not r.term.startswith("r_"):
        return float("-inf")
    return -float(r.term[2:])
