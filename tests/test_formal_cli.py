"""``llmdebate formal`` and ``llmdebate reproduce`` from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmdebate.cli import main
from llmdebate.core.scoring import completeness_bound, reward_ratio

FIELDS = {
    "protocol",
    "problem",
    "prover",
    "estimator",
    "epsilon",
    "rho",
    "depth",
    "width",
    "reward_ratio",
    "expected_payoff",
    "payoff_stderr",
    "normalized_payoff",
    "completeness_bound",
    "prover_accuracy",
}


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_formal_json_exact(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "formal",
        "--problem",
        "interval",
        "--prover",
        "honest",
        "--depth",
        "2",
        "--width",
        "3",
        "--json",
    )
    assert code == 0
    res = json.loads(out)
    assert set(res) >= FIELDS
    r = reward_ratio(0.2, 0.5)
    assert res["payoff_stderr"] == 0 and res["prover_accuracy"] == 1.0
    assert res["normalized_payoff"] == pytest.approx(res["expected_payoff"] / r**3)
    assert res["completeness_bound"] == pytest.approx(completeness_bound(0.2, r, 2))
    # beside normalized_payoff, in its unit (r^(d+1)): Lemma A.5's 1 - epsilon
    assert res["normalized_completeness_bound"] == pytest.approx(1 - 0.2)
    assert res["normalized_payoff"] >= res["normalized_completeness_bound"]


def test_formal_json_naive_monte_carlo(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "formal",
        "--protocol",
        "naive-recursive",
        "--prover",
        "dishonest",
        "--depth",
        "2",
        "--width",
        "3",
        "--samples",
        "5000",
        "--json",
    )
    res = json.loads(out)
    assert code == 0 and res["payoff_stderr"] > 0
    assert 0.8 < res["prover_win_rate"] <= 1.0 and res["prover_accuracy"] == 0.0
    assert res["normalized_payoff"] is None and res["completeness_bound"] is None
    assert res["normalized_completeness_bound"] is None


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--epsilon", "0.7"], "epsilon"),
        (["--rho", "1.5"], "rho"),
        (["--depth", "-1"], "depth"),
        (["--prover", "bob"], "prover must be one of"),
        (["--estimator", "x"], "estimator must be one of"),
        (["--problem", "sudoku"], "problem must be one of"),
        (["--instances", "0"], "instances"),
        (["--depth", "250"], "depth must be <= 186 at epsilon=0.2, rho=0.5 (got 250)"),
        (["--width", "17"], "width must be <= 16"),
        (["--exact", "--samples", "100"], "--exact and --samples exclude each other"),
        (
            ["--exact", "--prover", "random", "--depth", "6", "--width", "6"],
            "exact enumeration is infeasible here",
        ),
    ],
)
def test_formal_bad_input(capsys: pytest.CaptureFixture[str], args: list[str], needle: str) -> None:
    code, _out, err = run(capsys, "formal", *args)
    assert code != 0 and needle in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_reproduce_writes_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = run(capsys, "reproduce", "--out", str(tmp_path))
    assert code == 0
    steps = err.strip().splitlines()  # a line as each section is done
    assert [line.split(":")[0] for line in steps] == [
        "[1/7] completeness", "[2/7] obfuscation", "[3/7] soundness", "[4/7] attacks",
        "[5/7] proof audit", "[6/7] stability", "[7/7] correlation"]
    assert all(" rows in " in line and "s so far)" in line for line in steps)
    table = json.loads((tmp_path / "reproduction.json").read_text())
    sections = {r["section"] for r in table["rows"]}
    assert sections == {"completeness", "obfuscation", "soundness", "attack", "proof", "stability"}
    assert set(table["summary"]) == {
        "figure2",
        "marginal",
        "independent",
        "commit",
        "commit-marginal",
    }
    text = (tmp_path / "reproduction.md").read_text()
    assert "| variant | check |" in text and "Generated in" not in text
    docs = Path(__file__).resolve().parents[1] / "docs"
    for name in ("reproduction.md", "reproduction.json"):  # the shipped files, byte for byte
        assert (tmp_path / name).read_bytes() == (docs / name).read_bytes(), name


def test_formal_exact_flag_and_variant(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["formal", "--problem", "interval", "--prover", "last-index", "--depth", "1"]
    code, out, _ = run(capsys, *args, "--width", "2", "--instances", "16", "--exact", "--json")
    res = json.loads(out)
    assert code == 0 and res["method"] == "exact" and res["expected_payoff"] == 0.25
    code, out, _ = run(
        capsys,
        *args,
        "--width",
        "2",
        "--instances",
        "16",
        "--variant",
        "commit-marginal",
        "--json",
    )
    res = json.loads(out)
    assert code == 0 and res["variant"] == "commit-marginal" and res["expected_payoff"] == 0.0


def test_formal_text_is_rounded_and_aligned(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "formal", "--problem", "majority", "--estimator", "adversarial",
                       "--depth", "2", "--width", "3")
    assert code == 0
    lines = out.splitlines()
    values = dict(line.split(None, 1) for line in lines)
    assert values["normalized_payoff"] == "19252.3"  # 19252.309599999993 in --json
    assert values["completeness_bound"] == "1.25e-05"
    starts = {len(line) - len(line.split(None, 1)[1]) for line in lines}
    assert len(starts) == 1  # every value in one column


def test_text_lines_nest_dicts_and_name_none() -> None:
    from llmdebate.commands.formal import text_lines

    lines = text_lines({"a": 0.30081733749999995, "exact": {"breaks": False, "margins": [0.1,
                        1e-06]}, "long_name": None})
    assert lines == ["a          0.300817", "exact:", "  breaks   no",
                     "  margins  0.1, 1e-06", "long_name  none"]
    assert not any("{" in line or "'" in line for line in lines)


def test_reproduce_quiet_prints_no_progress(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import llmdebate.commands.reproduce as command

    heard: list[object] = []

    def write(out: Path, say: object = None) -> tuple[Path, Path, dict[str, object]]:
        heard.append(say)
        return out / "r.md", out / "r.json", {"rows": []}

    monkeypatch.setattr(command, "write", write)
    code, out, err = run(capsys, "reproduce", "--out", str(tmp_path), "--quiet")
    assert code == 0 and heard == [None] and err == "" and out.startswith("wrote ")
