"""Token caps that fit a structured reply: the longest reply each schema admits, however it is
spaced, in the model's own tokenizer. A backend whose tokenizer splits words into pieces of
four letters and spaces its JSON (``{ "direction": "higher" }``, 15 tokens) is cut by a fixed
12-token cap to ``{ "direction": "higher``, as llama.cpp's grammar was; the derived budget
fits it, and a reply cut by a cap anyway is asked again with twice the cap."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmdebate.agents.llm import ask_structured, reply_budget
from llmdebate.agents.parsing import parse_direction, parse_index
from llmdebate.agents.replies import (
    decomposition_schema,
    direction_schema,
    index_schema,
    verdict_schema,
)
from llmdebate.errors import InvalidOutputError
from llmdebate.models.interface import Backend, ChatMessage, GenerateConfig, ModelOutput
from llmdebate.models.reply_budget import Unbounded, longest_reply, reply_tokens, spellings
from llmdebate.models.structured import OutputSchema
from llmdebate.models.wrapper import Model

PIECE = re.compile(r"[A-Za-z]{1,4}|[0-9]|\s|.")


def pieces(text: str) -> list[str]:
    """A tokenizer that cuts letters into pieces of at most four and all else into chars."""
    return PIECE.findall(text)


class SpacedJSON(Backend):
    """Writes its JSON with spaces inside the braces, cut at ``max_tokens`` of :func:`pieces`."""

    name = "spaced"
    provider = "test"

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.caps: list[int] = []

    def count_tokens(self, text: str) -> int | None:
        return len(pieces(text))

    async def generate(
        self, messages: list[ChatMessage], config: GenerateConfig, sample_index: int = 0
    ) -> ModelOutput:
        self.caps.append(config.max_tokens)
        toks = pieces(self.reply)[: config.max_tokens]
        return ModelOutput(text="".join(toks), model=self.name, tokens_out=len(toks))


def ask(model: Model, cap: int) -> int:
    return int(asyncio.run(ask_structured(
        model, [{"role": "user", "content": "Which way?"}], parse_direction,
        role="prover", act="direction", config=GenerateConfig(max_tokens=cap),
        max_attempts=1, calls=[], schema=direction_schema(),
    )))


def test_a_fixed_cap_cuts_a_spaced_reply_and_the_derived_one_fits_it() -> None:
    backend = SpacedJSON('{ "direction": "higher" }')
    model = Model(backend, use_cache=False, max_retries=0)
    assert "".join(pieces(backend.reply)[:12]) == '{ "direction": "higher'  # no closing
    budget = reply_budget(model, direction_schema())
    assert budget >= len(pieces('{\n  "direction": "higher"\n}'))
    assert ask(model, budget) == 1 and backend.caps == [budget]


def test_a_reply_cut_by_its_cap_is_asked_again_with_twice_the_cap() -> None:
    backend = SpacedJSON('{ "direction": "higher" }')
    model = Model(backend, use_cache=False, max_retries=0)
    assert ask(model, 12) == 1 and backend.caps == [12, 24]  # one attempt, widened once
    backend = SpacedJSON('{ "direction": "sideways" }')  # complete and wrong: no widening
    model = Model(backend, use_cache=False, max_retries=0)
    with pytest.raises(InvalidOutputError):
        ask(model, 40)
    assert backend.caps == [40]


def test_the_longest_replies_of_the_acts() -> None:
    assert longest_reply(direction_schema().schema) == {"direction": "higher"}
    assert longest_reply(index_schema(12).schema) == {"index": 12}
    assert longest_reply(verdict_schema().schema) == {"verdict": False}
    subs = longest_reply(decomposition_schema(3).schema)["subclaims"]
    assert len(subs) == 3 and {len(s) for s in subs} == {120}
    with pytest.raises(Unbounded):
        longest_reply({"type": "string"})
    # without a tokenizer: characters, an upper bound in any tokenizer
    assert reply_tokens(direction_schema()) >= len('{\n  "direction": "higher"\n}')


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 10_000), st.sampled_from(["compact", "spaced", "inside", "indented"]))
def test_every_valid_index_reply_fits_its_budget(n: int, style: str) -> None:
    schema = index_schema(n)
    budget = reply_tokens(schema, lambda t: len(pieces(t)))
    for i in (1, n):
        text = spellings({"index": i})[["compact", "spaced", "inside", "indented"].index(style)]
        assert len(pieces(text)) <= budget
        assert parse_index(text, n) == i - 1
        assert json.loads(text) == {"index": i}


def test_an_unbounded_schema_gets_the_floor() -> None:
    free = OutputSchema.of("free", {"type": "object", "properties": {"x": {"type": "string"}}})
    assert reply_tokens(free, None, floor=77) == 77
