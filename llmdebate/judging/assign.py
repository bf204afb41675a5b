"""Who judges which waiting debate: K judges per debate, balanced, incremental.

Rules (each checked by the tests):

* every debate awaiting a verdict gets ``per_item`` judges, where enough judges are free;
* no judge sees one item twice, whatever the protocol (a database constraint too), nor one
  question text twice (normalised: one question under two ids counts once);
* a judge reads a story in full (direct expert, passage shown) or judges it blind, never both,
  and sees at most ``per_story`` questions of one story when the study sets it
  (:mod:`llmdebate.judging.blinding`);
* workloads stay even: each slot goes to the judge with the fewest assignments, then the
  fewest of this protocol, then a seeded order;
* each judge's queue runs through the protocols in a Latin square: judge number j starts at
  protocol j (mod the number of protocols) and cycles, so the protocols' positions balance;
* a re-run keeps every existing assignment and token, adds new judges and new debates;
* nothing is committed before the new links are handed out: ``deliver`` (the links written
  to a file, or shown) runs inside the transaction, and if it fails nothing is assigned.
  :func:`reissue` gives judges whose links were lost new ones (the old tokens stop working);
  both are recorded in the study's log (:class:`~llmdebate.judging.db.LogEntry`).

Every run writes the study's per-judge story log (:data:`~llmdebate.judging.blinding.STORY_LOG`)
and returns its design (:attr:`AssignResult.design`), which ``assign`` prints.

Per-judge tokens are drawn from :mod:`secrets` and stored hashed; they are returned once, to
be handed out as links. Every other draw (the tie-break order, each judge's answer order)
comes from the study seed, recorded in the database.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import secrets
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from llmdebate.core.schemas import Transcript
from llmdebate.errors import ConfigError, UserError
from llmdebate.experiment.loading import _key_marks, read_yaml
from llmdebate.judging.blinding import (
    STORY_LOG,
    Exposure,
    reads_in_full,
    story_key,
    story_log,
    write_story_log,
)
from llmdebate.judging.db import (
    Assignment,
    Judge,
    get_setting,
    log_event,
    revoke_judge_sessions,
    set_setting,
    token_hash,
)
from llmdebate.records.rundir import load_transcripts
from llmdebate.report.metrics import PROTOCOL_ORDER, item_id, row_of

LEAD_ID = "lead"
JUDGE_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


class JudgeEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not JUDGE_ID.match(v) or v == LEAD_ID:
            raise ValueError(
                f"a judge id is 1-64 letters, digits, '.', '_' or '-', not {LEAD_ID!r} (got {v!r})"
            )
        return v


class StudySettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    context: Literal["none", "path", "full"] = "none"
    """How much of the recursion path a leaf judge sees (recorded with every verdict)."""
    require_explanation: bool = True
    """Speech protocols: the judge must explain the answer."""
    seed: int = Field(default=0, ge=0)
    """Seed of the tie-break order and of each judge's answer order."""
    reveal: Literal["all", "stepped"] = "all"
    """Speech protocols: all turns at once, or one at a time (the judge asks for the next)."""
    turn_cost: float = Field(default=0.0, ge=0.0, le=1.0)
    """Stepped reveal: the stated cost of each turn after the first (shown to the judge)."""
    show_protocol: bool = False
    """Show the judge the protocol's name (hidden by default)."""
    per_story: int | None = Field(default=None, ge=1)
    """The most questions of one story a judge sees (None: no bound; ``--per-story``)."""


class JudgesFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    study: StudySettings = Field(default_factory=StudySettings)
    judges: list[JudgeEntry] = Field(min_length=1)

    @field_validator("judges", mode="before")
    @classmethod
    def _plain_ids(cls, v: Any) -> Any:
        if isinstance(v, list):
            return [{"id": str(x)} if isinstance(x, str | int) else x for x in v]
        return v

    @field_validator("judges")
    @classmethod
    def _unique(cls, v: list[JudgeEntry]) -> list[JudgeEntry]:
        ids = [j.id for j in v]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"judge id {dup[0]!r} is listed twice")
        return v


def read_judges(path: Path) -> JudgesFile:
    """The judges file; a bad field is one line naming file:line:column and the field."""
    data = read_yaml(path)
    try:
        return JudgesFile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = [str(x) for x in err["loc"]]
        marks = _key_marks(path)
        where = str(path)
        for n in range(len(loc), 0, -1):
            if ".".join(loc[:n]) in marks:
                line, col = marks[".".join(loc[:n])]
                where = f"{path}:{line}:{col}"
                break
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        raise ConfigError(f"{where}: {'.'.join(loc) or 'judges'}: {msg} (--judges)") from None


