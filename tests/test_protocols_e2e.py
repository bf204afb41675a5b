"""Every protocol end to end with the scripted backend, on real StrategyQA-form items."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from llmdebate.data import Item
from llmdebate.models import Model, ScriptedBackend
from llmdebate.protocols.common import ProtocolSettings, RoleModels, draws
from llmdebate.protocols.naive_llm import most_likely_consistent
from llmdebate.protocols.registry import PROTOCOLS, debate_id, get_protocol
from llmdebate.schemas import Claim, CombinationRule, Decomposition
from llmdebate.scoring import score_transcript

ITEM = Item(
    id="q1",
    question="Is <b>water</b> wet?",
    choices=["yes", "no"],
    answer="yes",
    facts=["Water makes things wet."],
)


def reply(messages: list[dict[str, str]]) -> str:
    if "JSON" in messages[0]["content"]:
        return json.dumps({"subclaims": ["part one", "part two"], "rule": {"kind": "and"}})
    return "An argument."


def judge_p(messages: list[dict[str, str]]) -> float:
    """The scripted judge believes whichever option is 'yes' (so it is always right here)."""
    text = messages[-1]["content"]
    if 'Is answer (A), "yes"' in text:
        return 0.9
    if 'Is answer (A), "no"' in text:
        return 0.2
    return 0.8 if '"yes"' in text else 0.3  # leaf verdicts: claims with the gold answer hold


def roles(**kw: Any) -> RoleModels:
    debater = Model(ScriptedBackend(responder=reply, name="s-debater", default_probability=0.8))
    est = Model(ScriptedBackend(name="s-estimator", default_probability=0.6))
    judge = Model(ScriptedBackend(name="s-judge", probabilities=judge_p))
    return RoleModels(debater, est, judge, **kw)


def run(protocol: str, variant: str, r: RoleModels | None = None, **settings: Any) -> Any:
    runner, _ = get_protocol(protocol)
    return asyncio.run(
        runner(
            ITEM,
            r or roles(),
            ProtocolSettings(**settings),
            variant=variant,
            seed=5,
            debate_id=debate_id(protocol, ITEM.id, variant),
        )
    )


@pytest.mark.parametrize(
    ("protocol", "variant"), [(p, v) for p, (_, vs) in PROTOCOLS.items() for v in vs]
)
def test_every_protocol_runs_and_records(protocol: str, variant: str) -> None:
    t = run(protocol, variant)
    assert t.status == "complete" and t.protocol == protocol
    assert t.meta["item_id"] == "q1" and t.meta["variant"] == variant and t.meta["gold"] == "yes"
    assert t.calls and all(c.model.startswith("s-") for c in t.calls)
    assert t.id == f"{protocol}/q1/{variant}"
    if protocol in ("prover-estimator", "naive-recursive"):  # the rewarded protocols
        assert not score_transcript(t).mismatches


def test_direct_judge_decides_from_its_probability() -> None:
    t = run("direct", "direct")
    assert t.meta["decision"] == "yes"
    assert [c.role for c in t.calls] == ["judge"]
    assert t.meta["decision_probability"] in (pytest.approx(0.9), pytest.approx(0.8))


def test_two_sided_swaps_answer_order_across_the_pair() -> None:
    a, b = run("two-sided", "order-0", rounds=2), run("two-sided", "order-1", rounds=2)
    assert a.meta["order"] == list(reversed(b.meta["order"]))
    assert [t.role for t in a.turns] == ["debater A", "debater B"] * 2 + ["judge"]
    assert a.turns[0].position == a.meta["order"][0] and b.turns[0].position == b.meta["order"][0]
    assert a.meta["decision"] == b.meta["decision"] == "yes"


def test_two_sided_sequential_b_sees_a_simultaneous_does_not() -> None:
    r = roles()
    run("two-sided", "order-0", r, mode="sequential")
    seq = r.debater.backend.requests[1][-1]["content"]
    r2 = roles()
    run("two-sided", "order-0", r2, mode="simultaneous")
    sim = r2.debater.backend.requests[1][-1]["content"]
    assert "debater A (round 1" in seq and "debater A (round 1" not in sim


def test_consultancy_assigned_answer_is_correct_in_exactly_half() -> None:
    c, i = run("consultancy", "correct"), run("consultancy", "incorrect")
    assert (c.meta["assigned"], i.meta["assigned"]) == ("yes", "no")
    assert all(t.position == "no" for t in i.turns if t.role == "consultant")


def test_asymmetric_claims_are_gold_and_distractor_with_truth() -> None:
    h, d = run("prover-estimator", "honest"), run("prover-estimator", "dishonest")
    assert h.init.claim.truth == 1 and d.init.claim.truth == 0
    assert '"yes"' in h.init.claim.text and '"no"' in d.init.claim.text
    assert h.init.answer == d.init.answer == 1
    assert h.seed == d.seed  # paired: same protocol randomness


def test_naive_prover_states_consistent_values_and_judge_decides() -> None:
    t = run("naive-recursive", "dishonest")
    top = t.rounds[0]
    assert top.claimed == 1 and top.claimed_subclaims == [1, 1]  # AND: all must hold
    assert t.rounds[-1].verdict is not None and t.total in (1.0, -1.0)


def test_facts_decomposer_uses_gold_facts() -> None:
    t = run("prover-estimator", "honest", roles(decomposer="facts"))
    dec = t.rounds[0].decomposition
    assert "Water makes things wet." in dec.subclaims[0].text
    assert not any(c.act == "decompose" for c in t.calls)


def test_most_likely_consistent_values_by_hand() -> None:
    dec = Decomposition(
        subclaims=[Claim(text="a"), Claim(text="b")], rule=CombinationRule(kind="and")
    )
    assert most_likely_consistent([0.9, 0.2], dec, 1) == [1, 1]
    assert most_likely_consistent([0.9, 0.2], dec, 0) == [1, 0]
    assert most_likely_consistent([0.3, 0.6], dec, 0) == [0, 1]


def test_draws_are_seeded_per_item() -> None:
    assert draws(ITEM, 1) == draws(ITEM, 1)
    shown = {draws(ITEM, s).shown for s in range(12)}
    assert shown == {("yes", "no"), ("no", "yes")}
