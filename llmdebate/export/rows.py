"""One row per decision a trainable player made, from a transcript's recorded model calls.

A row holds the messages the model saw (``prompt``, conversational), what it produced
(``completion``), the reward the decision is credited with (:mod:`.credit`), and where it
came from. Decisions a rule made without a model call get a row too, so that every reward
term has its carrier: the prover's direction by eq. 13 (``source: rule``; the prompt is the
direction prompt a model would have seen, the completion the word it would have replied)
and an assigned answer (``source: assigned``). A reply refused and asked again (or a failed
best-of-n candidate) gets a row with no reward (``source: rejected``). Only the rows of
:data:`TRAINED_SOURCES` are decisions a model made and played (or wrote as a candidate): the
trainers' formats take those alone, the ``audit`` format every row.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, fields
from typing import Any

from llmdebate.core import scoring
from llmdebate.core.schemas import ModelCallRecord, Transcript
from llmdebate.export.credit import (
    PLAYER_OF_ROLE,
    Credit,
    judged,
    naive_payoff,
    pe_call_credits,
    pe_terms,
    speech_round,
    term_credit,
)
from llmdebate.prompts import Prompts
from llmdebate.protocols.families import RecursiveProtocol
from llmdebate.protocols.registry import PROTOCOLS, protocol_of

PLAYERS = ("prover", "estimator", "judge", "debater")
"""The players of the built-in roles (:data:`~.credit.PLAYER_OF_ROLE`); a protocol adds its
own (:attr:`llmdebate.protocols.interface.Protocol.roles`), see :func:`players`."""


def players() -> tuple[str, ...]:
    """Every player ``llmdebate export --role`` takes: the built-in ones, then those the
    registered protocols declare."""
    declared = (p for n in PROTOCOLS.names() for p in PROTOCOLS.get(n).adds.roles.values())
    return tuple(dict.fromkeys((*PLAYERS, *declared)))


def seat_players() -> dict[str, str]:
    """{seat or call role: the player it is exported as}, of the built-in roles and those the
    registered protocols declare (e.g. ``consultant`` and ``debater A``: ``debater``)."""
    declared = {r: p for n in PROTOCOLS.names() for r, p in PROTOCOLS.get(n).adds.roles.items()}
    return {**PLAYER_OF_ROLE, **declared}
TRAINED_SOURCES = ("model", "candidate")
"""Row sources that are decisions a model made: ``model`` (played) and ``candidate`` (a
best-of-n candidate); not ``rule``, ``assigned`` (no model chose them) or ``rejected``."""
DIRECTION_WORD = {1: "higher", -1: "lower", 0: "right"}


@dataclass
class RunInfo:
    """What every row of a run shares: its id, config digest, judge kind and test split."""

    run_id: str = ""
    config_digest: str = ""
    judge_kind: str = ""
    test_fraction: float = 0.1
    prompts: Prompts = field(default_factory=Prompts)


def config_digest(config: dict[str, Any]) -> str:
    """The first 16 hex digits of the SHA-256 of a run's config (servers left out)."""
    plain = {k: v for k, v in config.items() if k != "servers"}
    blob = json.dumps(plain, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def split_of(item_id: str, test_fraction: float) -> str:
    """``test`` or ``train`` by a hash of the item id: every debate of an item in one split."""
    h = int.from_bytes(hashlib.sha256(f"split:{item_id}".encode()).digest()[:8], "big")
    return "test" if h / 2**64 < test_fraction else "train"


def judge_kind_of(setting: str, t: Transcript) -> str:
    """human, llm or oracle: who ruled (the setting, refined by the leaf verdict's judge)."""
    if setting == "deferred":
        return "human"
    leaf = t.rounds[-1].verdict if t.rounds else None
    if leaf is not None and leaf.judge:
        return "oracle" if leaf.judge.startswith("oracle") else (
            "llm" if leaf.judge.startswith("llm") else "human"
        )
    return "oracle" if setting == "oracle" else "llm"


@dataclass
class Row:
    prompt: list[dict[str, str]]
    completion: list[dict[str, str]]
    reward: float | None
    expected_reward: float | None
    return_to_go: float | None
    expected_return_to_go: float | None
    credited: bool
    term: str
    role: str
    speaker: str
    act: str
    call_act: str
    source: str
    protocol: str
    round_k: int | None
    index: int | None
    debate_id: str
    item_id: str
    model: str
    seed: int
    config_digest: str
    judge_kind: str
    gold: str | None
    claim_truth: int | None
    split: str
    run_id: str
    call: int
    status: str
    candidate_score: float | None = None
    """A best-of-n candidate's score, the one it was chosen by (``notes.best_of``), for the
    played candidate too; None for other rows. ``trl-preference`` ranks candidates by it."""
    reward_unit: float | None = None
    """The debate's one reward scale (:func:`llmdebate.core.scoring.reward_scale`, the same for
    every row of a debate): expected_return_to_go / reward_unit is the reward the online
    reward functions return for the recorded reply with ``relative=False``, in [-1, 1]. None
    for a row with no reward term."""
    decision_unit: float | None = None
    """The unit of the decision's relative reward (prover-estimator debate: r^level of the
    decision's first term, :func:`llmdebate.core.scoring.decision_unit`; other protocols: the
    reward scale): the online reward functions return (return to go - the recorded reply's)
    / decision_unit, 0 for the recorded reply. None for a row with no reward term."""

    def as_dict(self) -> dict[str, Any]:
        """The row's columns (a shallow dict: the messages are shared, not copied)."""
        return {name: getattr(self, name) for name in ROW_FIELDS}


ROW_FIELDS = tuple(f.name for f in fields(Row))


def _messages(call: ModelCallRecord) -> list[dict[str, str]]:
    return [{"role": str(m["role"]), "content": str(m["content"])} for m in call.messages]


def _answer(text: str) -> list[dict[str, str]]:
    return [{"role": "assistant", "content": text}]


class _Builder:
    def __init__(self, t: Transcript, info: RunInfo) -> None:
        self.t, self.info = t, info
        self.protocol = protocol_of(t)
        item_id = str(t.meta.get("item_id") or (t.item or {}).get("id") or t.id)
        truth = t.init.claim.truth if t.init is not None else None
        self.common: dict[str, Any] = dict(
            protocol=t.protocol,
            debate_id=t.id,
            item_id=item_id,
            seed=t.seed,
            config_digest=info.config_digest,
            judge_kind=judge_kind_of(info.judge_kind, t)
            if isinstance(self.protocol, RecursiveProtocol)
            else "llm",
            gold=t.meta.get("gold"),
            claim_truth=truth,
            split=split_of(item_id, info.test_fraction),
            run_id=info.run_id,
            status=t.status,
        )
        self.rows: list[Row] = []
        self.eligible: list[bool] = []

    def player_of(self, role: str) -> str:
        """The player call role ``role`` is exported as (the protocol's own roles first)."""
        return self.protocol.adds.roles.get(role) or PLAYER_OF_ROLE.get(role, role)

    def add(
        self,
        credit: Credit | None,
        *,
        prompt: list[dict[str, str]],
        completion: str,
        speaker: str,
        act: str,
        call_act: str,
        source: str,
        round_k: int | None,
        index: int | None,
        model: str,
        call: int,
        candidate_score: float | None = None,
    ) -> None:
        c = credit or Credit("", None, None, None, None)
        cfg = self.t.config
        scheme = scoring.reward_scheme(self.t) or scoring.JUDGED
        unit = scoring.reward_scale(scheme, scoring.ratio_for(cfg), cfg.depth) if c.term else None
        own = unit
        if c.term and scheme == scoring.DISCOUNTED:
            own = scoring.decision_unit(scoring.ratio_for(cfg), c.decision_term or c.term,
                                        cfg.depth)
        self.rows.append(
            Row(
                prompt=prompt,
                completion=_answer(completion),
                reward=c.reward,
                expected_reward=c.expected_reward,
                return_to_go=c.return_to_go,
                expected_return_to_go=c.expected_return_to_go,
                credited=False,
                term=c.term,
                role=self.player_of(speaker),
                speaker=speaker,
                act=act,
                call_act=call_act,
                source=source,
                round_k=round_k,
                index=index,
                model=model,
                call=call,
                candidate_score=candidate_score,
                reward_unit=unit,
                decision_unit=own,
                **self.common,
            )
        )
        self.eligible.append(c.eligible)

    def call_row(
        self, i: int, call: ModelCallRecord, act: str, credit: Credit | None,
        source: str = "model", index: int | None = None,
    ) -> None:
        round_k = call.round
        if round_k is None and act == "speech":
            round_k = speech_round(call.act)
        if call.role == "estimator" and credit is not None and credit.term.startswith("r_"):
            round_k = None if credit.term == "r_init" else int(credit.term[2:])
        self.add(
            credit,
            prompt=_messages(call),
            completion=call.completion or "",
            speaker=call.role,
            act=act,
            call_act=call.act,
            source=source,
            round_k=round_k,
            index=call.index if index is None else index,
            model=call.model,
            call=i,
            candidate_score=_candidate_score(call),
        )

    def mark_carriers(self) -> None:
        last: dict[tuple[str, str], Row] = {}
        for row, ok in zip(self.rows, self.eligible, strict=True):
            if ok and row.reward is not None:
                last[(row.speaker, row.term)] = row  # a re-asked decision: its last reply
        for row in last.values():
            row.credited = True


def _candidate_score(call: ModelCallRecord) -> float | None:
    best_of = call.notes.get("best_of") if call.notes else None
    if not best_of or best_of.get("expected_reward") is None:
        return None
    return float(best_of["expected_reward"])


def _tag(call: ModelCallRecord) -> tuple[object, ...]:
    return (call.role, call.decision, call.round, call.index,
            tuple(call.prefix) if call.prefix is not None else None)


def refused(calls: list[ModelCallRecord], i: int) -> bool:
    """Whether call ``i`` is an invalid reply that was never played: re-asked (a later call
    of the same decision follows before another candidate), or a failed best-of-n candidate.
    An invalid reply kept and played (``keep_invalid`` on the last attempt) is not."""
    call = calls[i]
    if call.invalid is None:
        return False
    best_of = call.notes.get("best_of") if call.notes else None
    if best_of:
        return bool(best_of.get("failed"))
    tag = _tag(call)
    return any(_tag(later) == tag for later in calls[i + 1 :])


def _usable(call: ModelCallRecord) -> bool:
    return call.completion is not None and call.error is None and call.decision != "scoring"


def _pe_rows(b: _Builder) -> None:
    t = b.t
    if any(c.decision is None for c in t.calls):
        raise ValueError(
            f"debate {t.id} has model calls not marked with their decision (it was recorded "
            "by an older llmdebate): run its debates again to export them"
        )
    complete = t.status == "complete"
    terms = pe_terms(t) if complete else None
    answered = False
    directions: set[int] = set()
    agent = t.agents.get("prover", "")  # "llm-prover:<model>" when a model played A
    prover_model = agent.split(":", 1)[1] if agent.startswith("llm-prover:") else ""
    for i, call in enumerate(t.calls):
        if not _usable(call):
            continue
        if call.role == "prover":
            prover_model = call.model
        if refused(t.calls, i):  # a reply refused (and asked again): it was never played
            b.call_row(i, call, _act_of(call), None, "rejected")
            continue
        credits = pe_call_credits(t, terms, call) if terms is not None else []
        if not credits:  # a judge's call, or a debate still awaiting its verdict
            b.call_row(i, call, _act_of(call), None)
        best_of = call.notes.get("best_of") if call.notes else None
        if best_of and not best_of.get("chosen"):  # a best-of-n candidate that was not played
            e = float(best_of["expected_reward"])  # (a failed one was refused above)
            credits = [(a, Credit(c.term, e, e, e, e)) for a, c in credits]
        for act, credit in credits:
            b.call_row(i, call, act, credit, "candidate" if best_of else "model")
        answered |= call.role == "prover" and call.decision == "answer"
        if call.role == "prover" and call.decision == "direction" and call.round is not None:
            directions.add(call.round)
    if terms is None or t.init is None:
        return
    if not answered and prover_model:
        _assigned_answer_row(b, terms, prover_model)
    if prover_model:
        for rd in t.rounds:
            if rd.k not in directions and rd.direction is not None and rd.p is not None:
                messages = b.info.prompts.render(
                    "direction", claim=rd.claim.text, p=rd.p, epsilon=t.config.epsilon, k=rd.k
                )
                b.add(
                    term_credit(terms, f"r_{rd.k}", 1.0, True),
                    prompt=messages,
                    completion=DIRECTION_WORD[rd.direction],
                    speaker="prover",
                    act="direction",
                    call_act="direction",
                    source="rule",
                    round_k=rd.k,
                    index=None,
                    model=prover_model,
                    call=-1,
                )


def _assigned_answer_row(b: _Builder, terms: Any, model: str) -> None:
    t = b.t
    assert t.init is not None
    item = t.item or {}
    answer = str(t.init.claim.data.get("answer", t.init.claim.text))
    if item.get("question"):
        messages = b.info.prompts.render(
            "answer", question=item["question"], choices=item.get("choices"),
            context=item.get("context") if isinstance(item.get("context"), str) else None,
        )
    else:
        messages = [{"role": "user", "content": t.init.claim.text}]
    b.add(
        term_credit(terms, "r_init", 1.0, True),
        prompt=messages,
        completion=answer,
        speaker="prover",
        act="answer",
        call_act="answer",
        source="assigned",
        round_k=None,
        index=None,
        model=model,
        call=-1,
    )


def _act_of(call: ModelCallRecord) -> str:
    """The act a call served (answer, direction, decompose, recurse, estimate, evidence,
    value, speech, verdict)."""
    if call.decision:
        return str(call.decision)
    if call.role == "judge":
        return "verdict"
    if PLAYER_OF_ROLE.get(call.role) == "debater" or speech_round(call.act) is not None:
        return "speech"  # a debater's, or the speech of a seat a protocol adds
    return call.act


def _naive_rows(b: _Builder) -> None:
    t = b.t
    payoff = naive_payoff(t) if t.status == "complete" else None
    batch: dict[tuple[str, str | None, int | None], int] = {}
    for i, call in enumerate(t.calls):
        # a round's subclaim probabilities are one batch, one call per subclaim in order
        key = (call.role, call.decision, call.round)
        index = batch[key] = batch.get(key, -1) + 1
        if not _usable(call):
            continue
        if refused(t.calls, i):
            b.call_row(i, call, _act_of(call), None, "rejected")
            continue
        credit = None
        if payoff is not None and call.role in ("prover", "challenger"):
            v = payoff if call.role == "prover" else -payoff
            credit = Credit("payoff", v, v, v, v, True)
        per_subclaim = call.decision in ("value", "recurse")
        b.call_row(i, call, _act_of(call), credit, index=index if per_subclaim else None)


def _judged_rows(b: _Builder) -> None:
    t = b.t
    for i, call in enumerate(t.calls):
        if not _usable(call):
            continue
        credit = None
        best_of = call.notes.get("best_of") if call.notes else None
        if PLAYER_OF_ROLE.get(call.role) == "debater" or call.role in b.protocol.seats:
            got = judged(t, call.role)  # None for a seat that argues for no answer
            if got is not None:
                s, e = got
                credit = Credit("payoff", s, e, s, e, True)
                if best_of and not best_of.get("chosen"):  # a candidate speech not played
                    v = float(best_of["expected_reward"])
                    credit = Credit("payoff", v, v, v, v)
        b.call_row(i, call, _act_of(call), credit, "candidate" if best_of else "model")


def transcript_rows(t: Transcript, info: RunInfo | None = None) -> list[Row]:
    """Every decision row of one transcript (failed debates have none)."""
    if t.status == "failed":
        return []
    b = _Builder(t, info or RunInfo())
    if b.protocol.can.estimator_rewards:  # prover-estimator rewards, term by term
        _pe_rows(b)
    elif isinstance(b.protocol, RecursiveProtocol):  # the ±1 payoff of a recursive debate
        _naive_rows(b)
    else:  # the judge's choice: debaters credited with its probability of their answer
        _judged_rows(b)
    b.mark_carriers()
    return b.rows