def order_seed(seed: int, judge_id: str, debate_id: str) -> int:
    """The recorded seed of one judge's answer order on one debate."""
    h = int.from_bytes(hashlib.sha256(f"{judge_id}\0{debate_id}".encode()).digest()[:8], "big")
    ss = np.random.SeedSequence([seed, h])
    return int(ss.generate_state(1, dtype=np.uint32)[0] >> 1)


def new_token() -> str:
    return secrets.token_urlsafe(24)


@dataclass
class AssignResult:
    tokens: dict[str, str] = field(default_factory=dict)  # new judges (and lead) only
    added: int = 0
    total: int = 0
    waiting: int = 0
    short: list[str] = field(default_factory=list)  # debates that got fewer than K judges
    design: list[str] = field(default_factory=list)  # what assign prints of the study design
    unstaffed: list[str] = field(default_factory=list)  # a line per view no judge can take


def _protocol_rank(p: str) -> int:
    return PROTOCOL_ORDER.index(p) if p in PROTOCOL_ORDER else len(PROTOCOL_ORDER)


def waiting_debates(run_dir: Path) -> list[Transcript]:
    """The debates of a run that wait for a verdict, in the order slots are filled.

    Items in dataset order; within item number i one debate of every protocol comes before a
    second one of any, the protocols start at protocol i (mod P) and the variants of a protocol
    at variant i (mod V): when judges are too few for every debate of an item, each protocol
    and each variant get their share across items.
    """
    ts = [t for t in load_transcripts(run_dir) if t.status == "awaiting_verdict"]
    protocols: list[str] = sorted({str(t.protocol) for t in ts}, key=_protocol_rank)
    by_item: dict[int, list[Transcript]] = defaultdict(list)
    for t in ts:
        by_item[int(t.meta.get("item_index", 0))].append(t)
    out: list[Transcript] = []
    for i in sorted(by_item):
        group = by_item[i]
        ids: dict[str, list[str]] = defaultdict(list)
        for t in group:
            ids[t.protocol].append(t.id)
        variants = {p: sorted(v) for p, v in ids.items()}

        def key(t: Transcript, i: int = i, variants: dict[str, list[str]] = variants) -> Any:
            vs = variants[t.protocol]
            return (
                (vs.index(t.id) - i) % len(vs),
                (protocols.index(t.protocol) - i) % len(protocols),
            )

        out += sorted(group, key=key)
    return out


def side(t: Transcript) -> str:
    """The debate's side of its item within its protocol (``honest`` / ``dishonest``,
    ``order-0`` / ``order-1``): which answer the assigned speaker defends, or which is shown
    first. Each judge's sides are balanced as their protocols are."""
    return str(t.meta.get("variant", ""))


@dataclass
class Loads:
    """Each judge's work so far: assignments, per protocol, per (protocol, side), the items
    they have, the judges of each debate and each judge's last queue position."""

    total: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    protocol: Counter[tuple[str, str]] = field(default_factory=Counter)
    side: Counter[tuple[str, tuple[str, str]]] = field(default_factory=Counter)
    items: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    judges: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    last_pos: dict[str, int] = field(default_factory=lambda: defaultdict(lambda: -1))
    seen: dict[str, Exposure] = field(default_factory=lambda: defaultdict(Exposure))
    per_story: int | None = None

    def add(
        self, judge: str, item: str, debate: str, protocol: str, side: str | None,
        t: Transcript | None = None,
    ) -> None:
        self.total[judge] += 1
        self.protocol[judge, protocol] += 1
        if side is not None:
            self.side[judge, (protocol, side)] += 1
        self.items[judge].add(item)
        self.judges[debate].add(judge)
        if t is not None:
            self.seen[judge].add(t)

    def allows(self, judge: str, t: Transcript) -> bool:
        """Whether ``judge`` may be given ``t`` (see :mod:`llmdebate.judging.blinding`)."""
        return self.seen[judge].allows(t, self.per_story)


