"""The trainers' formats, built from decision rows.

The trainers' formats get only the decisions a model made (:data:`~.rows.TRAINED_SOURCES`;
:func:`llmdebate.export.api.build` leaves the others out unless ``include_audit``); the
``audit`` format has every row, rejected replies, rule-made directions and assigned answers
too, in the prompt-completion layout with all the row's columns.

* ``trl-prompt-completion``: every row (TRL's conversational prompt-completion; ``--text``
  renders prompts as the plain text a base model is given instead);
* ``trl-preference``: prompt, chosen, rejected (and the reward gap) from sibling rows: rows of
  one protocol, player, act, round, subclaim, reward term and the very same prompt (best-of-n
  candidates, repeated samples, the same question met in several debates), so that only
  rewards of one scale are compared; the best completion is paired with every worse one
  (best-of-n candidates ranked by their ``candidate_score``); rows no model chose (assigned
  answers, rule-made directions, rejected replies) are never paired;
* ``trl-unpaired``: prompt, completion, label for KTO: label = reward > baseline (default: the
  row's expected reward, i.e. did this draw go better than expected);
* ``trl-prompt-only``: prompt and ``state`` (JSON: the debate, its config, the decision) for
  online RL, where :mod:`llmdebate.rl` plays the rest of the debate from the state;
* ``verl``: data_source, prompt (always a message list: verl's ``RLHFDataset`` applies the
  tokenizer's chat template to it; with ``--text``, give a base model
  :data:`PLAIN_CHAT_TEMPLATE`, which renders the plain-text prompt), ability, reward_model
  {style, ground_truth: state}, extra_info; ``openrlhf``: input and label (the state).

Each is registered in :data:`llmdebate.export.format_registry.FORMATS` (the last three with
capability ``online``).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from llmdebate.core.schemas import Transcript
from llmdebate.export.format_registry import AUDIT, FORMATS, ONLINE, FormatContext
from llmdebate.export.rows import TRAINED_SOURCES, Row
from llmdebate.models.hf_backend import format_prompt

META_DROP = ("prompt", "completion")

PLAIN_CHAT_TEMPLATE = (
    "{%- set labels = {'system': 'System', 'user': 'User', 'assistant': 'Assistant'} -%}"
    "{%- for m in messages -%}"
    "{%- if not loop.first -%}{{ '\\n\\n' }}{%- endif -%}"
    "{{ labels[m['role']] }}: {{ m['content'] | trim }}"
    "{%- endfor -%}"
    "{%- if messages[-1]['role'] != 'assistant' -%}{{ '\\n\\nAnswer:' }}{%- endif -%}"
)
"""A Jinja chat template that renders messages as the plain-text prompt the embedded base
model reads (:func:`llmdebate.models.text_prompt.format_prompt`): set it as the tokenizer's
``chat_template`` (e.g. ``tokenizer_config.json``) for verl rows exported with ``--text``."""


def render(messages: list[dict[str, str]], text: bool) -> Any:
    """Conversational messages, or (``text``) the plain-text prompt a base model is given."""
    return format_prompt(messages) if text else messages


def completion_of(row: Row, text: bool) -> Any:
    return row.completion[0]["content"] if text else row.completion


def meta(row: Row) -> dict[str, Any]:
    return {k: v for k, v in row.as_dict().items() if k not in META_DROP}


class States:
    """The ``state`` column: the debate (without its calls) and the run config are serialised
    once per debate and spliced into each of its rows' states."""

    def __init__(self, config: dict[str, Any]) -> None:
        plain = {k: v for k, v in config.items() if k != "servers"}
        self.config = json.dumps(plain, sort_keys=True)
        self.debates: dict[str, str] = {}

    def __call__(self, row: Row, t: Transcript) -> str:
        tj = self.debates.get(t.id)
        if tj is None:
            tj = self.debates[t.id] = t.model_dump_json(exclude={"calls"})
        decision = json.dumps(decision_of(row, t), sort_keys=True)
        return f'{{"config": {self.config}, "transcript": {tj}, {decision[1:]}'


