"""``llmdebate attack``: the searched estimator breaks completeness under the marginal
variants and not under Figure 2; the exact best-response prover; strategy files replay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmdebate.cli import main
from llmdebate.formal.attack import AttackSpec, run_attack
from llmdebate.formal.attack_estimator import SearchBudget
from llmdebate.formal.evaluate import evaluate

MAJORITY = [
    "--problem",
    "majority",
    "--depth",
    "1",
    "--width",
    "5",
    "--epsilon",
    "0.2",
    "--rho",
    "0.5",
]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def attack(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    code, out, err = run(capsys, "attack", *args, "--json")
    assert code == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


def replay(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    code, out, err = run(capsys, "formal", *args, "--json")
    assert code == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


def test_marginal_variant_attack_breaks_completeness_and_replays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "b.json"
    res = attack(
        capsys, "--target", "completeness", *MAJORITY, "--variant", "marginal", "--out", str(out)
    )
    assert res["below_bound"] is True and res["bound_normalized"] == pytest.approx(0.8)
    assert res["normalized_payoff"] < 0.8 - 1.0  # far below, not a rounding effect
    rep = replay(capsys, "--estimator-file", str(out), "--prover", "honest")
    assert rep["normalized_payoff"] == res["normalized_payoff"]  # the very same number
    assert rep["variant"] == "marginal" and rep["instances"] == res["instances_used"]
    doc = json.loads(out.read_text())
    joints = [t["joint"] for t in doc["tables"]]
    assert joints and all(abs(sum(j) - 1) < 1e-9 for j in joints)
    # correlated: some table is not the product of its marginals
    assert any(_not_product(j, 5) for j in joints)


def _not_product(joint: list[float], q: int) -> bool:
    marg = [sum(p for t, p in enumerate(joint) if t >> (q - 1 - i) & 1) for i in range(q)]
    for t, p in enumerate(joint):
        prod = 1.0
        for i in range(q):
            prod *= marg[i] if t >> (q - 1 - i) & 1 else 1 - marg[i]
        if abs(prod - p) > 1e-6:
            return True
    return False


@pytest.mark.parametrize("variant", ["figure2", "independent"])
def test_same_budget_finds_no_estimator_below_lemma_a5_under_figure2(
    variant: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "b.json"
    res = attack(capsys, *MAJORITY, "--variant", variant, "--out", str(out))
    assert res["below_bound"] is False
    assert res["min_instance_normalized"] >= 0.8 - 1e-9
    rep = replay(capsys, "--estimator-file", str(out))
    assert rep["normalized_payoff"] == res["normalized_payoff"]


def test_honest_prover_without_dead_zone_survives_the_marginal_attack(tmp_path: Path) -> None:
    spec = AttackSpec(variant="marginal", prover="honest-no-dead-zone", depth=1, width=5)
    res = run_attack(spec, tmp_path / "b.json")
    assert res["min_instance_normalized"] >= 0.8
    dz = run_attack(AttackSpec(variant="marginal", depth=1, width=5), tmp_path / "c.json")
    assert dz["min_instance_normalized"] < 0.8 < res["min_instance_normalized"]


def test_search_is_seeded(tmp_path: Path) -> None:
    spec = AttackSpec(variant="commit", budget=SearchBudget(evaluations=128, seed=3))
    a = run_attack(spec, tmp_path / "a.json")
    b = run_attack(spec, tmp_path / "b.json")
    assert a["normalized_payoff"] == b["normalized_payoff"]
    assert (tmp_path / "a.json").read_text() == (tmp_path / "b.json").read_text()


@pytest.mark.parametrize("variant", ["figure2", "commit-marginal"])
def test_best_response_prover_is_exact_and_beats_the_built_ins(
    variant: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "a.json"
    setting = [
        "--problem",
        "interval",
        "--depth",
        "1",
        "--width",
        "2",
        "--epsilon",
        "0.45",
        "--rho",
        "0.1",
        "--instances",
        "16",
        "--variant",
        variant,
    ]
    res = attack(capsys, "--target", "soundness", *setting, "--out", str(out))
    assert res["search"]["dp_normalized"] == pytest.approx(res["normalized_payoff"], rel=1e-12)
    est_file = str(res["estimator_file"])
    rep = replay(capsys, "--prover-file", str(out), "--estimator-file", est_file)
    assert rep["normalized_payoff"] == res["normalized_payoff"]
    assert rep["prover_accuracy"] == 0.0  # a wrong answer throughout
    for name in ("dishonest", "last-index"):  # the same B, a built-in wrong prover
        other = replay(capsys, "--prover", name, "--estimator-file", est_file)
        assert other["normalized_payoff"] <= res["normalized_payoff"] + 1e-9


def test_best_response_against_a_named_estimator(tmp_path: Path) -> None:
    spec = AttackSpec(
        target="soundness",
        problem="interval",
        depth=2,
        width=2,
        instances=8,
        estimator="calibrated-ignorant",
        epsilon=0.2,
        rho=0.5,
    )
    res = run_attack(spec, tmp_path / "p.json")
    from llmdebate.formal.strategy_files import read_strategy

    sf = read_strategy(str(tmp_path / "p.json"), "prover", "--prover-file")
    rep = evaluate(
        protocol="prover-estimator",
        problem="interval",
        prover="honest",
        estimator="calibrated-ignorant",
        epsilon=0.2,
        rho=0.5,
        depth=2,
        width=2,
        instances=8,
        seed=0,
        prover_policy=sf.policy,  # type: ignore[arg-type]
    )
    assert rep["expected_payoff"] == res["expected_payoff"]
    dishonest = evaluate(
        protocol="prover-estimator",
        problem="interval",
        prover="dishonest",
        estimator="calibrated-ignorant",
        epsilon=0.2,
        rho=0.5,
        depth=2,
        width=2,
        instances=8,
        seed=0,
    )
    assert res["expected_payoff"] >= dishonest["expected_payoff"] - 1e-15


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["formal", "--estimator-file", "/nonexistent.json"], "--estimator-file"),
        (["formal", "--prover-file", "{est}"], "field 'kind' must be 'prover'"),
        (["formal", "--estimator-file", "{est}", "--depth", "3"], "--depth 3 disagrees"),
        (["attack", "--prover", "nobody"], "--prover must be one of"),
        (["attack", "--problem", "interval", "--depth", "1", "--width", "2"], "no instance"),
    ],
)
def test_bad_input_is_one_line(
    args: list[str], needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    est = tmp_path / "e.json"
    run_attack(AttackSpec(budget=SearchBudget(evaluations=64)), est)
    argv = [a.replace("{est}", str(est)) for a in args]
    if argv[0] == "attack":
        argv += ["--out", str(tmp_path / "x.json")]
    code, _out, err = run(capsys, *argv)
    assert code == 2 and needle in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_best_uninformed_liar_earns_one_half_under_figure2_and_nothing_under_marginal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Obfuscation at d=1, q=2: a prover that cannot factor N and defends 'prime' earns 1/2
    under Figure 2 (more than the 1/4 of the fixed-index prover), 0 under `marginal`."""
    base = [
        "--target",
        "soundness",
        "--problem",
        "interval",
        "--depth",
        "1",
        "--width",
        "2",
        "--instances",
        "16",
        "--estimator",
        "calibrated-ignorant",
        "--uninformed",
    ]
    got = {}
    for variant in ("figure2", "marginal"):
        out = tmp_path / f"{variant}.json"
        res = attack(capsys, *base, "--variant", variant, "--out", str(out))
        got[variant] = res["expected_payoff"]
        rep = replay(capsys, "--prover-file", str(out), "--estimator", "calibrated-ignorant")
        assert rep["expected_payoff"] == pytest.approx(res["expected_payoff"], abs=1e-15)
    assert got["figure2"] == pytest.approx(0.5, abs=1e-12)
    assert got["marginal"] == pytest.approx(0.0, abs=1e-12)
    informed = attack(capsys, *base[:-1], "--variant", "figure2", "--out", str(tmp_path / "i.json"))
    assert informed["expected_payoff"] >= got["figure2"]


