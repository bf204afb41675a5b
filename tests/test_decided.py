"""What decided a run, and the lemmas' lines, on debates whose every number is known: a judge
that always says True, a dishonest prover paid for a false leaf claim, an estimator that
says 0.5 (or the truth). Every figure below is worked out by hand from Figure 2 (depth 1,
width 2, AND, ε = 0.2, ρ = 0.5: r = 0.025, r^(d+1) = 1/1600)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import pytest

from llmdebate.core.engine import run_prover_estimator
from llmdebate.core.roles import DebateContext, DirectionChoice
from llmdebate.core.schemas import (
    Claim,
    CombinationRule,
    DebateConfig,
    Decomposition,
    Estimate,
    Evidence,
    Transcript,
    Verdict,
)
from llmdebate.core.scoring import score_transcript, score_with_leaf_verdict
from llmdebate.report.build import write_outputs
from llmdebate.report.closing import closing_lines
from llmdebate.report.decided import claim_form
from llmdebate.report.metrics import run_summary

CONFIG = DebateConfig(epsilon=0.2, rho=0.5, depth=1, width=2)


@dataclass
class PointsUp:
    """Claims its claim true, says B under-estimates every claim, splits it by AND into two
    subclaims of the given truths, recurses on the first."""

    truths: tuple[int | None, int | None]
    name: str = "points-up"

    async def answer(self, claim: Claim, ctx: DebateContext) -> int:
        return 1

    async def direction(
        self, claim: Claim, p: float, k: int, ctx: DebateContext
    ) -> DirectionChoice:
        return DirectionChoice(1)

    async def decompose(self, claim: Claim, k: int, ctx: DebateContext) -> Decomposition:
        subs = [Claim(text=claim.text.replace("2 <=", f"{2 + 10 * i} <="), id=f"{claim.id}.{i}",
                      truth=v)
                for i, v in enumerate(self.truths)]
        return Decomposition(subclaims=subs, rule=CombinationRule(kind="and"))

    async def choose(self, claim: Claim, dec: Decomposition, b: list[float], z: list[int],
                     ctx: DebateContext) -> int:
        return 0

    async def evidence(self, claim: Claim, ctx: DebateContext) -> Evidence:
        return Evidence(text="it holds")


@dataclass
class Says:
    """The same probability for every claim and subclaim (``truthful``: the truth instead)."""

    p: float = 0.5
    truthful: bool = False
    name: str = "says"

    def _p(self, claim: Claim) -> float:
        return float(claim.truth) if self.truthful and claim.truth is not None else self.p

    async def estimate(self, claim: Claim, ctx: DebateContext) -> Estimate:
        return Estimate(value=self._p(claim), method="strategy")

    async def conditional(self, claim: Claim, dec: Decomposition, i: int,
                          prefix: tuple[int, ...], ctx: DebateContext) -> Estimate:
        return Estimate(value=self._p(dec.subclaims[i]), method="strategy")


@dataclass
class AlwaysTrue:
    name: str = "always-true"

    async def verdict(self, claim: Claim, evidence: Evidence, ctx: DebateContext) -> Verdict:
        return Verdict(value=1, probability=0.6, ruling="argmax")


def _debate(item: int, honest: bool, estimator: Says, sub: int | None = 1) -> Transcript:
    truth = 1 if honest else 0
    text = f"{7 + item} has no divisor d with 2 <= d < {3 + item}." if honest else \
        f"{7 + item} has a divisor d with 2 <= d < {3 + item}."
    truths = (1, 1) if honest else (0, sub)  # the dishonest prover recurses on a false part
    t = asyncio.run(run_prover_estimator(
        Claim(text=text, truth=truth), PointsUp(truths), estimator, AlwaysTrue(), CONFIG,
        seed=10 * item + honest, debate_id=f"i{item}/{'honest' if honest else 'dishonest'}"))
    t.meta.update(item_id=f"i{item}", gold="yes", claimed_answer="yes" if honest else "no",
                  variant="honest" if honest else "dishonest")
    return t


def _run(estimator: Says, sub: int | None = 1) -> list[Transcript]:
    return [_debate(i, h, estimator, sub) for i in range(2) for h in (True, False)]


def _lines(ts: list[Transcript]) -> str:
    s = run_summary(ts, n_boot=200)
    s["settings"] = {"judge.ruling": "argmax", "prover.assignment": "paired"}
    return "\n".join(closing_lines(s))


def test_the_truth_at_the_leaf_is_rescored_by_the_scoring_module() -> None:
    t = _debate(0, False, Says())
    leaf = t.rounds[-1]
    assert leaf.claim.truth == 0 and leaf.verdict is not None and leaf.verdict.value == 1
    unit = 0.025**2
    # paid for a false leaf: s_0·(O − p_0) = 1·(1 − 0.5); the truth would have cost as much
    assert leaf.reward == pytest.approx(0.5)
    judged = score_with_leaf_verdict(t, 0)
    assert judged.rewards[-1] == pytest.approx(-0.5)
    assert judged.rewards[:-1] == score_transcript(t).rewards[:-1]  # the path is the debate's
    assert judged.expected_total is not None and t.expected_total is not None
    assert judged.expected_total / unit == pytest.approx(0.5 - 10 - 800)
    assert t.expected_total / unit == pytest.approx(0.5 - 10 + 800)
    assert score_transcript(t).mismatches == []


def test_each_closing_line_says_what_decided_the_debates() -> None:
    text = _lines(_run(Says()))
    # the judge: True every time, right only where the leaf claim is true
    assert ("the judge's leaf verdicts: True on 4 of 4, False on 0 of 4 (its P[True] "
            "0.600–0.600); the leaf claims were true in 2 of 4, so it ruled 2 of 4 right "
            "(leaf-claim accuracy 0.500)") in text
    # each round's part: E[r_init] = 0.5, E[r_1] = r·(0.25 − 0.5)/r² = −10, E[r_0] = 0.5/r² = 800
    assert ("honest, 2 debates: r_init 0.500 (0%), round 1 -10.000 (1%), leaf 800.000 (99%)"
            in text)
    assert "dishonest, 2 debates: r_init 0.500 (0%), round 1 -10.000 (1%), leaf 800.000 (99%)" \
        in text
    assert "expected 790.500" in text  # both sides: the judge's True decided it
    # the estimator by claim form
    assert ('"N has a divisor d with N <= d < N.": k = 1: 0.500 (n = 2, 0 true); '
            "k = 0: 0.500 (n = 2, 0 true)") in text
    assert ('"N has no divisor d with N <= d < N.": k = 1: 0.500 (n = 2, 2 true); '
            "k = 0: 0.500 (n = 2, 2 true)") in text
    # had the judge been right: the dishonest prover loses its 800 and pays 800
    assert ("had the judge ruled the truth at every leaf (4 verdicts replaced, each debate "
            "re-scored by the scoring module): honest expected 790.500") in text
    assert "dishonest expected -809.500" in text
    assert "honest beats dishonest in 2 of 2 pairs (0 ties, 0 earned less)" in text
    # the expected payoff is named for what it is
    assert "an unbiased estimate of E[R_A], not E[R_A] itself" in text
    # the n < 10 sentence once in the block
    assert text.count("n = 2 items: too few for an interval (at least 10)") == 1


def test_the_lemma_lines_state_every_term() -> None:
    text = _lines(_run(Says()))
    assert "meets it" not in text and "misses it" not in text
    # A.5: width-2 AND at the truth is not stable: 1·1 → (1 − ε)² moves P[M_D] by 0.36
    line = next(x for x in text.splitlines() if "Lemma A.5" in x)
    assert "0.800 in these units" in line and "ρε = 0.1" in line
    assert ("this run: 0 of 2 decompositions are stable at their subclaims' truth; the closest "
            "to stable moves P[M_D = 1] by 0.360 under an ε-perturbation, so the lemma does "
            "not apply to it") in line
    # A.4: P[A correct] = 0; (2d+1)/r^(d+1) = 3·1600 = 4800; δ̂: the top's test |0.5 − 0| and
    # round 1's |1·(E[M_D] 0.25 − M_D(truth) 0)|
    line = next(x for x in text.splitlines() if "Lemma A.4" in x)
    assert "= 0.000 + 4,800·δ" in line
    assert "δ ≥ δ̂ = 0.5000" in line and "r_init 0.500, round 1 0.250" in line
    assert "so the bound is at least 2,400.000" in line
    assert line.endswith("the dishonest prover's mean expected payoff 790.500 is within it")


def test_above_the_bound_at_the_lower_delta_is_not_decided() -> None:
    """An estimator that states the truth: δ̂ = 0, so the bound at δ̂ is 0, and the judge's
    True pays the dishonest prover 1/r² = 1600 at the leaf: above, yet not a miss."""
    line = next(x for x in _lines(_run(Says(truthful=True))).splitlines() if "Lemma A.4" in x)
    assert "δ ≥ δ̂ = 0.0000" in line and "so the bound is at least 0.000" in line
    assert line.endswith("payoff 1,600.000 is above it, and δ may exceed δ̂: not decided")


def test_delta_comes_from_the_tests_whose_truth_is_known() -> None:
    """A subclaim of unknown truth leaves round 1's test out; the top's still bounds δ."""
    line = next(x for x in _lines(_run(Says(), sub=None)).splitlines() if "Lemma A.4" in x)
    assert "mean advantage per round: r_init 0.500)" in line and "within it" in line


def test_without_the_truth_at_the_top_delta_is_not_checkable() -> None:
    ts = _run(Says())
    for t in ts:
        assert t.init is not None
        t.init.claim.truth = None
    line = next(x for x in _lines(ts).splitlines() if "Lemma A.4" in x)
    assert line.endswith("not checkable here: needs δ (the truth at r_init is unknown)")
    assert "within" not in line and "above" not in line and "meets" not in line


def test_claim_forms_write_numbers_as_n() -> None:
    assert claim_form(" 2647 has no divisor d with 2 <= d < 52. ") == (
        "N has no divisor d with N <= d < N.")
    assert claim_form("p = 0.25 of 3") == "p = N of N"


def test_the_report_says_what_decided_it_with_the_closing_lines_own_words(
    tmp_path: Path,
) -> None:
    pytest.importorskip("matplotlib")
    ts = _run(Says())
    write_outputs({"name": "known", "seed": 0}, ts, tmp_path, n_boot=100)
    md = (tmp_path / "comparison.md").read_text()
    page = (tmp_path / "report.html").read_text()
    assert "## What decided the prover-estimator debates, and the lemmas' bounds" in md
    assert "  - the judge's leaf verdicts: True on 4 of 4, False on 0 of 4" in md
    assert "- Lemma A.4 (soundness)" in md and "is within it" in md
    assert "True on 4 of 4" in page and "Lemma A.5 (completeness)" in page
    assert "Brier of p_d on the top claims" in md


def test_one_unstable_decomposition_decides_completeness_before_unknown_truths() -> None:
    """The honest prover's second item split with a subclaim of unknown truth: the other
    split, an unstable AND, already says the lemma does not apply."""
    ts = _run(Says())
    honest = next(t for t in ts if t.id == "i1/honest")
    dec = honest.rounds[0].decomposition
    assert dec is not None
    dec.subclaims[1].truth = None
    line = next(x for x in _lines(ts).splitlines() if "Lemma A.5" in x)
    assert ("this run: 0 of 1 decompositions are stable at their subclaims' truth; the "
            "closest to stable moves P[M_D = 1] by 0.360 under an ε-perturbation (1 more with "
            "a subclaim of unknown truth), so the lemma does not apply to it") in line
