"""Where a GRPO completion ends: the act's own stop tokens, and a cap that fits the act."""

from __future__ import annotations

import json
from pathlib import Path

from llmdebate.training.generation import (
    WORD_TOKENS,
    act_token_cap,
    completion_cap,
    stop_token_ids,
    trained_acts,
)

try:
    from tests.test_train_grpo import tiny_model
except ImportError:  # pytest run from inside tests/
    from test_train_grpo import tiny_model  # type: ignore[no-redef]


def _row(act: str, width: int = 3) -> dict[str, str]:
    state = {"act": act, "config": {"debate": {"width": width}}}
    return {"prompt": "p", "state": json.dumps(state)}


def test_caps_fit_each_act() -> None:
    assert act_token_cap("direction", 3) == WORD_TOKENS
    assert act_token_cap("estimate", 3) == WORD_TOKENS
    # an exact split of 62 tokens fits a width-2 cap with room to spare
    assert act_token_cap("decompose", 2) >= 2 * 62
    assert act_token_cap("decompose", 3) > act_token_cap("decompose", 2)
    assert completion_cap([_row("direction"), _row("recurse")]) == WORD_TOKENS
    assert completion_cap([_row("direction"), _row("decompose", 2)]) == act_token_cap(
        "decompose", 2)
    assert trained_acts([_row("direction"), _row("evidence")]) == {"direction", "evidence"}


def test_stop_tokens_end_a_line_act_at_a_line_break(tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_model(tmp_path / "tiny")))
    line = stop_token_ids(tok, {"direction", "decompose"})
    newline = tok.convert_tokens_to_ids("\n")
    assert tok.eos_token_id in line and newline in line
    assert all("\n" in tok.decode([i]) for i in line if i != tok.eos_token_id)
    # free text goes on over a single line break (this vocabulary has no blank-line token)
    assert stop_token_ids(tok, {"evidence", "direction"}) == [tok.eos_token_id]


def test_a_probability_act_is_asked_for_the_number_it_is_rewarded_for() -> None:
    from llmdebate.elicit.prompts import TF_INSTRUCTION, VERBALISED_INSTRUCTION
    from llmdebate.rl.rewards import completion_probability
    from llmdebate.training.generation import verbalised

    text = f"User: Statement: 7 is prime.\n\n{TF_INSTRUCTION}\n\nAnswer:"
    assert VERBALISED_INSTRUCTION in verbalised(text) and TF_INSTRUCTION not in verbalised(text)
    msgs = [{"role": "user", "content": f"Statement: 7 is prime.\n\n{TF_INSTRUCTION}"}]
    assert verbalised(msgs)[0]["content"].endswith(VERBALISED_INSTRUCTION)
    assert verbalised("Split the claim.") == "Split the claim."
    # the reward reads the stated number as the estimate it injects
    assert completion_probability("0.83", "logprobs", logprobs_as="verbalised") == (True, 0.83)
