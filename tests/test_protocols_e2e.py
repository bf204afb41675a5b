"""Every protocol end to end with the scripted backend, on real StrategyQA-form items.

Debates are built the way a run builds them (:func:`make_jobs` from an
:class:`ExperimentConfig`) and run one at a time with :func:`run_one`, which is what the
runner does for each job.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from llmdebate.agents.factory import Team
from llmdebate.agents.naive import most_likely_consistent
from llmdebate.core.schemas import Claim, CombinationRule, Decomposition, Transcript
from llmdebate.core.scoring import score_transcript
from llmdebate.data import Item
from llmdebate.errors import UserError
from llmdebate.experiment.config import PROTOCOL_NAMES, ExperimentConfig
from llmdebate.experiment.debate import run_one
from llmdebate.experiment.jobs import Job, draws, make_jobs, variants
from llmdebate.experiment.runtime import protocol_settings
from llmdebate.models import Model, ScriptedBackend
from llmdebate.prompts import Prompts
from llmdebate.protocols.registry import PROTOCOLS, get_protocol
from llmdebate.protocols.spec import ProtocolSettings

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
    if "number of the correct option" in messages[-1]["content"]:
        return "2"
    return "An argument."


def judge_p(messages: list[dict[str, str]]) -> float:
    """The scripted judge believes whichever option is 'yes' (so it is always right here)."""
    text = messages[-1]["content"]
    if 'Is answer (A), "yes"' in text:
        return 0.9
    if 'Is answer (A), "no"' in text:
        return 0.2
    return 0.8 if '"yes"' in text else 0.3  # leaf verdicts: claims with the gold answer hold


def config(**kw: Any) -> ExperimentConfig:
    data: dict[str, Any] = {
        "protocols": list(PROTOCOL_NAMES),
        "seed": 5,
        "debate": {"depth": 1, "width": 2},
        "prover": {"model": "scripted"},
        "estimator": {"model": "scripted"},
        "judge": {"model": "scripted"},
    }
    for key, value in kw.items():
        section, _, field = key.partition("__")
        if field:
            data[section] = {**data[section], field: value}
        else:
            data[key] = value
    return ExperimentConfig.model_validate(data)


def team(cfg: ExperimentConfig) -> Team:
    debater = Model(ScriptedBackend(responder=reply, name="s-debater", default_probability=0.8))
    est = Model(ScriptedBackend(name="s-estimator", default_probability=0.6))
    judge = Model(ScriptedBackend(name="s-judge", probabilities=judge_p))
    models = {"prover": debater, "estimator": est, "judge": judge}
    return Team(models, Prompts(), cfg.prover, cfg.estimator, cfg.judge)


def settings(cfg: ExperimentConfig) -> ProtocolSettings:
    return protocol_settings(cfg)


def job(debate_id: str, cfg: ExperimentConfig) -> Job:
    jobs = {j.spec.debate_id: j for j in make_jobs([ITEM], cfg)}
    return jobs[debate_id]


def run(debate_id: str, cfg: ExperimentConfig | None = None, tm: Team | None = None) -> Transcript:
    cfg = cfg or config()
    t, server_failure = asyncio.run(run_one(job(debate_id, cfg), tm or team(cfg), settings(cfg)))
    assert not server_failure, t.failure
    return t


ALL = [f"{p}/q1/{v}" for p in PROTOCOL_NAMES for v in variants(p, "paired", 0)]


def test_every_protocol_is_registered_and_a_paired_run_has_its_variants() -> None:
    # topologies a config registered in this process (records_topology) are not built-ins
    built_in = {n for n in PROTOCOLS if not getattr(PROTOCOLS.get(n), "records_topology", False)}
    assert built_in == set(PROTOCOL_NAMES)
    assert [j.spec.debate_id for j in make_jobs([ITEM], config())] == ALL
    assert ALL == [
        "prover-estimator/q1/honest",
        "prover-estimator/q1/dishonest",
        "naive-recursive/q1/honest",
        "naive-recursive/q1/dishonest",
        "two-sided/q1/order-0",
        "two-sided/q1/order-1",
        "consultancy/q1/honest",
        "consultancy/q1/dishonest",
        "direct/q1/direct",
    ]
    with pytest.raises(UserError, match=r"unknown protocol .debate.*prover-estimator"):
        get_protocol("debate")


@pytest.mark.parametrize("debate_id", ALL)
def test_every_protocol_runs_and_records(debate_id: str) -> None:
    protocol, _, variant = debate_id.split("/")
    t = run(debate_id)
    assert t.status == "complete", t.failure
    assert t.protocol == protocol and t.id == debate_id
    assert t.meta["item_id"] == "q1" and t.meta["variant"] == variant and t.meta["gold"] == "yes"
    assert t.meta["distractor"] == "no" and sorted(t.meta["shown"]) == ["no", "yes"]
    assert t.meta["wall_s"] >= 0 and t.meta["retries"] == 0
    assert t.calls and all(c.model.startswith("s-") for c in t.calls)
    assert t.item["id"] == "q1"
    if protocol in ("prover-estimator", "naive-recursive"):  # the rewarded protocols
        assert not score_transcript(t).mismatches


def test_direct_judge_decides_from_its_probability() -> None:
    t = run("direct/q1/direct")
    assert t.meta["decision"] == "yes"
    assert [c.role for c in t.calls] == ["judge"]
    assert t.meta["decision_probability"] in (pytest.approx(0.9), pytest.approx(0.8))
    assert t.meta["assigned"] is None


def test_two_sided_swaps_answer_order_across_the_pair() -> None:
    cfg = config(rounds=2)
    a, b = run("two-sided/q1/order-0", cfg), run("two-sided/q1/order-1", cfg)
    assert a.meta["order"] == list(reversed(b.meta["order"]))
    assert a.meta["order"] == a.meta["shown"]
    assert [t.role for t in a.turns] == ["debater A", "debater B"] * 2 + ["judge"]
    assert a.turns[0].position == a.meta["order"][0] and b.turns[0].position == b.meta["order"][0]
    assert a.meta["decision"] == b.meta["decision"] == "yes"


def test_two_sided_sequential_b_sees_a_simultaneous_does_not() -> None:
    seq_cfg, sim_cfg = config(mode="sequential"), config(mode="simultaneous")
    seq_team, sim_team = team(seq_cfg), team(sim_cfg)
    run("two-sided/q1/order-0", seq_cfg, seq_team)
    run("two-sided/q1/order-0", sim_cfg, sim_team)
    seq = seq_team.models["prover"].backend.requests[1][-1]["content"]
    sim = sim_team.models["prover"].backend.requests[1][-1]["content"]
    assert "debater A (round 1" in seq and "debater A (round 1" not in sim


def test_consultancy_assigned_answer_is_correct_in_exactly_half() -> None:
    c, i = run("consultancy/q1/honest"), run("consultancy/q1/dishonest")
    assert (c.meta["assigned"], i.meta["assigned"]) == ("yes", "no")
    assert all(t.position == "no" for t in i.turns if t.role == "consultant")
    assert [t.role for t in c.turns] == ["consultant", "judge"]


def test_asymmetric_claims_are_gold_and_distractor_with_truth() -> None:
    h, d = run("prover-estimator/q1/honest"), run("prover-estimator/q1/dishonest")
    assert h.init.claim.truth == 1 and d.init.claim.truth == 0
    assert '"yes"' in h.init.claim.text and '"no"' in d.init.claim.text
    assert h.init.answer == d.init.answer == 1
    assert h.seed == d.seed  # paired: same protocol randomness
    assert (h.meta["claimed_answer"], d.meta["claimed_answer"]) == ("yes", "no")
    assert isinstance(h.meta["prover_beliefs"], dict)


def test_prover_chooses_its_answer_under_choose_assignment() -> None:
    cfg = config(protocols=["prover-estimator"], prover__assignment="choose")
    assert [j.spec.debate_id for j in make_jobs([ITEM], cfg)] == ["prover-estimator/q1/chosen"]
    tm = team(cfg)
    t = run("prover-estimator/q1/chosen", cfg, tm)
    assert t.status == "complete", t.failure
    assert t.calls[0].act == "answer"
    assert t.meta["claimed_answer"] == "no"  # option 2, the wrong answer: truth 0
    assert t.init.claim.truth == 0 and '"no"' in t.init.claim.text
    assert t.meta["assigned"] is None and t.meta["variant"] == "chosen"


def test_naive_prover_states_consistent_values_and_judge_decides() -> None:
    t = run("naive-recursive/q1/dishonest")
    top = t.rounds[0]
    assert top.claimed == 1 and top.claimed_subclaims == [1, 1]  # AND: all must hold
    assert t.rounds[-1].verdict is not None and t.total in (1.0, -1.0)


def test_formal_decomposer_uses_gold_facts() -> None:
    cfg = config(prover__decomposer="formal")
    t = run("prover-estimator/q1/honest", cfg)
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


def test_a_debate_depends_on_its_item_and_the_seed_only() -> None:
    """The same item gets the same answers, order and seed whatever else the run holds."""
    other = Item(id="q0", question="Is fire cold?", choices=["yes", "no"], answer="no")
    alone = {j.spec.debate_id: j.spec for j in make_jobs([ITEM], config())}
    mixed = {
        j.spec.debate_id: j.spec
        for j in make_jobs([other, ITEM], config(protocols=["direct", "consultancy"]))
    }
    for debate_id, spec in mixed.items():
        if "/q1/" in debate_id:
            ref = alone[debate_id]
            assert (spec.seed, spec.shown, spec.answer, spec.distractor) == (
                ref.seed,
                ref.shown,
                ref.answer,
                ref.distractor,
            )
    assert alone["direct/q1/direct"].seed != mixed["direct/q0/direct"].seed


def test_item_with_no_wrong_answer_fails_only_the_debates_that_need_one() -> None:
    free = Item(id="f1", question="Name a colour.", answer="blue")
    cfg = config()
    jobs = make_jobs([free], cfg)
    problems = {j.spec.debate_id: j.problem for j in jobs}
    assert problems["prover-estimator/f1/honest"] is None
    assert "no wrong answer" in problems["prover-estimator/f1/dishonest"]
    assert "no wrong answer" in problems["direct/f1/direct"]
    t, server_failure = asyncio.run(
        run_one(next(j for j in jobs if j.problem), team(cfg), settings(cfg))
    )
    assert t.status == "failed" and "ItemError" in t.failure and not server_failure
