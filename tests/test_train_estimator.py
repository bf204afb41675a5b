"""Expert iteration of the estimator: the cases a debate asks it about with their exact truth,
the Brier score against the base rate, a few LoRA steps on a tiny random model (built here,
no download) that lower the log-loss of the True/False answer, and the training device passed
to the local backends of the debates generated inside ``llmdebate train``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llmdebate.data.problems import divisor_truth, parse_divisor_claim
from llmdebate.elicit.prompts import TF_INSTRUCTION
from llmdebate.errors import UserError
from llmdebate.prompts import Prompts
from llmdebate.training.claims import draw_claims
from llmdebate.training.config import ExpertSettings, LoraSettings, TrainConfig
from llmdebate.training.estimate_eval import ANSWERS, brier_scores, estimate_cases, pairs

try:
    from tests.test_train_grpo import tiny_model
except ImportError:  # pytest run from inside tests/
    from test_train_grpo import tiny_model  # type: ignore[no-redef]

DIVISORS = Path(__file__).resolve().parent.parent / "datasets" / "divisors.jsonl"
EVERY = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def test_every_case_carries_its_exact_truth_under_the_estimate_prompt() -> None:
    claims = draw_claims(6, 5, (3000, 10000), [2], debate_like=True)
    cases = estimate_cases(Prompts(), claims, seed=0)
    assert len(cases) == 3 * len(claims)  # the claim alone, then its two subclaims
    for c in cases:
        parsed = parse_divisor_claim(c.claim)
        assert parsed is not None
        assert c.truth == divisor_truth(*parsed)
        assert c.prompt.endswith(f"{TF_INSTRUCTION}\n\nAnswer:")
        assert c.prompt.startswith("System: You estimate how likely statements are")
    first, second = cases[1], cases[2]
    assert "given only this, is subclaim 1 true?" in first.prompt
    assert "given that, is subclaim 2 true?" in second.prompt
    assert "- subclaim 1 is " in second.prompt
    # both truths occur, and the answer word is the truth's
    assert {c.truth for c in cases} == {0, 1}
    assert [a for _, a in pairs(cases)] == [ANSWERS[c.truth] for c in cases]
    # the stated outcomes come from the seed
    assert estimate_cases(Prompts(), claims, seed=0) == cases


def test_random_split_points_cut_every_claim_in_two_exact_parts() -> None:
    claims = draw_claims(40, 5, (100, 3000), [2], debate_like=True, splits="random")
    mids = set()
    for top, part in zip(claims[::2], claims[1::2], strict=True):
        # the second claim is one part of a split of the top claim, not always its half
        assert part.n == top.n and top.lo <= part.lo < part.hi <= top.hi
        assert part.lo == top.lo or part.hi == top.hi
        mids.add((part.hi if part.lo == top.lo else part.lo) - top.lo - (top.hi - top.lo) // 2)
    assert len(mids) > 3
    cases = estimate_cases(Prompts(), claims, seed=3, splits="random")
    leaves = sum(c.hi - c.lo < 2 for c in claims)
    assert len(cases) == 3 * len(claims) - 2 * leaves
    at = 0
    for c in claims:
        assert cases[at].claim == c.text
        if c.hi - c.lo < 2:  # a claim about one d: asked alone
            at += 1
            continue
        one, two = (parse_divisor_claim(x.claim) for x in cases[at + 1 : at + 3])
        assert one is not None and two is not None
        # two parts that tile the claim's interval, in its polarity, truths exact
        assert (one[1], two[2]) == (c.lo, c.hi) and one[2] == two[1]
        assert one[0] == two[0] == c.n and one[3] == two[3] == c.none
        truth = divisor_truth(c.n, c.lo, c.hi, c.none)
        combined = min(cases[at + 1].truth, cases[at + 2].truth) if c.none else max(
            cases[at + 1].truth, cases[at + 2].truth)
        assert combined == truth == cases[at].truth
        assert ("all 2 subclaims are true" if c.none else "at least one subclaim") in cases[
            at + 1].prompt
        at += 3
    assert estimate_cases(Prompts(), claims, seed=3, splits="random") == cases
    assert estimate_cases(Prompts(), claims, seed=4, splits="random") != cases


def test_brier_against_the_base_rate() -> None:
    truths = [1, 1, 1, 0]
    base = brier_scores([0.75] * 4, truths)
    assert base["brier"] == pytest.approx(0.1875) == base["brier_base_rate"]
    sharp = brier_scores([0.9, 0.8, 0.7, 0.2], truths)
    assert sharp["brier"] == pytest.approx((0.01 + 0.04 + 0.09 + 0.04) / 4)
    assert sharp["brier"] < sharp["brier_base_rate"] and sharp["accuracy"] == 1.0
    wrong = brier_scores([0.1, 0.1, 0.1, 0.9], truths)
    assert wrong["brier"] > wrong["brier_base_rate"] and wrong["accuracy"] == 0.0


def test_a_few_steps_lower_the_log_loss_of_the_answer(tmp_path: Path) -> None:
    from llmdebate.training.estimator_expert import estimator_iteration

    model = tiny_model(tmp_path / "tiny")
    s = ExpertSettings(train_claims=4, held_out_numbers_count=2, batch_size=4, epochs=4,
                       learning_rate=0.05, warmup_steps=0, eval_every=3,
                       held_out_loss_claims=4, evaluate=False, evaluate_before=False,
                       threads=1, lora=LoraSettings(r=8, alpha=32, target_modules=EVERY))
    prov = estimator_iteration(s, model, tmp_path / "out", prompts=Prompts(), seed=0,
                               progress=False)
    assert prov["train_cases"] == 12 and prov["held_out_cases"] == 12 and prov["steps"] == 12
    held = prov["held_out_loss"]
    # cross-entropy of the answer word's characters on the held-out cases, before and after
    assert len(held) == 5 and held[-1] < held[0] - 0.1, held
    steps = [json.loads(x)
             for x in (tmp_path / "out" / "estimator.jsonl").read_text().splitlines()]
    assert [e["step"] for e in steps if "loss" in e] == list(range(1, 13))
    assert (tmp_path / "out" / "adapter" / "adapter_model.safetensors").stat().st_size < 200_000
    assert (tmp_path / "out" / "learning-curve.png").stat().st_size > 10_000


def test_the_local_backend_takes_a_device(tmp_path: Path) -> None:
    from llmdebate.models.hf_backend import HFBackend

    model = tiny_model(tmp_path / "tiny")
    backend = HFBackend("hf/tiny", model, cache_dir=tmp_path, threads=1, device="cpu")
    backend.load()
    assert backend.device == "cpu"
    assert {str(p.device) for p in backend.model.parameters()} == {"cpu"}
    with pytest.raises(UserError, match=r"device must be cpu, cuda or cuda:<n> .*'tpu'"):
        HFBackend("hf/tiny", model, cache_dir=tmp_path, device="tpu")


def _experiment(model: Path) -> dict[str, Any]:
    return {
        "name": "e", "dataset": {"path": str(DIVISORS), "limit": 1},
        "debate": {"depth": 1, "width": 2},
        "prover": {"model": f"hf/{model}", "decomposer": "formal", "max_tokens": 4},
        "estimator": {"model": f"hf/{model}", "method": "logprobs"},
        "judge": {"kind": "oracle"},
    }


def test_the_debates_inside_train_run_on_the_training_device(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import llmdebate.training.loop as loop
    from llmdebate.models.get_model import release_local
    from llmdebate.models.hf_backend import HFBackend

    model = tiny_model(tmp_path / "tiny")
    cfg = TrainConfig(experiment=_experiment(model), device="auto", iterations=0)
    # a machine whose training device resolves to cuda: every local model of the debates
    # is asked for it (the run is not started: there is no GPU here)
    monkeypatch.setattr(loop, "_device", lambda device: "cuda")
    seen: list[Any] = []
    monkeypatch.setattr(loop, "run", lambda exp, *a, **k: seen.append(exp) or
                        pytest.fail("stop"))
    trainer = loop.Trainer(cfg, tmp_path / "gpu", progress=False)
    assert trainer.device == "cuda"
    with pytest.raises(pytest.fail.Exception):
        trainer.generate(0, 0)
    exp = seen[0]
    assert exp.prover.options["device"] == "cuda"
    assert exp.estimator.options["device"] == "cuda"
    assert exp.judge.options["device"] == "cuda"
    # a device the experiment names stays, and a hosted model gets none
    assert loop.on_device(exp.prover.model_copy(update={"options": {"device": "cuda:1"}}),
                          "cuda").options == {"device": "cuda:1"}
    hosted = exp.prover.model_copy(update={"model": "scripted", "options": {}})
    assert loop.on_device(hosted, "cuda").options == {}
    monkeypatch.undo()

    # a CPU-resolved training run generates its debates with backends built for the CPU
    built: list[str] = []
    init = HFBackend.__init__

    def recording(self: HFBackend, *a: Any, **k: Any) -> None:
        init(self, *a, **k)
        built.append(self.device)

    monkeypatch.setattr(HFBackend, "__init__", recording)
    release_local()
    trainer = loop.Trainer(TrainConfig(experiment=_experiment(model), device="cpu"),
                           tmp_path / "cpu", progress=False)
    run_dir = trainer.generate(0, 0)
    release_local()
    assert built and set(built) == {"cpu"}
    # the forward passes ran: the random model's answer has no True/False word, which is
    # the one failure of its debates
    failures = json.loads((run_dir / "summary.json").read_text())["failures"]["debates"]
    assert failures and all("no True/False token among the top logprobs" in f["reason"]
                            for f in failures)


def test_the_shipped_estimator_adapter_is_small_documented_and_default_only_if_it_helps(
) -> None:
    import yaml

    from llmdebate.models.hf_backend import adapter_path

    root = Path(__file__).resolve().parent.parent
    folder = adapter_path("divisors-estimator")
    assert sum(p.stat().st_size for p in folder.iterdir()) < 5_000_000
    prov = json.loads((folder / "provenance.json").read_text())
    assert "--config configs/train-estimator.yaml" in prov["command"]
    before, after = prov["held_out"]["before"], prov["held_out"]["after"]
    assert before["cases"] == after["cases"] == prov["held_out_cases"] > 0
    # the default only where it beats the base rate on held-out claims and does not make
    # the main job's own estimates (summary.json "estimates", recorded) worse than the base
    # model's; on the dataset's own numbers (benchmarks/bench_estimator_dataset.py) it must
    # beat the base rate too
    main_job = prov["main_job"]["summary_estimates"]
    own = prov["dataset_claims"]
    assert own["adapter"]["cases"] == own["base_model"]["cases"] > 0
    helps = (after["brier"] < after["brier_base_rate"]
             and main_job["adapter"]["brier"] <= main_job["base_model"]["brier"]
             and own["adapter"]["brier"] < own["adapter"]["brier_base_rate"])
    main = yaml.safe_load((root / "configs" / "local-divisors.yaml").read_text())
    uses = (main["estimator"].get("options") or {}).get("adapter") == "divisors-estimator"
    assert uses == helps
    config = json.loads((folder / "adapter_config.json").read_text())
    assert "/" not in config["base_model_name_or_path"]


def test_adapters_in_the_top_layers_only_over_two_rounds(tmp_path: Path) -> None:
    from safetensors import safe_open

    from llmdebate.training.estimator_expert import estimator_iteration

    model = tiny_model(tmp_path / "tiny")
    s = ExpertSettings(train_claims=2, held_out_numbers_count=1, batch_size=4, max_steps=1,
                       rounds=2, train_shape="debate", held_out_loss_claims=0, evaluate=False,
                       evaluate_before=False, threads=1,
                       lora=LoraSettings(target_modules=EVERY, layers=[1]))
    prov = estimator_iteration(s, model, tmp_path / "out", prompts=Prompts(), seed=0,
                               progress=False)
    # round 1: fresh claims, going on from round 0's adapter
    assert prov["train_cases"] == 24 and prov["steps"] == 2 and prov["rounds"] == 2
    assert (tmp_path / "out" / "round-0" / "adapter_model.safetensors").exists()
    adapter = tmp_path / "out" / "adapter"
    with safe_open(str(adapter / "adapter_model.safetensors"), "pt") as f:
        keys = list(f.keys())
    assert keys and all(".layers.1." in k for k in keys), keys
    assert json.loads((adapter / "adapter_config.json").read_text())["layers_to_transform"] == [1]
