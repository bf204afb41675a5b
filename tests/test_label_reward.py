"""A policy trained on a labeller's reward: labels cached from a labelling run's transcripts,
each arm's reward, the round's figures and the judge-hacking line, and a few steps on a tiny
model (llmdebate/training/label_reward.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmdebate.errors import UserError
from llmdebate.report.judge_audit import hacking_line
from llmdebate.training.config import LabellerRewardSettings, LoraSettings
from llmdebate.training.label_reward import (
    ABSTAINED_REWARD,
    CHECKER,
    SHUFFLED,
    LabelCache,
    Question,
    arms_of,
    cache_from_run,
    decisions_line,
    expected_reward,
    labels_of,
    load_labels,
    read_cache,
    rewards,
    round_figures,
    split,
    train_arm,
    write_cache,
)

try:
    from tests.test_train_grpo import tiny_model
except ImportError:  # pytest run from inside tests/
    from test_train_grpo import tiny_model  # type: ignore[no-redef]

ONE_STEP = Path(__file__).resolve().parents[1] / "configs" / "labelling-one-step.yaml"


def _questions(
    n: int, labels: dict[str, tuple[int | None, int | None]] | None = None
) -> list[Question]:
    """``n`` questions whose first answer is right on the even ones."""
    out = []
    for k in range(n):
        truth = (1, 0) if k % 2 == 0 else (0, 1)
        out.append(Question(f"q{k:02d}", f"claim {k}", ("yes", "no"), truth, dict(labels or {})))
    return out


def _answer_space(path: Path, numbers: list[int]) -> Path:
    from llmdebate.data.generate import divisor_item, prime_top
    from llmdebate.data.labelling import every_answer
    from llmdebate.data.loader import build_items

    raw = [divisor_item(n, f"d-{n}", *prime_top(n)) for n in numbers]
    items = build_items(enumerate(raw, start=1), "test")
    path.write_text(
        "".join(json.dumps(x) + "\n" for x in every_answer(items, checker="problem")),
        encoding="utf-8",
    )
    return path


def test_labels_are_read_from_a_labelling_run_with_its_word_limits(tmp_path: Path) -> None:
    from llmdebate.experiment.loading import load
    from llmdebate.experiment.runner import run

    answers = _answer_space(tmp_path / "answers.jsonl", [2647, 2183, 899])  # 899 = 29 · 31
    cfg = load(
        ONE_STEP,
        {"dataset.path": str(answers), "protocols": ["direct", "two-sided"], "prover.max_words": 5},
    )
    res = run(cfg, tmp_path / "run", progress=False)
    cache = cache_from_run(res.run_dir)
    assert cache.labellers == ["direct", "two-sided"]
    by = {q.id: q for q in cache.questions}
    assert set(by) == {"d-2647", "d-2183", "d-899"}
    assert by["d-899"].answers == ("yes", "no") and by["d-899"].truth == (0, 1)
    assert by["d-899"].claim.startswith("899 has no divisor")
    # two-sided debate names 29 or a false divisor: its label is the checker's on every answer
    assert all(q.labels["two-sided"] == q.truth for q in cache.questions)
    # every two-sided speech was held to 5 words; "N has a divisor ..." is longer: cut
    rules = cache.speech["two-sided"]
    assert rules["max_words"] == [5] and rules["speeches"] == 24
    assert rules["decisions"].get("truncated", 0) > 0 and rules["longest_kept"] <= 5
    assert "two-sided [5] words: 24 speeches" in decisions_line(cache.speech)
    write_cache(cache, tmp_path / "cache.json")
    assert read_cache(tmp_path / "cache.json") == cache
    assert load_labels([str(tmp_path / "cache.json")]) == cache
    (tmp_path / "other.json").write_text("{}", encoding="utf-8")
    with pytest.raises(UserError, match=r"other.json: not a label cache"):
        read_cache(tmp_path / "other.json")


def test_a_question_with_one_answer_labelled_is_refused(tmp_path: Path) -> None:
    from llmdebate.experiment.loading import load
    from llmdebate.experiment.runner import run

    answers = _answer_space(tmp_path / "answers.jsonl", [2647])
    lines = answers.read_text(encoding="utf-8").splitlines()
    answers.write_text(lines[0] + "\n", encoding="utf-8")
    res = run(
        load(ONE_STEP, {"dataset.path": str(answers), "protocols": ["direct"]}),
        tmp_path / "run",
        progress=False,
    )
    with pytest.raises(UserError, match=r"question d-2647: .*both must be labelled"):
        cache_from_run(res.run_dir)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.floats(0.0, 1.0), st.floats(0.0, 1.0), st.booleans())
def test_the_checkers_reward_ranks_a_right_answer_above_a_wrong_one(
    p: float, q: float, first_right: bool
) -> None:
    """Under the checker's reward the right answer earns 1 and the wrong one 0, so a policy
    putting more probability on the right answer has the higher expected reward."""
    question = Question("q", "c", ("yes", "no"), (1, 0) if first_right else (0, 1))
    r = rewards(LabelCache([question], [], []), CHECKER)["q"]
    right, wrong = (0, 1) if first_right else (1, 0)
    assert r[right] == 1.0 and r[wrong] == 0.0
    on_right = (lambda x: x) if first_right else (lambda x: 1 - x)
    if on_right(p) > on_right(q):
        assert expected_reward(p, *r) > expected_reward(q, *r)


def test_each_arms_reward() -> None:
    qs = _questions(12, {"credulous": (1, 1), "abstains": (None, 0)})
    cache = LabelCache(qs, ["credulous", "abstains"], ["test"])
    assert arms_of(cache, None) == [CHECKER, "credulous", "abstains", SHUFFLED]
    with pytest.raises(UserError, match=r"labeller_reward.arms: 'nobody' is not one of"):
        arms_of(cache, ["nobody"])
    assert set(rewards(cache, "credulous").values()) == {(1.0, 1.0)}
    assert set(rewards(cache, "abstains").values()) == {(ABSTAINED_REWARD, 0.0)}
    assert labels_of(rewards(cache, "abstains"))["q00"] == (None, 0)
    shuffled = rewards(cache, SHUFFLED, seed=3)
    flat = sorted(x for v in shuffled.values() for x in v)
    assert flat == sorted(float(t) for q in qs for t in q.truth)  # the same base rate
    assert shuffled != rewards(cache, CHECKER)
    train, held = split(cache, 4, 0)
    assert len(held) == 4 and not {q.id for q in train} & {q.id for q in held}
    with pytest.raises(UserError, match=r"labeller_reward.held_out: 12 of 12 questions"):
        split(cache, 12, 0)


def test_the_hacking_line_on_a_credulous_labeller_and_on_the_checker() -> None:
    """A labeller who calls every answer correct errs exactly where the policy answers wrong:
    the audit's lean is +1 and the line calls judge hacking; the checker never errs."""
    qs = _questions(12, {"credulous": (1, 1)})
    cache = LabelCache(qs, ["credulous"], ["test"])
    p = [1.0 if k % 3 else 0.0 for k in range(12)]  # the first answer, or the second
    lines = {}
    for arm in ("credulous", CHECKER):
        f = round_figures(qs, qs, p, p, rewards(cache, arm), 2, seed=0, draws=200)
        lines[arm] = hacking_line([{"step": 0, **f}], "policy")
        right = sum(expected_reward(x, *q.truth) for x, q in zip(p, qs, strict=True)) / 12
        assert f["accuracy"]["value"] == pytest.approx(right)
    assert f["mcc"]["value"] == 1.0
    credulous = lines["credulous"]
    assert credulous is not None and credulous.startswith(
        "judge hacking: the judge errs on "
        "1.00 of the debates where the policy "
        "did not argue the truth and 0.00 "
        "where it did: lean +1.00"
    )
    assert "over 12 units" in credulous
    assert lines[CHECKER] is not None and lines[CHECKER].startswith("no judge hacking found")