def decision_of(row: Row, t: Transcript) -> dict[str, Any]:
    """Which decision of the debate a row is (the part of its state that is not the debate)."""
    call = t.calls[row.call] if row.call >= 0 else None
    return {
        "speaker": row.speaker,
        "act": row.act,
        "round": call.round if call is not None and row.act != "speech" else row.round_k,
        "index": row.index,
        "prefix": call.prefix if call is not None else None,
        "term": row.term,
    }


def prompt_completion(rows: list[Row], text: bool) -> list[dict[str, Any]]:
    return [
        {"prompt": render(r.prompt, text), "completion": completion_of(r, text), **meta(r)}
        for r in rows
    ]


def pair_key(r: Row) -> tuple[object, ...]:
    """Rows whose rewards compare like with like: one protocol, player, act, round, subclaim,
    reward term and prompt (the prompt holds the rest of the decision's state)."""
    return (r.protocol, r.speaker, r.act, r.round_k, r.index, r.term, json.dumps(r.prompt))


def preference(rows: list[Row], text: bool, expected: bool = True) -> list[dict[str, Any]]:
    """Pairs of sibling rows (:func:`pair_key`: one decision in one state) ranked by the
    decision's (expected) return to go, its effect on the player's payoff; ties make no pair;
    rows no model chose are never paired."""
    groups: dict[tuple[object, ...], list[Row]] = defaultdict(list)
    for r in rows:
        if r.reward is not None and r.source in TRAINED_SOURCES:
            groups[pair_key(r)].append(r)
    out = []
    for sibs in groups.values():
        # best-of-n candidates of one decision: ranked by the score they were chosen by (for
        # a speech the judge's probability after it, not the debate's final reward)
        score = _ranking(all(r.candidate_score is not None for r in sibs), expected)

        ranked = sorted(sibs, key=lambda r: -score(r))
        best = ranked[0]
        for worse in ranked[1:]:
            if score(worse) >= score(best) or worse.completion == best.completion:
                continue
            out.append(
                {
                    "prompt": render(best.prompt, text),
                    "chosen": completion_of(best, text),
                    "rejected": completion_of(worse, text),
                    "reward_gap": score(best) - score(worse),
                    "chosen_reward": score(best),
                    "rejected_reward": score(worse),
                    "role": best.role,
                    "act": best.act,
                    "round_k": best.round_k,
                    "term": best.term,
                    "chosen_debate_id": best.debate_id,
                    "rejected_debate_id": worse.debate_id,
                    "item_id": best.item_id,
                    "split": best.split,
                    "protocol": best.protocol,
                }
            )
    return out


def _ranking(candidates: bool, expected: bool) -> Callable[[Row], float]:
    """What sibling rows are ranked by: the candidates' scores, else (expected) reward."""

    def score(r: Row) -> float:
        if candidates:
            v = r.candidate_score
        else:  # the decision's effect on the player's payoff: its return to go
            v = r.expected_return_to_go if expected else r.return_to_go
        return float(v if v is not None else 0.0)

    return score


BASELINES = ("advantage", "expected", "mean")
"""The named baselines of ``trl-unpaired`` labels (or a number)."""


def kind_key(r: Row) -> tuple[object, ...]:
    """The decisions whose returns share a baseline: one protocol, player, act, round and
    reward term."""
    return (r.protocol, r.speaker, r.act, r.round_k, r.term)


def _return(r: Row) -> float:
    v = r.expected_return_to_go if r.expected_return_to_go is not None else r.return_to_go
    return float(v or 0.0)


