"""Where a sampled completion ends in online RL: the act's own stop and a cap that fits it.

TRL's ``GRPOTrainer`` stops a completion at the model's end-of-sequence ids and at
``max_completion_length`` tokens; it does not know the text template's turn stops
(:data:`llmdebate.models.text_prompt.TURN_STOPS`), so a base model would write on to the cap.
:func:`stop_token_ids` adds the tokens that end an act's answer: every token holding a line
break for the acts answered on one line (a direction, a recursion index, a True/False word, a
decomposition's JSON object), every token holding a blank line when free text (evidence, a
speech) is trained too. :func:`completion_cap` is the longest answer the trained acts need.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from llmdebate.elicit.prompts import TF_INSTRUCTION, VERBALISED_INSTRUCTION

LINE_ACTS = frozenset({"direction", "recurse", "estimate", "value", "decompose"})
"""Acts whose whole answer is one line."""
WORD_TOKENS = 8
"""Tokens for a one-word answer (a direction, an index, True/False, a number)."""
SPLIT_TOKENS_PER_SUBCLAIM = 64
"""Tokens per subclaim of a decomposition (an exact split of two divisor subclaims takes
about 62 in the embedded model's tokenizer)."""
FREE_TEXT_TOKENS = {"evidence": 128, "speech": 256}
"""Tokens for the free-text acts."""


def act_token_cap(act: str, width: int) -> int:
    """The most tokens an answer to ``act`` needs (``width``: the debate's width)."""
    if act == "decompose":
        return SPLIT_TOKENS_PER_SUBCLAIM * max(width, 1) + 16
    if act in LINE_ACTS:
        return WORD_TOKENS
    return FREE_TEXT_TOKENS.get(act, 256)


def _act_width(row: dict[str, Any]) -> tuple[str, int]:
    state = row.get("state")
    st = json.loads(state) if isinstance(state, str) else (state or {})
    act = str(row.get("act") or st.get("act") or "")
    width = int(((st.get("config") or {}).get("debate") or {}).get("width", 2))
    return act, width


def completion_cap(rows: Iterable[dict[str, Any]]) -> int:
    """The longest answer any of ``rows`` (trl-prompt-only records) needs, in tokens."""
    caps = [act_token_cap(*_act_width(r)) for r in rows]
    return max(caps) if caps else WORD_TOKENS


def trained_acts(rows: Iterable[dict[str, Any]]) -> set[str]:
    return {_act_width(r)[0] for r in rows}


def stop_token_ids(tokenizer: Any, acts: Iterable[str]) -> list[int]:
    """The end-of-sequence ids, and the ids of every token that ends an answer to ``acts``:
    a line break when every act is answered on one line, else a blank line."""
    acts = set(acts)
    mark = "\n" if acts and acts <= LINE_ACTS else "\n\n"
    ids = [tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else []
    for token, idx in tokenizer.get_vocab().items():
        if not any(c in token for c in ("\n", "Ċ", "<0x0A>")):
            continue  # a token without a line break, in any of the usual vocabularies
        if mark in tokenizer.decode([idx]) and idx not in ids:
            ids.append(idx)
    return ids


def verbalised(prompt: Any) -> Any:
    """A probability act's prompt (plain text or messages) asking for the probability as a
    number instead of one True/False word, so that the completion expresses the probability
    the reward reads (``logprobs_as: verbalised``); other prompts are returned as they are."""
    if isinstance(prompt, str):
        return prompt.replace(TF_INSTRUCTION, VERBALISED_INSTRUCTION)
    return [{**m, "content": str(m["content"]).replace(TF_INSTRUCTION, VERBALISED_INSTRUCTION)}
            for m in prompt]


class GroupRewards:
    """A reward function for TRL's GRPOTrainer that passes ``reward``'s scores through and
    keeps them per group (the ``group`` consecutive completions of one prompt), so that an
    update records every group's rewards, not only the batch's spread that TRL logs."""

    def __init__(self, reward: Any, group: int) -> None:
        self.reward = reward
        self.group = group
        self.groups: list[list[float]] = []
        self.__name__ = getattr(reward, "__name__", "debate_reward")

    def __call__(self, prompts: list[Any], completions: list[Any], **kwargs: Any) -> Any:
        scores = self.reward(prompts, completions, **kwargs)
        values = [float(s) for s in scores]
        for i in range(0, len(values), self.group):
            self.groups.append(values[i : i + self.group])
        return scores

    def summary(self) -> dict[str, Any]:
        """Every group's rewards and their standard deviation (population)."""
        stds = []
        for g in self.groups:
            mean = sum(g) / len(g)
            stds.append((sum((v - mean) ** 2 for v in g) / len(g)) ** 0.5)
        return {"group_rewards": self.groups, "group_reward_std": stds}
