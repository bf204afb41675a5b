"""Every export format loads with `datasets` (JSONL, parquet, a datasets directory) and passes
the dataset preparation of the TRL trainer that reads it (a tiny model and tokenizer)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from llmdebate.experiment.runner import run
from llmdebate.export import FORMATS, export_run
from llmdebate.export.format_registry import WHOLE_RUN

try:
    from tests.export_fixtures import pe_config, scripted
except ImportError:  # pytest run from inside tests/
    from export_fixtures import pe_config, scripted  # type: ignore[no-redef]

CYCLING = str(Path(__file__).resolve().parent / "test_export_best_of.py") + ":cycling"

datasets = pytest.importorskip("datasets")
trl = pytest.importorskip("trl")
transformers = pytest.importorskip("transformers")

SUFFIX = {"jsonl": ".jsonl", "parquet": ".parquet", "hf": ""}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fmt") / "run"
    # best of 3 decompositions: sibling candidates, the prover's preference pairs
    prover: dict[str, Any] = {**scripted(), "decomposer": "model", "best_of": 3}
    prover["options"]["responder"] = CYCLING
    run(pe_config(prover=prover, dataset={"limit": 2}), out, progress=False)
    return out


def load(path: Path, kind: str) -> Any:
    if kind == "hf":
        return datasets.load_from_disk(str(path))
    return datasets.load_dataset("json" if kind == "jsonl" else "parquet",
                                 data_files=str(path), split="train")


@pytest.mark.parametrize("kind", ["jsonl", "parquet", "hf"])
@pytest.mark.parametrize(
    "fmt",  # rows, not a whole run
    [f for f in FORMATS.builtin_names() if not FORMATS.entry(f).can(WHOLE_RUN)],
)
def test_every_format_loads_with_datasets(run_dir: Path, tmp_path: Path, fmt: str,
                                          kind: str) -> None:
    out = tmp_path / f"rows{SUFFIX[kind]}"
    res = export_run(run_dir, out, role="prover", fmt=fmt, kind=kind)
    ds = load(out, kind)
    assert len(ds) == res.rows > 0
    need = {
        "trl-prompt-completion": {"prompt", "completion", "reward", "expected_reward",
                                  "return_to_go", "act", "round_k", "split", "config_digest"},
        "audit": {"prompt", "completion", "reward", "source"},
        "trl-preference": {"prompt", "chosen", "rejected", "reward_gap"},
        "trl-unpaired": {"prompt", "completion", "label"},
        "trl-prompt-only": {"prompt", "state"},
        "verl": {"data_source", "prompt", "ability", "reward_model", "extra_info"},
        "openrlhf": {"input", "label"},
    }[fmt]
    assert need <= set(ds.column_names)
    first = ds[0]
    if fmt == "verl":
        state = json.loads(first["reward_model"]["ground_truth"])
        assert state["transcript"]["id"] == first["extra_info"]["debate_id"]
    if fmt == "trl-preference":
        assert all(g > 0 for g in ds["reward_gap"])


@pytest.fixture(scope="module")
def tiny() -> tuple[Any, Any]:
    """A word-level tokenizer with a chat template and a one-layer model (random weights)."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = ["<pad>", "<eos>", "<bos>", "<unk>", "True", "False", "higher", "lower", "right"]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", bos_token="<bos>",
        unk_token="<unk>",
    )
    fast.chat_template = (
        "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}assistant:{% endif %}"
    )
    cfg = transformers.LlamaConfig(
        vocab_size=len(words), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=8192,
    )
    return fast, transformers.LlamaForCausalLM(cfg)


def common_args(tmp_path: Path) -> dict[str, Any]:
    return dict(output_dir=str(tmp_path / "trainer"), max_steps=1, report_to=[], use_cpu=True,
                per_device_train_batch_size=2, save_strategy="no",
                activation_checkpointing=False)


@pytest.mark.parametrize("text", [False, True])
def test_trl_trainers_prepare_the_exported_datasets(
    run_dir: Path, tmp_path: Path, tiny: tuple[Any, Any], text: bool
) -> None:
    tok, model = tiny
    paths = {}
    for fmt in ("trl-prompt-completion", "trl-preference", "trl-unpaired", "trl-prompt-only"):
        role = "estimator" if fmt == "trl-unpaired" else "prover"
        paths[fmt] = tmp_path / f"{fmt}.parquet"
        export_run(run_dir, paths[fmt], role=role, fmt=fmt, text=text)
    pc = load(paths["trl-prompt-completion"], "parquet")
    assert trl.data_utils.is_conversational(pc[0]) is not text
    sft = trl.SFTTrainer(model=model, args=trl.SFTConfig(**common_args(tmp_path)),
                         train_dataset=pc, processing_class=tok)
    assert "input_ids" in sft.train_dataset.column_names
    labels = sft.train_dataset[0]["labels"]
    assert -100 in labels and any(x != -100 for x in labels)  # the loss is on the completion
    dpo = trl.DPOTrainer(model=model, ref_model=copy.deepcopy(model),
                         args=trl.DPOConfig(**common_args(tmp_path)),
                         train_dataset=load(paths["trl-preference"], "parquet"),
                         processing_class=tok)
    assert {"prompt_ids", "chosen_ids", "rejected_ids"} <= set(dpo.train_dataset.column_names)
    kto = trl.KTOTrainer(model=model, ref_model=copy.deepcopy(model),
                         args=trl.KTOConfig(**common_args(tmp_path)),
                         train_dataset=load(paths["trl-unpaired"], "parquet"),
                         processing_class=tok)
    assert {"prompt_ids", "completion_ids", "label"} <= set(kto.train_dataset.column_names)
    po = load(paths["trl-prompt-only"], "parquet")
    rendered = trl.data_utils.maybe_apply_chat_template({"prompt": po[0]["prompt"]}, tok)
    assert isinstance(rendered["prompt"], str) and rendered["prompt"]
    from llmdebate.rl import DebateReward

    grpo = trl.GRPOTrainer(
        model=model, reward_funcs=[DebateReward()], train_dataset=po, processing_class=tok,
        args=trl.GRPOConfig(**common_args(tmp_path), num_generations=2,
                            max_completion_length=4),
    )
    assert "state" in grpo.train_dataset.column_names
    from trl.trainer.utils import is_async_callable

    from llmdebate.rl import AsyncDebateReward

    assert is_async_callable(AsyncDebateReward()) and not is_async_callable(DebateReward())
