"""Online RL as trainers call it: GRPO groups, verl's reward loop, OpenRLHF, a logprobs-method
estimator, and verl's prompt column."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from llmdebate.core import scoring
from llmdebate.experiment.runner import run
from llmdebate.export import build, decision_rows, export_run, run_info
from llmdebate.export.formats import PLAIN_CHAT_TEMPLATE
from llmdebate.models.text_prompt import format_prompt
from llmdebate.records.rundir import load_transcripts, read_run_config
from llmdebate.rl import AsyncDebateReward, DebateReward, compute_score, reward_func
from llmdebate.training.config import TrainConfig, UpdateSettings

try:
    from tests.export_fixtures import pe_config
except ImportError:  # pytest run from inside tests/
    from export_fixtures import pe_config  # type: ignore[no-redef]

GARBAGE = "{garbage"
# act -> valid alternatives besides the recorded reply, and invalid replies (4 in a group)
GROUPS = {
    "direction": (["higher", "lower"], [GARBAGE]),
    "decompose": ([None], [GARBAGE, ""]),  # None: the recorded reply again
    "recurse": (["1", "3"], ["seven"]),
    "estimate": (["True", "False"], ["0.4"]),  # the estimator elicits by logprobs
    "evidence": (["Each candidate divisor fails."], ["  ", "x" * 20_001]),
}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("online") / "run"
    run(pe_config(dataset={"limit": 1}, prover={"decomposer": "model"}), out, progress=False)
    return out


def online(run_dir: Path) -> list[tuple[dict[str, Any], str]]:
    """The trl-prompt-only records with the completion each decision recorded."""
    config = read_run_config(run_dir)
    ts = {t.id: t for t in load_transcripts(run_dir)}
    recs = build(decision_rows(list(ts.values()), run_info(run_dir, config, 0.0)),
                 "trl-prompt-only", config)
    return [(r, ts[r["debate_id"]].calls[r["call"]].completion or "") for r in recs]


def group(rec: dict[str, Any], recorded: str) -> tuple[list[str], int]:
    valid, invalid = GROUPS[rec["act"]]
    good = [recorded, *(recorded if v is None else v for v in valid)]
    return good + invalid, len(good)


def test_grpo_groups_rank_every_valid_completion_above_every_invalid_one(
    run_dir: Path,
) -> None:
    scaled = DebateReward(max_reply_chars=20_000, relative=False)
    relative = DebateReward(max_reply_chars=20_000)
    acts: set[str] = set()
    for rec, recorded in online(run_dir):
        completions, n_valid = group(rec, recorded)
        assert len(completions) == 4  # TRL's GRPO: num_generations completions per prompt
        scores = scaled([rec["prompt"]] * 4, completions, state=[rec["state"]] * 4)
        assert max(scores[n_valid:]) < min(scores[:n_valid]), (rec["act"], scores)
        assert all(-1.0 <= s <= 1.0 for s in scores[:n_valid])
        assert scores[n_valid:] == [-1.5] * (4 - n_valid)
        if rec["speaker"] == "prover":  # the recorded reply: the row's reward on that scale
            assert scores[0] == pytest.approx(rec["expected_return_to_go"] / rec["reward_unit"])
        # relative to the decision (the default): the same ranking, the recorded reply at 0
        rel = relative([rec["prompt"]] * 4, completions, state=[rec["state"]] * 4)
        assert max(rel[n_valid:]) < min(rel[:n_valid]), (rec["act"], rel)
        if rec["speaker"] == "prover":
            assert rel[0] == 0.0
        for i in range(4):
            for j in range(4):
                assert (scores[i] < scores[j]) <= (rel[i] < rel[j])
        acts.add(rec["act"])
    assert acts == set(GROUPS)


def test_rejected_and_rule_rows_are_not_in_the_online_formats(run_dir: Path) -> None:
    for rec, _ in online(run_dir):
        assert rec["source"] in ("model", "candidate") and rec["term"]


def test_verl_reward_loop_call_shape_with_extra_keywords_inside_a_running_loop(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec, recorded = next((r, c) for r, c in online(run_dir) if r["act"] == "direction")
    state = json.loads(rec["state"])
    kwargs = dict(data_source="llmdebate/prover-estimator/prover", solution_str=recorded,
                  ground_truth=rec["state"], extra_info={"index": 0})
    direct = compute_score(**kwargs, relative=False)

    async def in_loop() -> list[float]:  # verl's reward loop awaits, and passes more keywords
        return [
            compute_score(**kwargs, reward_router_address="127.0.0.1:1", relative=False),
            compute_score(**{**kwargs, "solution_str": GARBAGE}, invalid_reward=-4.0,
                          relative=False),
        ]

    assert asyncio.run(in_loop()) == [direct, -4.0]
    from llmdebate.core.schemas import Transcript
    from llmdebate.export.credit import pe_terms

    t = Transcript.model_validate(state["transcript"])
    unit = scoring.reward_scale(scoring.DISCOUNTED, scoring.ratio_for(t.config), t.config.depth)
    assert direct == pytest.approx(rec["expected_return_to_go"] / unit)
    assert abs(pe_terms(t).to_go(state["term"], True)) <= unit
    # OpenRLHF: options from the environment, inside a running loop too
    monkeypatch.setenv("LLMDEBATE_RL_INVALID_REWARD", "-7")
    monkeypatch.setenv("LLMDEBATE_RL_RELATIVE", "0")

    async def openrlhf() -> Any:
        return reward_func([rec["prompt"][0]["content"] + GARBAGE], [rec["prompt"][0]["content"]],
                           [rec["state"]], extra="ignored")

    assert float(asyncio.run(openrlhf())["rewards"][0]) == -7.0
    monkeypatch.setenv("LLMDEBATE_RL_INVALID_REWARD", "-0.5")
    with pytest.raises(ValueError, match="invalid_reward: must be below"):
        compute_score(**kwargs)


def test_a_logprobs_estimator_is_scored_online_through_its_true_false_reply(
    run_dir: Path,
) -> None:
    rec, _ = next((r, c) for r, c in online(run_dir) if r["act"] == "estimate")
    assert json.loads(rec["state"])["config"]["estimator"].get("method", "logprobs") == "logprobs"
    reward = AsyncDebateReward(normalize=False)  # logprobs_as="answer" by default
    yes, no, bad = asyncio.run(reward([rec["prompt"]] * 3, ["True", "False", "0.4"],
                                      state=[rec["state"]] * 3))
    assert yes != no and min(yes, no) > bad
    stated = DebateReward(normalize=False, logprobs_as="verbalised")
    assert stated([rec["prompt"]], ["0.4"], state=[rec["state"]])[0] > bad
    # the training config sets the same options
    settings = UpdateSettings(method="grpo", logprobs_as="verbalised", invalid_margin=0.25)
    assert settings.logprobs_as == "verbalised"
    with pytest.raises(ValueError, match="invalid_reward"):
        UpdateSettings(invalid_reward=-0.5)
    assert TrainConfig(prover={"normalize_reward": False}).prover.normalize_reward is False


def test_verl_prompt_is_always_a_message_list(run_dir: Path, tmp_path: Path) -> None:
    for text in (False, True):
        out = tmp_path / f"verl-{text}.jsonl"
        export_run(run_dir, out, role="prover", fmt="verl", text=text)
        rows = [json.loads(x) for x in out.read_text().splitlines()]
        assert rows and all(
            isinstance(r["prompt"], list) and {"role", "content"} <= set(r["prompt"][0])
            for r in rows
        )


def test_the_plain_chat_template_renders_the_embedded_models_text_prompt() -> None:
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models

    tok = transformers.PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.WordLevel({"<unk>": 0}, unk_token="<unk>")),
        unk_token="<unk>",
    )
    tok.chat_template = PLAIN_CHAT_TEMPLATE
    convo = [{"role": "system", "content": "You judge. "},
             {"role": "user", "content": "Is 7 prime?\n"}]
    for messages in (convo, [*convo, {"role": "assistant", "content": "True"}], convo[1:]):
        got = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        assert got == format_prompt(messages)  # type: ignore[arg-type]
