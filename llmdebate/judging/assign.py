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

    Items in dataset order; within item number i the protocols start at protocol i (mod P)
    and the variants of a protocol at variant i (mod V), so that when judges are too few for
    every debate of an item, each protocol and each variant get their share across items.
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
                (protocols.index(t.protocol) - i) % len(protocols),
                (vs.index(t.id) - i) % len(vs),
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
        new: dict[str, list[tuple[str, Transcript]]] = defaultdict(list)
        for t in debates:
            item = item_id(t)
            need = per_item - len(per_debate[t.id])
            free = [j for j in active if item not in items[j] and j not in per_debate[t.id]]
            if need > 0 and len(free) < need:
                res.short.append(t.id)  # a debate gets all its judges or waits for more
                continue
            for _ in range(max(need, 0)):
                free = [j for j in free if j not in per_debate[t.id]]
                j = min(free, key=lambda x: (load[x], proto_load[x, t.protocol], rank[x]))
                load[j] += 1
                proto_load[j, t.protocol] += 1
                items[j].add(item)
                per_debate[t.id].add(j)
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
