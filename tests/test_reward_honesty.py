"""The training reward teaches honesty.

Debates on the divisors problem (truth known at every subclaim) are played by scripted models
that play the formal strategies (``tests/fixtures/honesty_fixtures.py``): the honest prover,
a calibrated estimator, and two miscalibrated ones. Every decision of the recorded debates is
exported as an online row and scored, by the reward function trainers call
(:class:`llmdebate.rl.DebateReward`, expected reward), once with the honest or calibrated
reply and once with a dishonest one, the rest of the debate played again by the frozen run.

* the prover's acts against an estimator that is wrong somewhere (what each act exposes):
  a direction against either blind estimator; an exact split against a rule-flipped one,
  against the estimator wrong about wide intervals and right about their parts; a
  recursion into the subclaim the estimator got wrong against the other, and the evidence
  that checks out against made-up evidence, against the estimator blind to small divisors;
* the estimator's acts (its first estimate p_d, and every b_i) against the honest prover,
  the rest of the estimator calibrated: the true answer word against the false one.

For every decision kind the honest reply is never below the dishonest one in any state, and
above it on average over the states with a 95 % bootstrap interval above 0. The rewards of
the old per-term normalisation (each row's own term over its own unit) fail this: the
estimator's first-estimate rows credited with r_init rank the miscalibrated estimate above.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmdebate.core import scoring
from llmdebate.experiment.config import ExperimentConfig
from llmdebate.experiment.loading import validate
from llmdebate.experiment.runner import run
from llmdebate.export import build, decision_rows, run_info
from llmdebate.records.rundir import load_transcripts, read_run_config
from llmdebate.rl import DebateReward

try:
    from tests.fixtures import honesty_fixtures as hf
except ImportError:  # pytest run from inside tests/
    from fixtures import honesty_fixtures as hf  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parents[1]
FIX = str(REPO / "tests" / "fixtures" / "honesty_fixtures.py")
DIVISORS = REPO / "datasets" / "divisors.jsonl"
ITEMS = 4
"""Items per run (each is debated twice: the true answer and the false one)."""


def honesty_config(estimator: str) -> ExperimentConfig:
    return validate({
        "name": "honesty",
        "dataset": {"path": str(DIVISORS), "limit": ITEMS},
        "debate": {"depth": 2, "width": 2, "epsilon": hf.EPSILON},
        "prover": {"model": "scripted", "options": {"responder": f"{FIX}:honest_prover"},
                   "decomposer": "model", "direction": "model", "recursion": "model"},
        "estimator": {"model": "scripted", "options": {"probabilities": f"{FIX}:{estimator}"}},
        "judge": {"model": "scripted", "kind": "llm",
                  "options": {"probabilities": f"{FIX}:checking_judge"}},
        "max_concurrency": 4,
    })


Record = dict[str, Any]


@pytest.fixture(scope="module")
def online(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Record]]:
    """The trl-prompt-only records of one run per estimator."""
    out: dict[str, list[Record]] = {}
    for name in ("calibrated", "blind_to_small_divisors", "blind_to_wide_intervals"):
        where = tmp_path_factory.mktemp(name) / "run"
        run(honesty_config(name), where, progress=False)
        config = read_run_config(where)
        ts = load_transcripts(where)
        assert all(t.status == "complete" for t in ts)
        out[name] = build(decision_rows(ts, run_info(where, config, 0.0)), "trl-prompt-only",
                          config)
    return out


def _prompt(rec: Record) -> str:
    return str(rec["prompt"][-1]["content"])


def _claim(rec: Record) -> str:
    return hf._line(_prompt(rec), "Claim") or ""


def direction_pair(rec: Record) -> tuple[str, str]:
    honest = hf.honest_direction(_prompt(rec))
    away = "lower" if hf.truth(_claim(rec)) else "higher"  # pointing away from the truth
    return honest, {"higher": "lower", "lower": "higher", "right": away}[honest]


def split_pair(rec: Record) -> tuple[str, str]:
    exact = hf.exact_split(_claim(rec), 2)
    return exact, hf.flipped_rule(exact)


def recurse_pair(rec: Record) -> tuple[str, str]:
    j = hf.honest_index(_prompt(rec))
    other = next(i for i in range(len(hf.choices(_prompt(rec)))) if i != j)
    return str(j + 1), str(other + 1)


def evidence_pair(rec: Record) -> tuple[str, str]:
    return hf.honest_evidence(_claim(rec)), hf.false_evidence(_claim(rec))


def estimate_pair(rec: Record) -> tuple[str, str]:
    g = hf.calibrated(rec["prompt"])
    return ("True", "False") if g else ("False", "True")


# kind -> (runs whose rows it is scored on, which rows, honest and dishonest replies)
KINDS: dict[str, tuple[tuple[str, ...], Any, Any]] = {
    "direction": (("blind_to_small_divisors", "blind_to_wide_intervals"),
                  lambda r: r["act"] == "direction", direction_pair),
    "decompose": (("blind_to_wide_intervals",), lambda r: r["act"] == "decompose", split_pair),
    "recurse": (("blind_to_small_divisors",), lambda r: r["act"] == "recurse", recurse_pair),
    "evidence": (("blind_to_small_divisors",), lambda r: r["act"] == "evidence",
                 evidence_pair),
    "estimate p_d": (("calibrated",),
                     lambda r: r["speaker"] == "estimator" and r["index"] is None
                     and r["term"] in ("r_init", "r_2"), estimate_pair),
    "estimate b_i": (("calibrated",),
                     lambda r: r["speaker"] == "estimator" and r["index"] is not None,
                     estimate_pair),
}


def bootstrap_interval(x: np.ndarray, seed: int = 0, n: int = 4000) -> tuple[float, float]:
    """The 95 % percentile bootstrap interval of the mean of ``x``."""
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, len(x), size=(n, len(x)))].mean(axis=1)
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def advantages(online: dict[str, list[Record]], kind: str) -> np.ndarray:
    """reward(honest) - reward(dishonest) for every row of ``kind``, both scored by the reward
    function a trainer calls on the row's state."""
    runs, which, pair = KINDS[kind]
    reward = DebateReward()
    out = []
    for name in runs:
        for rec in filter(which, online[name]):
            honest, dishonest = pair(rec)
            got = reward([rec["prompt"]] * 2, [honest, dishonest], state=[rec["state"]] * 2)
            out.append(got[0] - got[1])
    return np.array(out)


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_reward_ranks_the_honest_act_above_the_dishonest_one(
    online: dict[str, list[Record]], kind: str
) -> None:
    gap = advantages(online, kind)
    assert len(gap) >= 4, (kind, len(gap))
    lo, hi = bootstrap_interval(gap)
    summary = f"{kind}: n={len(gap)} mean={gap.mean():.4g} 95% [{lo:.4g}, {hi:.4g}]"
    assert gap.min() >= -1e-12, f"dishonest ahead in a state: {summary}, min={gap.min():.4g}"
    assert lo > 0.0, summary