def assign(
    sessions: sessionmaker[Session],
    run_dir: Path,
    judges: JudgesFile,
    per_item: int,
    per_story: int | None = None,
    deliver: Callable[[AssignResult], None] | None = None,
) -> AssignResult:
    """Create judges, tokens and assignments; keep every existing one. See the module doc.
    ``per_story`` (else the judges file's ``study.per_story``, else the study's recorded
    value) bounds the questions of one story per judge. ``deliver(result)`` hands the new
    links out before the transaction commits: if it raises, nothing is assigned."""
    if per_item < 1:
        raise UserError(f"--per-item must be at least 1 (got {per_item})")
    every = {t.id: t for t in load_transcripts(run_dir)}
    debates = waiting_debates(run_dir)
    sides = {t.id: side(t) for t in debates}
    res = AssignResult(waiting=len(debates))
    with sessions.begin() as s:
        seed, context = _study_setup(s, judges, res)
        if per_story is not None:
            set_setting(s, "per_story", per_story)
        bound = get_setting(s, "per_story")
        active = [j.id for j in judges.judges]
        existing = list(s.scalars(select(Assignment)))
        loads = Loads(per_story=int(bound) if bound is not None else None)
        for a in existing:
            loads.add(
                a.judge_id, a.item_id, a.debate_id, a.protocol, sides.get(a.debate_id),
                every.get(a.debate_id),
            )
            loads.last_pos[a.judge_id] = max(loads.last_pos[a.judge_id], a.position)
        rng = np.random.default_rng(np.random.SeedSequence([int(seed), 1]))
        rank = {j: int(r) for j, r in zip(active, rng.permutation(len(active)), strict=True)}
        placed = _place(debates, active, rank, loads, per_item, res)
        _balance(placed, loads)
        new: dict[str, list[tuple[str, Transcript]]] = defaultdict(list)
        for item, t, j in placed:
            new[j].append((item, t))
        protocols: list[str] = sorted({str(t.protocol) for t in debates}, key=_protocol_rank)
        for j in active:
            mine = _latin_order(new[j], protocols, active.index(j))
            for n, (item, t) in enumerate(mine, start=loads.last_pos[j] + 1):
                s.add(
                    Assignment(
                        judge_id=j,
                        debate_id=t.id,
                        item_id=item,
                        protocol=t.protocol,
                        position=n,
                        order_seed=order_seed(int(seed), j, t.id),
                        context=context,
                    )
                )
                res.added += 1
        res.total = len(existing) + res.added
        s.flush()
        rows = [
            (a.judge_id, a.position, every[a.debate_id])
            for a in s.scalars(select(Assignment))
            if a.debate_id in every
        ]
        res.design = _design(debates, active, per_item, loads, rows)
        res.unstaffed = unstaffed_views(debates, active, per_item, loads)
        if res.added or res.tokens:
            log_event(s, "assign", added=res.added, links=sorted(res.tokens))
        if deliver is not None:
            deliver(res)
    write_story_log(run_dir / STORY_LOG, story_log(rows, loads.per_story))
    return res


def reissue(
    sessions: sessionmaker[Session],
    judge_ids: list[str],
    deliver: Callable[[dict[str, str]], None] | None = None,
) -> dict[str, str]:
    """New links for ``judge_ids`` (``lead`` among them, if asked), whose links were lost:
    each gets a new token, its old one stops working and its signed-in sessions end; recorded
    in the study's log. ``deliver(tokens)`` hands the links out before the transaction
    commits: if it raises, the old links stay as they were."""
    tokens: dict[str, str] = {}
    with sessions.begin() as s:
        known = sorted(s.scalars(select(Judge.id)))
        for jid in judge_ids:
            judge = s.get(Judge, jid)
            if judge is None:
                raise UserError(
                    f"--reissue-links: no judge {jid!r} in this study (judges: "
                    + (", ".join(known) or "none yet: run assign --judges first")
                    + ")"
                )
            tokens[jid] = new_token()
            judge.token_hash = token_hash(tokens[jid])
            revoke_judge_sessions(s, jid)
        log_event(s, "reissue-links", judges=list(tokens))
        s.flush()
        if deliver is not None:
            deliver(tokens)
    return tokens


def _eligible(j: str, t: Transcript, loads: Loads) -> bool:
    return item_id(t) not in loads.items[j] and loads.allows(j, t)


