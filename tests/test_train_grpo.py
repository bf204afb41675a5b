"""Online RL in the training loop: TRL's GRPOTrainer with llmdebate.rl's reward on a tiny
random model built here (no download), on trl-prompt-only rows of a scripted run."""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

import pytest

from llmdebate.experiment.runner import run
from llmdebate.export import build, decision_rows, run_info
from llmdebate.export.api import injectable
from llmdebate.records.rundir import load_transcripts, read_run_config
from llmdebate.rl import DebateReward
from llmdebate.training.config import UpdateSettings
from llmdebate.training.update import update_role

try:
    from tests.export_fixtures import pe_config
except ImportError:  # pytest run from inside tests/
    from export_fixtures import pe_config  # type: ignore[no-redef]



def tiny_model(path: Path) -> Path:
    """A 2-layer Llama with a character-level tokenizer, saved as a model folder."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    chars = string.printable
    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, **{c: i + 4 for i, c in enumerate(chars)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", behavior="isolated")
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>",
                                   eos_token="</s>", unk_token="<unk>")
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(vocab), hidden_size=32, intermediate_size=64,
                      num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                      max_position_embeddings=4096, pad_token_id=0, bos_token_id=1,
                      eos_token_id=2)
    LlamaForCausalLM(cfg).save_pretrained(str(path))
    fast.save_pretrained(str(path))
    return path


def test_one_grpo_step_with_the_debate_reward(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run(pe_config(dataset={"limit": 1}), run_dir, progress=False)
    config = read_run_config(run_dir)
    pairs = [
        (r, t) for r, t in decision_rows(load_transcripts(run_dir), run_info(run_dir, config, 0.0),
                                         role="prover")
        if injectable(r)
    ]
    records = build(pairs, "trl-prompt-only", config, text=True)
    assert records and all(isinstance(r["prompt"], str) for r in records)
    calls: list[int] = []
    scores: list[float] = []

    class Counting(DebateReward):
        def __call__(self, prompts: list[Any], completions: list[Any], state: list[str],
                     **kw: Any) -> list[float]:
            calls.append(len(completions))
            assert all(json.loads(s)["speaker"] == "prover" for s in state)
            got = super().__call__(prompts, completions, state, **kw)
            scores.extend(got)
            return got

    settings = UpdateSettings(method="grpo", batch_size=4, num_generations=2,
                              max_completion_length=4, lora=None, max_rows=2,
                              acts=["recurse"])
    res = update_role("prover", tiny_model(tmp_path / "tiny"), records, tmp_path / "ckpt",
                      settings, device="cpu",
                      reward=Counting(name="debate", relative=False))
    assert res.steps == 1 and res.skipped is None
    assert calls == [4]  # 2 prompts x 2 generations, each played into its debate
    logged = next(h for h in res.log if "reward" in h)
    assert logged["reward"] == pytest.approx(sum(scores) / len(scores))
    # a random model's replies: unparseable (the invalid reward) or valid (in [-1, 1] on the
    # debate's scale, relative=False)
    assert all(s == -1.5 or -1.0 <= s <= 1.0 for s in scores) and -1.5 in scores
    assert (res.checkpoint / "config.json").exists()
    groups = next(h for h in res.log if "group_rewards" in h)
    assert [len(g) for g in groups["group_rewards"]] == [2, 2]  # each prompt's completions
    assert [v for g in groups["group_rewards"] for v in g] == scores
    assert len(groups["group_reward_std"]) == 2