# ---------------------------------------------------------------- the binary acts, exactly

eps_rho = st.tuples(st.floats(0.01, 0.49), st.floats(0.0, 0.95))


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(eps_rho, st.integers(0, 6), st.integers(0, 1))
def test_a_calibrated_binary_first_estimate_beats_the_miscalibrated_one(
    params: tuple[float, float], depth: int, g: int
) -> None:
    """B's first estimate as one word (p_d = 1 or 0), against the honest prover (answer g,
    direction towards the truth outside the dead zone ε), the rest of B calibrated (E[M_D]
    = g): B's return, in game units and on the one scale, is higher for p_d = g (-r^(d+1)
    against -r^d). Credited term by term, each over its own unit, the r_init row ranks them
    the other way."""
    eps, rho = params
    r = scoring.reward_ratio(eps, rho)
    names = ["r_init", f"r_{depth}"]

    def estimator_return(p: int) -> tuple[float, float]:
        s = 0 if abs(g - p) <= eps else (1 if g > p else -1)
        m = float(g)
        values = {"r_init": float(scoring.expected_init_reward(r, depth, p, g)),
                  f"r_{depth}": float(scoring.expected_round_reward(r, depth, s, m, p))}
        game = -scoring.decision_return(names, values, "r_init")
        scale = scoring.reward_scale(scoring.DISCOUNTED, r, depth)
        per_term = -(values["r_init"] / r ** (depth + 1))  # the old r_init row
        return game / scale, per_term

    calibrated, miscalibrated = estimator_return(g), estimator_return(1 - g)
    assert calibrated[0] > miscalibrated[0]
    assert calibrated[1] < miscalibrated[1]  # the old r_init row taught the opposite


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(eps_rho, st.integers(0, 6), st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_the_leaf_direction_towards_the_judge_beats_the_other(
    params: tuple[float, float], depth: int, p0: float, judge: float
) -> None:
    """A's leaf direction, a binary choice between s and -s: the one towards the judge's
    P[O = 1] earns 2 |P[O = 1] - p_0| more, on the one scale too."""
    r = scoring.reward_ratio(*params)
    scale = scoring.reward_scale(scoring.DISCOUNTED, r, depth)
    s = 1 if judge >= p0 else -1
    towards = scoring.leaf_reward(r, s, judge, p0) / scale
    away = scoring.leaf_reward(r, -s, judge, p0) / scale
    assert towards - away == pytest.approx(2 * abs(judge - p0) / scale, abs=1e-12)
    assert towards >= away


def test_the_recorded_rows_of_one_decision_carry_one_reward(
    online: dict[str, list[Record]],
) -> None:
    """The first estimate has two rows (r_init and r_d): both carry the decision's return."""
    rows = [r for r in online["calibrated"] if r["speaker"] == "estimator" and r["index"] is None
            and r["term"] in ("r_init", "r_2")]
    by_debate: dict[str, set[float]] = {}
    for r in rows:
        by_debate.setdefault(r["debate_id"], set()).add(r["expected_return_to_go"])
    assert by_debate and all(len(v) == 1 for v in by_debate.values())
    state = json.loads(rows[0]["state"])
    assert state["term"] in ("r_init", "r_2")
