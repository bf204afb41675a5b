"""Who judges which waiting debate: K judges per debate, balanced, incremental.

Rules (each checked by the tests):

* every debate awaiting a verdict gets ``per_item`` judges, where enough judges are free;
* no judge sees one item twice, whatever the protocol (a database constraint too);
* workloads stay even: each slot goes to the judge with the fewest assignments, then the
  fewest of this protocol, then a seeded order;
* each judge's queue runs through the protocols in a Latin square: judge number j starts at
  protocol j (mod the number of protocols) and cycles, so the protocols' positions balance;
* a re-run keeps every existing assignment and token, adds new judges and new debates.

Per-judge tokens are drawn from :mod:`secrets` and stored hashed; they are returned once, to
be handed out as links. Every other draw (the tie-break order, each judge's answer order)
comes from the study seed, recorded in the database.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from llmdebate.errors import ConfigError, UserError
from llmdebate.experiment.loading import _key_marks, read_yaml
from llmdebate.judging.db import Assignment, Judge, get_setting, set_setting, token_hash
from llmdebate.report.metrics import PROTOCOL_ORDER, item_id
from llmdebate.rundir import load_transcripts
from llmdebate.schemas import Transcript

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
        variants = {p: sorted(t.id for t in group if t.protocol == p) for p in protocols}

        def key(t: Transcript, i: int = i, variants: dict[str, list[str]] = variants) -> Any:
            vs = variants[t.protocol]
            return (
                (vs.index(t.id) - i) % len(vs),
                (protocols.index(t.protocol) - i) % len(protocols),
            )

        out += sorted(group, key=key)
    return out


def assign(
    sessions: sessionmaker[Session], run_dir: Path, judges: JudgesFile, per_item: int
) -> AssignResult:
    """Create judges, tokens and assignments; keep every existing one. See the module doc."""
    if per_item < 1:
        raise UserError(f"--per-item must be at least 1 (got {per_item})")
    debates = waiting_debates(run_dir)
    res = AssignResult(waiting=len(debates))
    with sessions.begin() as s:
        seed = get_setting(s, "seed")
        if seed is None:
            for key, value in judges.study.model_dump().items():
                set_setting(s, key, value)
            seed = judges.study.seed
        context = get_setting(s, "context", "none")
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
        active = [j.id for j in judges.judges]
        existing = list(s.scalars(select(Assignment)))
        load: dict[str, int] = defaultdict(int)
        proto_load: dict[tuple[str, str], int] = defaultdict(int)
        items: dict[str, set[str]] = defaultdict(set)
        per_debate: dict[str, set[str]] = defaultdict(set)
        last_pos: dict[str, int] = defaultdict(lambda: -1)
        for a in existing:
            load[a.judge_id] += 1
            proto_load[a.judge_id, a.protocol] += 1
            items[a.judge_id].add(a.item_id)
            per_debate[a.debate_id].add(a.judge_id)
            last_pos[a.judge_id] = max(last_pos[a.judge_id], a.position)
        rng = np.random.default_rng(np.random.SeedSequence([int(seed), 1]))
        rank = {j: int(r) for j, r in zip(active, rng.permutation(len(active)), strict=True)}
        placed: list[list[Any]] = []  # [item, debate, judge] of every new assignment
        by_item: dict[str, list[Transcript]] = defaultdict(list)
        for t in debates:
            by_item[item_id(t)].append(t)
        for item, group in by_item.items():
            # the debates of this item that can get all their judges, in the rotated order
            free = [j for j in active if item not in items[j]]
            slots: list[Transcript] = []
            for t in group:
                need = per_item - len(per_debate[t.id])
                if need <= 0:
                    continue
                if len(free) - len(slots) < need:
                    res.short.append(t.id)  # a debate gets all its judges or waits for more
                    continue
                slots += [t] * need
            # fill the slots pair by pair: the judge with the least work, then the least of
            # that protocol, then the seeded order
            while slots:
                t, j = min(
                    ((t, j) for t in slots for j in free if j not in per_debate[t.id]),
                    key=lambda tj: (
                        load[tj[1]],
                        proto_load[tj[1], tj[0].protocol],
                        rank[tj[1]],
                        tj[0].id,
                    ),
                )
                slots.remove(t)
                free.remove(j)
                load[j] += 1
                proto_load[j, t.protocol] += 1
                items[j].add(item)
                per_debate[t.id].add(j)
                placed.append([item, t, j])
        _balance(placed, proto_load, per_debate)
        new: dict[str, list[tuple[str, Transcript]]] = defaultdict(list)
        for item, t, j in placed:
            new[j].append((item, t))
        protocols: list[str] = sorted({str(t.protocol) for t in debates}, key=_protocol_rank)
        for j in active:
            queue = _latin_order(new[j], protocols, active.index(j))
            for n, (item, t) in enumerate(queue, start=last_pos[j] + 1):
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
    return res


def _balance(
    placed: list[list[Any]],
    proto_load: dict[tuple[str, str], int],
    per_debate: dict[str, set[str]],
    passes: int = 50,
) -> None:
    """Swap judges between two new assignments of one item while that evens out each judge's
    protocols (the sum of squared per-protocol counts falls); workloads do not change."""
    by_item: dict[str, list[list[Any]]] = defaultdict(list)
    for entry in placed:
        by_item[entry[0]].append(entry)
    for _ in range(passes):
        changed = False
        for group in by_item.values():
            for x in group:
                for y in group:
                    a, b = x[2], y[2]
                    p, q = x[1].protocol, y[1].protocol
                    if a == b or p == q or a in per_debate[y[1].id] or b in per_debate[x[1].id]:
                        continue
                    before = (
                        proto_load[a, p] ** 2
                        + proto_load[a, q] ** 2
                        + proto_load[b, p] ** 2
                        + proto_load[b, q] ** 2
                    )
                    after = (
                        (proto_load[a, p] - 1) ** 2
                        + (proto_load[a, q] + 1) ** 2
                        + (proto_load[b, p] + 1) ** 2
                        + (proto_load[b, q] - 1) ** 2
                    )
                    if after >= before:
                        continue
                    proto_load[a, p] -= 1
                    proto_load[a, q] += 1
                    proto_load[b, q] -= 1
                    proto_load[b, p] += 1
                    per_debate[x[1].id].discard(a)
                    per_debate[y[1].id].discard(b)
                    per_debate[x[1].id].add(b)
                    per_debate[y[1].id].add(a)
                    x[2], y[2] = b, a
                    changed = True
        if not changed:
            return


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