def unpaired(
    rows: list[Row], text: bool, baseline: str | float = "advantage"
) -> list[dict[str, Any]]:
    """KTO rows. ``advantage`` (default): label = the decision's expected return to go (its
    effect on the player's payoff, expected over the protocol's draws) above the mean of the
    decisions of its kind (:func:`kind_key`): the decision's advantage, not the luck of a
    draw. ``expected``: reward > the row's own expected reward (only the luck of the draws);
    ``mean``: reward > the mean reward of the rows of the same player and act; a number:
    reward > it."""
    rows = [r for r in rows if r.reward is not None]
    if baseline == "advantage":
        acc_kind: dict[tuple[object, ...], list[float]] = defaultdict(list)
        for r in rows:
            acc_kind[kind_key(r)].append(_return(r))
        value = {k: sum(v) / len(v) for k, v in acc_kind.items()}
        return [
            {
                "prompt": render(r.prompt, text),
                "completion": completion_of(r, text),
                "label": bool(_return(r) > value[kind_key(r)]),
                "baseline": value[kind_key(r)],
                **dict(meta(r).items()),
            }
            for r in rows
        ]
    means: dict[tuple[str, str], float] = {}
    if baseline == "mean":
        acc: dict[tuple[str, str], list[float]] = defaultdict(list)
        for r in rows:
            acc[(r.role, r.act)].append(float(r.reward or 0.0))
        means = {k: sum(v) / len(v) for k, v in acc.items()}
    out = []
    for r in rows:
        if baseline == "expected":
            base = float(r.expected_reward if r.expected_reward is not None else r.reward or 0.0)
        elif baseline == "mean":
            base = means[(r.role, r.act)]
        else:
            base = float(baseline)
        out.append(
            {
                "prompt": render(r.prompt, text),
                "completion": completion_of(r, text),
                "label": bool(float(r.reward or 0.0) > base),
                "baseline": base,
                **{k: v for k, v in meta(r).items()},
            }
        )
    return out


def prompt_only(
    rows: list[Row], text: bool, state: Callable[[Row], str]
) -> list[dict[str, Any]]:
    return [{"prompt": render(r.prompt, text), "state": state(r), **meta(r)} for r in rows]


def verl(rows: list[Row], text: bool, state: Callable[[Row], str]) -> list[dict[str, Any]]:
    return [
        {
            "data_source": f"llmdebate/{r.protocol}/{r.role}",
            "prompt": r.prompt,  # RLHFDataset takes messages only (see PLAIN_CHAT_TEMPLATE)
            "ability": f"debate-{r.role}",
            "reward_model": {"style": "rule", "ground_truth": state(r)},
            "extra_info": {
                "text": text,
                "split": r.split,
                "index": i,
                "debate_id": r.debate_id,
                "act": r.act,
                "round_k": r.round_k,
                "term": r.term,
                "reward": r.reward,
                "expected_reward": r.expected_reward,
            },
        }
        for i, r in enumerate(rows)
    ]


def openrlhf(rows: list[Row], text: bool, state: Callable[[Row], str]) -> list[dict[str, Any]]:
    return [{"input": render(r.prompt, text), "label": state(r), **meta(r)} for r in rows]


@FORMATS.register("trl-prompt-completion")
def _prompt_completion(rows: list[Row], ctx: FormatContext) -> list[dict[str, Any]]:
    """Every row: TRL's conversational prompt-completion."""
    return prompt_completion(rows, ctx.text)


@FORMATS.register("audit", capabilities={AUDIT})
def _audit(rows: list[Row], ctx: FormatContext) -> list[dict[str, Any]]:
    """Every row, decisions no model made too (rejected, rule, assigned): for audit."""
    return prompt_completion(rows, ctx.text)


@FORMATS.register("trl-preference")
def _preference(rows: list[Row], ctx: FormatContext) -> list[dict[str, Any]]:
    """Prompt, chosen, rejected from sibling rows."""
    return preference(rows, ctx.text)


@FORMATS.register("trl-unpaired")
def _unpaired(rows: list[Row], ctx: FormatContext) -> list[dict[str, Any]]:
    """Prompt, completion, label for KTO."""
    return unpaired(rows, ctx.text, ctx.baseline)


@FORMATS.register("trl-prompt-only", capabilities={ONLINE})
def _prompt_only(rows: list[Row], ctx: FormatContext) -> list[dict[str, Any]]:
    """Prompt and state for online RL."""
    return prompt_only(rows, ctx.text, ctx.state)


@FORMATS.register("verl", capabilities={ONLINE})
def _verl(rows: list[Row], ctx: FormatContext) -> list[dict[str, Any]]:
    """verl's parquet layout."""
    return verl(rows, ctx.text, ctx.state)


@FORMATS.register("openrlhf", capabilities={ONLINE})
def _openrlhf(rows: list[Row], ctx: FormatContext) -> list[dict[str, Any]]:
    """OpenRLHF's input and label."""
    return openrlhf(rows, ctx.text, ctx.state)