def test_uninformed_needs_an_instance_independent_estimator(tmp_path: Path) -> None:
    from llmdebate.errors import ConfigError

    spec = AttackSpec(
        target="soundness",
        problem="interval",
        depth=1,
        width=2,
        instances=16,
        estimator="omniscient",
        uninformed=True,
    )
    with pytest.raises(ConfigError, match=r"depend on the instance|same everywhere"):
        run_attack(spec, tmp_path / "x.json")


def test_prover_search_beyond_the_exact_limit_is_a_seeded_restriction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from llmdebate.formal import attack_prover

    spec = AttackSpec(
        target="soundness",
        problem="interval",
        depth=2,
        width=3,
        instances=8,
        estimator="calibrated-ignorant",
        epsilon=0.2,
        rho=0.5,
    )
    exact = run_attack(spec, tmp_path / "e.json")
    assert exact["search"]["exact"] is True
    monkeypatch.setattr(attack_prover, "MAX_ROWS", 2000)
    capped = run_attack(spec, tmp_path / "c.json")
    assert capped["search"]["exact"] is False and capped["search"]["restricted"]
    # a restricted prover is still a prover: replayed exactly, never above the exact optimum
    assert capped["normalized_payoff"] <= exact["normalized_payoff"] + 1e-9
    assert capped["search"]["dp_normalized"] <= capped["normalized_payoff"] + 1e-9
    again = run_attack(spec, tmp_path / "d.json")
    assert again["normalized_payoff"] == capped["normalized_payoff"]  # seeded


def test_the_text_output_names_the_file_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["attack", "--budget", "16", "--population", "4", "--instances", "4"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == f"wrote the estimator's strategy: {tmp_path / 'attack.json'}"
    assert (tmp_path / "attack.json").is_file()
    assert "{" not in out
