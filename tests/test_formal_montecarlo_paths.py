"""The Monte Carlo's round read along the drawn outcome gives the very numbers of the round
read through the variant's whole view (same draws, same payoffs, to the bit)."""

from __future__ import annotations

import numpy as np
import pytest

from llmdebate.core.schemas import VARIANTS
from llmdebate.formal import montecarlo
from llmdebate.formal.game import Game
from llmdebate.formal.problems import make_problem
from llmdebate.formal.strategies import (
    BASIC_ESTIMATORS,
    PROVERS,
    OracleJudge,
    make_estimator,
    make_prover,
)
from llmdebate.formal.strategies.provers import RandomProver
from llmdebate.formal.strategy_files import TableProver


def _both(game: Game, monkeypatch: pytest.MonkeyPatch) -> tuple[np.ndarray, np.ndarray]:
    fast = montecarlo.simulate_prover_estimator(game, 3000, np.random.default_rng(4))
    with monkeypatch.context() as m:
        m.setattr(montecarlo, "_reads_drawn_rows", lambda prover: False)
        full = montecarlo.simulate_prover_estimator(game, 3000, np.random.default_rng(4))
    return fast, full


@pytest.mark.parametrize("variant", VARIANTS)
def test_drawn_rows_and_whole_view_agree_to_the_bit(
    variant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    prob = make_problem("majority", 2, 5, 12, 1, noise=0.1)
    for pv in PROVERS:
        for en in BASIC_ESTIMATORS:
            game = Game(
                prob,
                make_prover(pv, prob, 0.2),
                make_estimator(en, prob),
                OracleJudge(prob),
                0.2,
                0.5,
                variant,
            )
            fast, full = _both(game, monkeypatch)
            assert fast.tobytes() == full.tobytes(), (pv, en)


@pytest.mark.parametrize("variant", ["figure2", "marginal"])
def test_greedy_table_prover_reads_the_next_probability_in_both_paths(
    variant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    prob = make_problem("interval", 1, 2, 16, 0)
    judge = OracleJudge(prob)
    pr = TableProver(2, 1 - prob.top_truth(), judge=judge)
    game = Game(prob, pr, make_estimator("adversarial", prob), judge, 0.2, 0.5, variant)
    assert montecarlo._reads_drawn_rows(pr)
    fast, full = _both(game, monkeypatch)
    assert fast.tobytes() == full.tobytes()


def test_a_policy_reading_the_whole_view_gets_the_whole_view() -> None:
    class Viewer(RandomProver):
        def choose_rows(self, *args: object) -> object:  # type: ignore[override]
            raise AssertionError

    prob = make_problem("interval", 1, 2, 4, 0)
    assert not montecarlo._reads_drawn_rows(Viewer(prob))
    assert montecarlo._reads_drawn_rows(RandomProver(prob))
