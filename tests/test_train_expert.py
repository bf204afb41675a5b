"""Expert iteration on decompositions: claims drawn apart from the debates, the exact split as
the grader sees it, rows drawn across decisions, and a few LoRA steps on a tiny random model
(built here, no download) that lower the loss of the exact split and load back through the
local backend as an adapter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmdebate.errors import UserError
from llmdebate.prompts import Prompts
from llmdebate.training.claims import (
    IntervalClaim,
    check_apart,
    dataset_numbers,
    draw_claims,
    exact_reply,
)
from llmdebate.training.config import ExpertSettings, LoraSettings
from llmdebate.training.decompose_eval import decompose_prompt, grade
from llmdebate.training.expert import claim_sets
from llmdebate.training.update import draw_rows

try:
    from tests.test_train_grpo import tiny_model
except ImportError:  # pytest run from inside tests/
    from test_train_grpo import tiny_model  # type: ignore[no-redef]

DIVISORS = Path(__file__).resolve().parent.parent / "datasets" / "divisors.jsonl"


def test_the_claim_sets_are_apart_from_each_other_and_the_debates() -> None:
    train, held_out = claim_sets(ExpertSettings(train_claims=50, held_out_numbers_count=10))
    debate = dataset_numbers(DIVISORS)
    assert len(debate) == 30
    assert len(held_out) == 20 and len(train) == 50
    assert not {c.n for c in train} & {c.n for c in held_out}
    assert not ({c.n for c in train} | {c.n for c in held_out}) & debate
    # the same seeds draw the same claims; the held-out ones are the debates' own kind
    again, _ = claim_sets(ExpertSettings(train_claims=50, held_out_numbers_count=10))
    assert again == train
    assert all(c.lo == 2 for c in held_out[::2])


def test_the_debate_shape_and_overlapping_ranges_keep_the_sets_apart() -> None:
    # training numbers from the held-out range: drawn past the held-out and debate numbers
    s = ExpertSettings(train_claims=300, held_out_numbers_count=60, train_shape="debate",
                       train_numbers=(100, 1000), held_out_numbers=(100, 1000))
    train, held_out = claim_sets(s)
    debate = dataset_numbers(DIVISORS)
    assert len(train) == 600 and len(held_out) == 120
    assert not {c.n for c in train} & ({c.n for c in held_out} | debate)
    assert not {c.n for c in held_out} & debate
    # the debate shape: the top claim [2, top) then one of its halves, for every number
    for top, half in zip(train[::2], train[1::2], strict=True):
        assert top.n == half.n and top.lo == 2
        mid = top.lo + (top.hi - top.lo) // 2
        assert (half.lo, half.hi) in ((top.lo, mid), (mid, top.hi))
    # the random shape is the default, as the prover's adapter was trained
    assert ExpertSettings().train_shape == "random"


def test_excluded_numbers_are_passed_over_without_moving_the_claims_before_them() -> None:
    full = draw_claims(30, 2, (100, 3000), [2], debate_like=True)
    skip = full[20].n
    cut = draw_claims(30, 2, (100, 3000), [2], debate_like=True, exclude={skip})
    assert cut[:20] == full[:20] and skip not in {c.n for c in cut}
    with pytest.raises(UserError, match="fewer than 3 numbers"):
        draw_claims(3, 0, (10, 13), [2], debate_like=False, exclude={11})



def test_the_dataset_law_draws_as_the_dataset_was_drawn_apart_from_it() -> None:
    from llmdebate.data.generate import divisor_items, primes_in

    # datasets/divisors.jsonl is what divisor_items writes: half primes, half p * q
    written = [json.loads(line) for line in DIVISORS.read_text().splitlines()]
    assert [i["meta"]["n"] for i in written] == [i["meta"]["n"] for i in divisor_items()]
    small = set(primes_in(7, 60))
    s = ExpertSettings(number_law="dataset", train_claims=60, held_out_numbers_count=50,
                       train_shape="debate", train_numbers=(100, 3000))
    train, held_out = claim_sets(s)
    debate = dataset_numbers(DIVISORS)
    for claims in (train, held_out):
        numbers = [c.n for c in claims[::2]]
        primes = numbers[::2]
        products = numbers[1::2]
        assert all(all(n % d for d in range(2, n)) and 100 <= n < 3000 for n in primes)
        assert all(any(n % p == 0 and n // p in small for p in small) and n >= 100
                   for n in products)
        assert not set(numbers) & debate
    assert not {c.n for c in train} & {c.n for c in held_out}
    assert claim_sets(s) == (train, held_out)
    # 14 primes in [7, 60) give 102 products of at least 100; 15 are the dataset's, 25 held out
    with pytest.raises(UserError, match="62 products of two primes to draw from, 63 needed"):
        claim_sets(s.model_copy(update={"train_claims": 126}))
    # the uniform law's draws are unchanged by the law's option (the prover's adapter's claims)
    assert draw_claims(5, 3, (100, 3000), [2], debate_like=False) == draw_claims(
        5, 3, (100, 3000), [2], debate_like=False, law="uniform", factors=(11, 13))

def test_a_shared_number_is_refused() -> None:
    n = sorted(dataset_numbers(DIVISORS))[0]
    claim = IntervalClaim(n, 2, 10, True, 2)
    with pytest.raises(UserError, match="held-out and debate"):
        check_apart([], [claim], {n})
    with pytest.raises(UserError, match="training and held-out"):
        check_apart([claim], [claim], set())


@pytest.mark.parametrize("width", [2, 3])
def test_the_expert_reply_is_graded_exact(width: int) -> None:
    for claim in draw_claims(20, 5, (3000, 10000), [width], debate_like=False):
        row = grade(claim, exact_reply(claim))
        assert row["valid"] and row["exact_split"] and row["rule_right"], row
        prompt = decompose_prompt(Prompts(), claim)
        assert prompt.endswith(f"Claim: {claim.text}\n\nAnswer:")


def test_the_base_model_mistake_is_graded_wrong() -> None:
    # the embedded model's typical reply: the claim again, then an interval past the top
    claim = IntervalClaim(2843, 2, 54, True, 2)
    reply = json.dumps({"subclaims": [claim.text, "2843 has no divisor d with 54 <= d < 2843."],
                        "rule": {"kind": "or", "k": None, "expr": None}})
    row = grade(claim, reply)
    assert row["valid"] and not row["exact_split"]
    assert not grade(claim, "{not json")["valid"]


def test_rows_are_drawn_across_decisions_from_the_seed() -> None:
    rows = [{"act": "evidence", "round_k": 0, "i": i} for i in range(20)]
    rows += [{"act": "decompose", "round_k": k, "i": 100 + i} for k in (1, 2) for i in range(3)]
    drawn = draw_rows(list(rows), 6, seed=3)
    kinds = {(r["act"], r["round_k"]) for r in drawn}
    assert kinds == {("evidence", 0), ("decompose", 1), ("decompose", 2)}
    assert drawn == draw_rows(list(rows), 6, seed=3)
    assert [r["i"] for r in drawn] != [r["i"] for r in draw_rows(list(rows), 6, seed=4)]
    assert len(draw_rows(list(rows), 100, seed=0)) == len(rows)


def test_a_few_steps_lower_the_loss_of_the_exact_split_and_load_as_an_adapter(
    tmp_path: Path,
) -> None:
    import torch

    from llmdebate.models.hf_backend import HFBackend
    from llmdebate.training.sft import Encoded, SFTSettings, batch_loss, train_adapter

    model = tiny_model(tmp_path / "tiny")
    claims = draw_claims(3, 7, (3000, 10000), [2], debate_like=False)
    pairs = [(decompose_prompt(Prompts(), c), exact_reply(c)) for c in claims]
    every = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    settings = SFTSettings(lora=LoraSettings(r=8, alpha=32, target_modules=every),
                           learning_rate=0.05, batch_size=3, epochs=8, warmup_steps=0,
                           eval_every=4, threads=1)
    threads = torch.get_num_threads()
    res = train_adapter(model, pairs, pairs, settings, tmp_path / "adapter", seed=0)
    assert torch.get_num_threads() == threads
    losses = [e["held_out_loss"] for e in res.log if "held_out_loss" in e]
    assert res.steps == 8 and len(losses) == 3
    # nats per completion token; a random 2-layer model learns the characters' frequencies
    assert losses[-1] < losses[0] - 0.1, losses
    assert (tmp_path / "adapter" / "adapter_model.safetensors").stat().st_size < 200_000

    plain = HFBackend("hf/tiny", model, cache_dir=tmp_path, threads=1)
    tuned = HFBackend("hf/tiny", model, cache_dir=tmp_path, threads=1,
                      adapter=tmp_path / "adapter")
    assert tuned.identity.startswith(plain.identity + "+adapter-")
    plain.load()
    tuned.load()
    assert torch.get_num_threads() == threads
    rows = [Encoded(tuned.tokenizer, p) for p in pairs]
    # the backend's adapter (float16 on disk), switched on over the shared weights as a call
    # runs it, is the model as trained
    view, name = tuned._views[str(tuned.adapter)]
    assert tuned.weights is not None
    with torch.no_grad():
        base_loss = float(batch_loss(plain.model, rows, 0, "cpu")[0])
        with tuned.weights.active(name):
            tuned_loss = float(batch_loss(view, rows, 0, "cpu")[0])
    assert base_loss == pytest.approx(losses[0], abs=1e-3)
    assert tuned_loss == pytest.approx(losses[-1], abs=2e-2)
    # a debate update of a role that played with the adapter starts from the merged weights
    import transformers

    from llmdebate.training.update import merged_adapter

    merged = merged_adapter(model, str(tmp_path / "adapter"), tmp_path / "merged")
    start = transformers.AutoModelForCausalLM.from_pretrained(str(merged))
    with torch.no_grad():
        assert float(batch_loss(start, rows, 0, "cpu")[0]) == pytest.approx(tuned_loss, abs=1e-4)


def test_an_unknown_adapter_names_the_shipped_ones(tmp_path: Path) -> None:
    from llmdebate.models.hf_backend import HFBackend

    with pytest.raises(UserError, match=r"adapter 'nope': no LoRA adapter .* shipped adapters"):
        HFBackend("local", adapter="nope", cache_dir=tmp_path)


def test_two_rounds_go_on_from_the_first_rounds_adapter(tmp_path: Path) -> None:
    from llmdebate.training.expert import expert_iteration

    model = tiny_model(tmp_path / "tiny")
    every = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    s = ExpertSettings(train_claims=3, held_out_numbers_count=1, rounds=2, batch_size=3,
                       epochs=3, learning_rate=0.05, warmup_steps=0, eval_every=3,
                       held_out_loss_claims=2, evaluate=False, evaluate_before=False,
                       threads=1, lora=LoraSettings(r=8, alpha=32, target_modules=every))
    prov = expert_iteration(s, model, tmp_path / "out", prompts=Prompts(), seed=0,
                            progress=False)
    steps = [json.loads(x) for x in (tmp_path / "out" / "expert.jsonl").read_text().splitlines()]
    assert [e["step"] for e in steps if "loss" in e] == [1, 2, 3, 4, 5, 6]
    held = prov["held_out_loss"]
    assert len(held) == 3 and held[2] < held[0] - 0.1, held
    assert (tmp_path / "out" / "round-0" / "adapter_config.json").is_file()
    assert (tmp_path / "out" / "adapter" / "provenance.json").is_file()
    assert (tmp_path / "out" / "learning-curve.png").stat().st_size > 10_000


def test_the_shipped_adapter_is_package_data_small_and_documented() -> None:
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib

    from llmdebate.models.hf_backend import adapter_path

    root = Path(__file__).resolve().parent.parent
    folder = adapter_path("divisors-prover")
    data = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    shipped = {
        p
        for package, globs in data["package-data"].items()
        if package.startswith("llmdebate") and not package.startswith("llmdebate._")
        for g in globs
        for p in (root / package.replace(".", "/")).glob(g)
    }
    assert {folder / "adapter_config.json", folder / "adapter_model.safetensors"} <= shipped
    assert sum(p.stat().st_size for p in folder.iterdir()) < 5_000_000
    prov = json.loads((folder / "provenance.json").read_text())
    assert prov["command"].endswith("--config configs/train-embedded.yaml")
    assert set(prov["held_out"]) == {"before", "after"}
    config = json.loads((folder / "adapter_config.json").read_text())
    assert "/" not in config["base_model_name_or_path"]  # no path of the training machine


def test_llmdebate_train_runs_expert_iteration_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import yaml

    from llmdebate.cli import main

    model = tiny_model(tmp_path / "tiny")
    experiment = {
        "name": "e", "dataset": {"path": str(DIVISORS), "limit": 1},
        "debate": {"depth": 2, "width": 2},
        "prover": {"model": f"hf/{model}"}, "estimator": {"model": f"hf/{model}"},
        "judge": {"kind": "oracle"},
    }
    cfg = {"name": "x", "experiment": experiment, "iterations": 0, "evaluate_last": False,
           "expert": {"train_claims": 4, "held_out_numbers_count": 1, "batch_size": 2,
                      "held_out_loss_claims": 1, "eval_every": 1, "evaluate": False,
                      "evaluate_before": False, "threads": 1}}
    path = tmp_path / "train.yaml"
    path.write_text(yaml.safe_dump(cfg))
    assert main(["train", "--config", str(path), "--out-dir", str(tmp_path / "out"),
                 "--quiet"]) == 0
    assert "expert iteration, 2 steps" in capsys.readouterr().out
    prov = json.loads((tmp_path / "out" / "expert" / "adapter" / "provenance.json").read_text())
    assert prov["steps"] == 2 and len(prov["held_out_loss"]) == 3
    # expert iteration trains an adapter on its own: debate updates are refused beside it
    path.write_text(yaml.safe_dump({**cfg, "iterations": 1}))
    assert main(["train", "--config", str(path), "--out-dir", str(tmp_path / "o2")]) == 2
    assert "set iterations: 0" in capsys.readouterr().err


@pytest.mark.parametrize("shared", [False, True])
def test_the_batch_loss_is_the_loss_of_each_row_alone(tmp_path: Path, shared: bool) -> None:
    """Rows of different lengths (left-padded, over a shared prefix or not) give the mean
    cross-entropy of their completion tokens as each row computed alone, unpadded."""
    import torch
    import transformers

    from llmdebate.training.sft import Encoded, batch_loss, common_prefix

    model = transformers.AutoModelForCausalLM.from_pretrained(
        str(tiny_model(tmp_path / "tiny")), dtype=torch.float32).eval()
    tok = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "tiny"))
    pairs = [("System: say it.\nUser: 91 has a divisor d with 2 <= d < 10.\nAnswer:", " True"),
             ("System: say it.\nUser: 7?\nAnswer:", " False, it is prime"),
             ("System: say it.\nUser: a much longer question about 4100 and its divisors "
              "between 33 and 65, asked at length.\nAnswer:", " no")]
    rows = [Encoded(tok, p) for p in pairs]
    total, tokens = 0.0, 0
    with torch.no_grad():
        for r in rows:
            ids = torch.tensor([r.prompt + r.completion])
            logits = model(input_ids=ids).logits[0, len(r.prompt) - 1 : -1]
            total += float(torch.nn.functional.cross_entropy(
                logits, torch.tensor(r.completion), reduction="sum"))
            tokens += len(r.completion)
        prefix = common_prefix(rows) if shared else None
        assert not shared or len(prefix or []) > 3
        loss, _ = batch_loss(model, rows, 0, "cpu", prefix)
    assert float(loss) == pytest.approx(total / tokens, rel=1e-4)
