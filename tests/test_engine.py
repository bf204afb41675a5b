"""The Figure 2 loop and naive recursive debate: replay, early stop, deferral, violations."""

from __future__ import annotations

import pytest
from core_agents import FirstChallenger, ToyEstimator, ToyJudge, ToyProver
from pydantic import ValidationError

from llmdebate.core.engine import (
    complete_with_verdict,
    debate_seed,
    run_naive_recursive,
    run_prover_estimator,
    run_sync,
)
from llmdebate.core.schemas import Claim, CombinationRule, DebateConfig, Transcript, Verdict
from llmdebate.core.scoring import ratio_for, reward_ratio, score_transcript
from llmdebate.errors import ProtocolViolation

X = Claim(text="the top claim", id="x")


def debate(cfg: DebateConfig, **kw: object) -> Transcript:
    prover = kw.pop("prover", ToyProver(q=cfg.width))
    judge = kw.pop("judge", ToyJudge())
    return run_sync(
        run_prover_estimator(X, prover, ToyEstimator(), judge, cfg, **kw)  # type: ignore[arg-type]
    )


def test_a_debate_replays_bit_for_bit() -> None:
    cfg = DebateConfig(depth=3, width=3, seed=11)
    a, b = debate(cfg), debate(cfg)
    assert a.model_dump_json() == b.model_dump_json()
    c = debate(cfg, seed=12)
    assert c.model_dump_json() != a.model_dump_json()


def test_round_structure_follows_figure_2() -> None:
    cfg = DebateConfig(depth=2, width=3, seed=5)
    t = debate(cfg)
    assert t.init is not None and [r.k for r in t.rounds] == [2, 1, 0]
    assert t.init.zhat == int(t.init.u < t.init.estimate.value)
    for prev, nxt in zip(t.rounds, t.rounds[1:], strict=False):
        assert prev.recurse is not None and prev.decomposition is not None
        assert nxt.claim == prev.decomposition.subclaims[prev.recurse]
        assert nxt.p == prev.b[prev.recurse]
        assert prev.z == [int(u < b) for u, b in zip(prev.u, prev.b, strict=True)]
        assert prev.table is not None and len(prev.table) == 3
    leaf = t.rounds[-1]
    assert leaf.evidence is not None and leaf.verdict is not None and leaf.decomposition is None
    assert not score_transcript(t).mismatches


def test_path_only_estimation_draws_the_same_outcomes() -> None:
    full = debate(DebateConfig(depth=3, width=3, seed=9))
    path = debate(DebateConfig(depth=3, width=3, seed=9, expected_rewards=False))
    assert [r.z for r in full.rounds] == [r.z for r in path.rounds]
    assert full.total == path.total
    assert path.rounds[0].table is None and not score_transcript(path).mismatches


def test_commitment_to_zero_stops_early_and_leaves_r_init() -> None:
    cfg = DebateConfig(depth=3, width=2, seed=1)
    t = debate(cfg, prover=ToyProver(q=2, directions=0, rest_zero=True))
    assert t.stopped_early and t.stop_round == 3 and t.rounds == []
    assert t.init is not None and t.total == t.init.reward


def test_deferred_verdict_completes_to_the_same_transcript() -> None:
    cfg = DebateConfig(depth=2, width=2, seed=4)
    pending = debate(cfg, judge=ToyJudge(defer=True))
    assert pending.status == "awaiting_verdict" and pending.total is None
    now = debate(cfg)
    leaf_verdict = now.rounds[-1].verdict
    assert leaf_verdict is not None
    done = complete_with_verdict(pending, leaf_verdict)
    assert done.model_dump_json() == now.model_dump_json()
    with pytest.raises(ProtocolViolation):
        complete_with_verdict(done, Verdict(value=1))


def test_a_decomposition_wider_than_the_width_is_a_violation() -> None:
    with pytest.raises(ProtocolViolation, match="at most 2"):
        debate(DebateConfig(depth=1, width=2), prover=ToyProver(q=3))


def test_depth_zero_is_initialisation_then_the_leaf() -> None:
    t = debate(DebateConfig(depth=0, width=2, seed=3))
    assert [r.k for r in t.rounds] == [0]
    assert not score_transcript(t).mismatches


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("epsilon", 0.5, "0 < epsilon < 1/2"),
        ("epsilon", 0.0, "0 < epsilon < 1/2"),
        ("rho", 1.0, "0 < rho < 1"),
        ("depth", -1, "depth must be >= 0"),
        ("width", 0, "width must be >= 1"),
    ],
)
def test_config_rejects_bad_values_with_a_clear_message(
    field: str, value: float, fragment: str
) -> None:
    with pytest.raises(ValidationError, match=fragment):
        DebateConfig(**{field: value})


def test_reward_ratio_is_eps_one_minus_rho_over_four() -> None:
    assert ratio_for(DebateConfig(epsilon=0.2, rho=0.5)) == reward_ratio(0.2, 0.5) == 0.025


def test_naive_recursive_debate_follows_the_challenge() -> None:
    cfg = DebateConfig(depth=2, width=3, seed=2)
    t = run_sync(run_naive_recursive(X, ToyProver(q=3), FirstChallenger(), ToyJudge(), cfg))
    assert [r.k for r in t.rounds] == [2, 1, 0]
    assert t.rounds[-1].claim.id == "x.0.0"
    # the toy judge rules 1 on ids ending in an even digit; the prover claimed 1 all the way
    assert t.total == 1.0 and t.prover_won is True
    assert not score_transcript(t).mismatches


def test_naive_prover_whose_values_break_the_rule_loses() -> None:
    cfg = DebateConfig(depth=2, width=3, seed=2)
    prover = ToyProver(q=3, rule=CombinationRule(kind="at_least", k=3), answer_bit=0)
    # claims the parent false but every subclaim false too: at_least(3) of zeros is 0, consistent
    t = run_sync(run_naive_recursive(X, prover, FirstChallenger(), ToyJudge(), cfg))
    assert t.meta.get("inconsistent_round") is None
    prover_or = ToyProver(q=3, rule=CombinationRule(kind="expr", expr="!y1"), answer_bit=1)
    t2 = run_sync(run_naive_recursive(X, prover_or, FirstChallenger(), ToyJudge(), cfg))
    assert t2.total == -1.0 and t2.prover_won is False and t2.meta["inconsistent_round"] == 2
    assert not score_transcript(t2).mismatches


def test_debate_seeds_are_distinct_and_stable() -> None:
    seeds = [debate_seed(0, i) for i in range(1000)]
    assert len(set(seeds)) == 1000
    assert debate_seed(0, 5) == debate_seed(0, 5) != debate_seed(1, 5)


def test_a_prover_declaring_audits_has_them_recorded() -> None:
    from dataclasses import dataclass, field

    from llmdebate.core.roles import AuditedProver, BelievingProver, Prover

    @dataclass
    class GradedProver(ToyProver):
        audits: list[dict[str, object]] = field(default_factory=list)

        async def decompose(self, claim, k, ctx):  # type: ignore[no-untyped-def]
            self.audits.append({"round": k, "source": "toy"})
            return await super().decompose(claim, k, ctx)

    cfg = DebateConfig(depth=2, width=2, seed=3)
    graded = GradedProver(q=2, rest_zero=False, directions=1)
    assert isinstance(graded, AuditedProver) and isinstance(graded, Prover)
    assert not isinstance(ToyProver(), AuditedProver | BelievingProver)  # nothing declared
    t = debate(cfg, prover=graded)
    assert t.meta["decompositions"] == [{"round": k, "source": "toy"} for k in (2, 1)]
    assert "decompositions" not in debate(cfg).meta
