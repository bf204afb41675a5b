"""Nothing is made or loaded for a role that none of a run's protocols plays."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from llmdebate.experiment.loading import validate
from llmdebate.experiment.runner import run

try:
    from tests.fixtures import tournament_players
except ImportError:  # pytest run from inside tests/
    sys.path.insert(0, str(Path(__file__).parent))
    from fixtures import tournament_players  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parents[1]


def config(**over: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "lazy",
        "protocols": ["two-sided"],
        "dataset": {"path": str(REPO / "datasets" / "divisors.jsonl"), "limit": 1},
        "judge": tournament_players.judge_settings(),
        "tournament": {"roster": {n: tournament_players.player(n) for n in ("strong", "random")}},
    }
    data.update(over)
    return data


@pytest.mark.parametrize(
    ("over", "roles"),
    [
        ({}, {"judge", "roster/strong", "roster/random"}),
        ({"tournament": {}}, {"prover", "judge"}),
        ({"protocols": ["direct"], "tournament": {}}, {"judge"}),
        ({"protocols": ["naive-recursive"], "tournament": {}}, {"prover", "estimator", "judge"}),
        (
            {"protocols": ["consultancy"], "tournament": {},
             "seats": {"consultant": {"model": "scripted"}}},
            {"judge", "seat/consultant"},
        ),
        (
            {"protocols": ["consultancy"], "tournament": {}, "prover": {"best_of": 2}},
            {"prover", "estimator", "judge"},
        ),
    ],
)
def test_only_the_roles_a_run_plays_get_a_model(over: dict[str, Any], roles: set[str]) -> None:
    assert set(validate(config(**over)).role_settings()) == roles


def test_a_roster_run_never_loads_the_unused_embedded_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from llmdebate.models.hf_backend import HFBackend

    def refuse(self: HFBackend) -> None:
        raise AssertionError("the embedded model was loaded for a role no debate plays")

    monkeypatch.setattr(HFBackend, "load", refuse)
    monkeypatch.setattr(HFBackend, "__init__", refuse)
    cfg = validate(config())  # prover and estimator: the default, the embedded model
    assert cfg.prover.model == "local" and cfg.estimator.model == "local"
    result = run(cfg, run_dir=tmp_path / "r", progress=False)
    assert result.summary["status"] == {"complete": 2}  # two orders of one pairing