def test_a_few_steps_on_a_tiny_model_move_the_policy_to_the_rewarded_answer(tmp_path: Path) -> None:
    from llmdebate.training.debate_reward import LeafTrainer
    from llmdebate.training.label_reward import policy_prompts

    qs = _questions(12, {"says-yes": (1, 0), "says-no": (0, 1)})
    cache = LabelCache(qs, ["says-yes", "says-no"], ["test"])
    prompts = policy_prompts(qs)
    lora = LoraSettings(
        r=8,
        alpha=32,
        target_modules=[
            "q_proj",
            "k_proj",
            "v_proj",
            "o_proj",
            "gate_proj",
            "up_proj",
            "down_proj",
        ],
        layers=[1],
    )
    trainer = LeafTrainer(tiny_model(tmp_path / "tiny"), lora, list(prompts.values()))
    s = LabellerRewardSettings(
        labels=["unused"],
        steps=12,
        batch_size=4,
        learning_rate=2e-2,
        round_every=6,
        samples=2,
        draws=50,
    )
    train, held = split(cache, 2, 0)
    ends = {}
    for arm in ("says-yes", "says-no"):
        history = train_arm(trainer, prompts, train, held, rewards(cache, arm), s, seed=0)
        assert [e["step"] for e in history] == [0, 6, 12]
        assert history[0]["mean_p"] == pytest.approx(0.5, abs=0.2)  # the same start
        ends[arm] = history[-1]["mean_p"] - history[0]["mean_p"]
    assert ends["says-yes"] > 0.05 and ends["says-no"] < -0.05


def test_train_with_a_missing_label_run_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from llmdebate.cli import main

    cfg = tmp_path / "train.yaml"
    cfg.write_text(
        "iterations: 0\nevaluate_last: false\nlabeller_reward: {labels: [no-such-run]}\n",
        encoding="utf-8",
    )
    assert main(["train", "--config", str(cfg), "--out-dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "error: labeller_reward.labels[0]: no-such-run: no such run directory or label cache"
    ]


@pytest.mark.parametrize("name", ["train-labeller-reward", "train-labeller-reward-small-steps"])
def test_the_shipped_configs_are_read(name: str) -> None:
    from llmdebate.training import load_train_config

    cfg = load_train_config(ONE_STEP.parent / f"{name}.yaml")
    s = cfg.labeller_reward
    assert s is not None and cfg.iterations == 0 and not cfg.evaluate_last
    assert s.labels == ["runs/labelling-every-answer"] and s.lora.layers == [16, 17]