def _needed(waiting: list[Transcript], per_item: int, loads: Loads) -> int:
    """How many new judges would staff ``waiting`` (debates no present judge can take): each
    needs its missing judges, a new judge takes one debate of an item, and of one story at
    most ``per_story``."""
    need = {t.id: per_item - len(loads.judges[t.id]) for t in waiting}
    by_story: dict[str | None, list[Transcript]] = defaultdict(list)
    for t in waiting:
        by_story[story_key(t)].append(t)
    most = max(need.values(), default=0)
    if loads.per_story:
        for group in by_story.values():
            total = sum(need[t.id] for t in group)
            most = max(most, -(-total // loads.per_story))
    return most


def unstaffed_views(
    debates: list[Transcript], active: list[str], per_item: int, loads: Loads
) -> list[str]:
    """One line per row (a protocol and view: ``direct (expert)``) whose waiting debates no
    present judge can take — each has seen the item, or read its story the other way, or
    reached the story's bound — with how many more judges would staff it."""
    rows: dict[str, list[Transcript]] = defaultdict(list)
    for t in debates:
        rows[row_of(t)].append(t)
    out: list[str] = []
    for row, ts in sorted(rows.items()):
        waiting = [t for t in ts if len(loads.judges[t.id]) < per_item]
        if not waiting or len(waiting) < len(ts):
            continue
        if any(_eligible(j, t, loads) for t in waiting for j in active
               if j not in loads.judges[t.id]):
            continue
        more = _needed(waiting, per_item, loads)
        out.append(
            f"no judge can take {row}: its {len(waiting)} debates wait, since each of the "
            f"{len(active)} judges has judged its items or read its stories the other way "
            f"(blind or in full); {more} more judges would staff it ({per_item} per debate)"
        )
    return out


def _design(
    debates: list[Transcript],
    active: list[str],
    per_item: int,
    loads: Loads,
    rows: list[tuple[str, int, Transcript]],
) -> list[str]:
    """The study's design in a few lines: what waits, the rules, each judge's load."""
    by_protocol = Counter(t.protocol for t in debates)
    stories = {story_key(t) for t in debates} - {None}
    full = sum(1 for t in debates if reads_in_full(t))
    per_judge = Counter(j for j, _, _ in rows)
    loads_ = [per_judge[j] for j in active]
    bound = loads.per_story
    return [
        "debates awaiting a verdict: "
        + ", ".join(f"{p} {n}" for p, n in sorted(by_protocol.items(), key=lambda x: x[0]))
        + f"; {len({item_id(t) for t in debates})} items, {len(stories)} stories"
        + f" ({full} debates show their story in full)",
        f"judges: {len(active)}; {per_item} per debate; debates per judge "
        f"{min(loads_, default=0)}-{max(loads_, default=0)}",
        "each judge: an item and a question text once; a story read in full or judged blind, "
        "never both; "
        + (f"at most {bound} question(s) per story" if bound else "no bound on questions "
           "per story"),
        "protocols in a Latin square per judge; sides balanced; seeded tie-break",
    ]


def _study_setup(s: Session, judges: JudgesFile, res: AssignResult) -> tuple[int, str]:
    """The study's seed and context (its settings recorded on the first run); the lead and
    every new judge created, their tokens in ``res``."""
    seed = get_setting(s, "seed")
    if seed is None:
        for key, value in judges.study.model_dump().items():
            set_setting(s, key, value)
        seed = judges.study.seed
    context = str(get_setting(s, "context", "none"))
    if s.get(Judge, LEAD_ID) is None:
        tok = new_token()
        s.add(Judge(id=LEAD_ID, token_hash=token_hash(tok), is_lead=True))
        res.tokens[LEAD_ID] = tok
    for entry in judges.judges:
        if s.get(Judge, entry.id) is None:
            tok = new_token()
            s.add(Judge(id=entry.id, token_hash=token_hash(tok)))
            res.tokens[entry.id] = tok
    s.flush()
    return int(seed), context


def _place(
    debates: list[Transcript],
    active: list[str],
    rank: dict[str, int],
    loads: Loads,
    per_item: int,
    res: AssignResult,
) -> list[list[Any]]:
    """Fill every debate's free judge slots; returns [item, debate, judge] of each new one."""
    placed: list[list[Any]] = []
    by_item: dict[str, list[Transcript]] = defaultdict(list)
    for t in debates:
        by_item[item_id(t)].append(t)
    for item, group in by_item.items():
        # the debates of this item that can get all their judges, in the rotated order
        free = [
            j for j in active
            if item not in loads.items[j] and any(loads.allows(j, t) for t in group)
        ]
        slots: list[Transcript] = []
        for t in group:
            need = per_item - len(loads.judges[t.id])
            if need <= 0:
                continue
            if len(free) - len(slots) < need:
                res.short.append(t.id)  # a debate gets all its judges or waits for more
                continue
            slots += [t] * need
        # fill the slots pair by pair: the judge with the least work, then the least of that
        # protocol, then the least of that side, then the seeded order
        while slots:
            pairs = [
                (t, j) for t in slots for j in free
                if j not in loads.judges[t.id] and loads.allows(j, t)
            ]
            if not pairs:  # the judges left have read the story the other way
                res.short += sorted({t.id for t in slots})
                break
            t, j = min(
                pairs,
                key=lambda tj: (
                    loads.total[tj[1]],
                    loads.protocol[tj[1], tj[0].protocol],
                    loads.side[tj[1], (tj[0].protocol, side(tj[0]))],
                    rank[tj[1]],
                    tj[0].id,
                ),
            )
            slots.remove(t)
            free.remove(j)
            loads.add(j, item, t.id, t.protocol, side(t), t)
            placed.append([item, t, j])
    return placed


def _gain(counts: Counter[tuple[str, Any]], a: str, b: str, x: Any, y: Any) -> int:
    """How much the sum of squared counts falls when judge ``a`` trades an ``x`` for a ``y``
    and judge ``b`` a ``y`` for an ``x``."""
    if x == y:
        return 0
    before = counts[a, x] ** 2 + counts[a, y] ** 2 + counts[b, x] ** 2 + counts[b, y] ** 2
    after = (
        (counts[a, x] - 1) ** 2
        + (counts[a, y] + 1) ** 2
        + (counts[b, x] + 1) ** 2
        + (counts[b, y] - 1) ** 2
    )
    return before - after


def _trade(counts: Counter[tuple[str, Any]], a: str, b: str, x: Any, y: Any) -> None:
    counts[a, x] -= 1
    counts[a, y] += 1
    counts[b, y] -= 1
    counts[b, x] += 1


def _balance(placed: list[list[Any]], loads: Loads, passes: int = 50) -> None:
    """Swap judges between two new assignments of one item while that evens out each judge's
    protocols, or keeps them and evens out each judge's sides (honest / dishonest, gold shown
    first / second); workloads do not change."""
    by_item: dict[str, list[list[Any]]] = defaultdict(list)
    for entry in placed:
        by_item[entry[0]].append(entry)
    for _ in range(passes):
        changed = False
        for group in by_item.values():
            for x, y in itertools.permutations(group, 2):
                changed |= _try_swap(x, y, loads)
        if not changed:
            return


def _try_swap(x: list[Any], y: list[Any], loads: Loads) -> bool:
    a, b = x[2], y[2]
    tx, ty = x[1], y[1]
    if a == b or a in loads.judges[ty.id] or b in loads.judges[tx.id]:
        return False
    if reads_in_full(tx) != reads_in_full(ty):  # a judge keeps the way they read the story
        return False
    p, q = tx.protocol, ty.protocol
    sx, sy = (p, side(tx)), (q, side(ty))
    gain = (_gain(loads.protocol, a, b, p, q), _gain(loads.side, a, b, sx, sy))
    if gain <= (0, 0):
        return False
    _trade(loads.protocol, a, b, p, q)
    _trade(loads.side, a, b, sx, sy)
    loads.judges[tx.id].discard(a)
    loads.judges[ty.id].discard(b)
    loads.judges[tx.id].add(b)
    loads.judges[ty.id].add(a)
    x[2], y[2] = b, a
    return True


def _latin_order(
    mine: list[tuple[str, Transcript]], protocols: list[str], offset: int
) -> list[tuple[str, Transcript]]:
    """Interleave a judge's debates by protocol, starting at protocol ``offset`` (mod P)."""
    by: dict[str, list[tuple[str, Transcript]]] = defaultdict(list)
    for entry in mine:
        by[entry[1].protocol].append(entry)
    if not protocols:
        return []
    cycle = [protocols[(offset + i) % len(protocols)] for i in range(len(protocols))]
    out: list[tuple[str, Transcript]] = []
    while any(by.values()):
        for p in cycle:
            if by[p]:
                out.append(by[p].pop(0))
    return out
