"""Pure parts: answer parsing and probability extraction (elicit), prices, the cache."""

from __future__ import annotations

import math
import threading
from pathlib import Path

import pytest

from llmdebate.elicit import (
    answer_masses,
    estimate_from_logprobs,
    estimate_from_samples,
    parse_bool,
    parse_probability,
    with_instruction,
)
from llmdebate.errors import InvalidOutputError
from llmdebate.models import GenerateConfig, ModelOutput, ResponseCache, TokenLogprob
from llmdebate.models.cache import cache_key
from llmdebate.models.pricing import call_cost, lookup_price


def _out(top: dict[str, float], token: str | None = None) -> ModelOutput:
    token = token or max(top, key=lambda t: top[t])
    return ModelOutput("x", "m", logprobs=[TokenLogprob(token, top[token], top)])


def test_logprobs_sums_variants_and_normalises():
    top = {" True": math.log(0.3), "True": math.log(0.1), " Yes": math.log(0.1)}
    top |= {" False": math.log(0.2), "no": math.log(0.05), " Maybe": math.log(0.25)}
    est = estimate_from_logprobs(_out(top))
    assert est.method == "logprobs"
    assert est.value == pytest.approx(0.5 / 0.75)
    assert est.evidence["p_true_mass"] == pytest.approx(0.5)
    assert est.evidence["p_false_mass"] == pytest.approx(0.25)
    assert est.evidence["neither_mass"] == pytest.approx(0.25)
    assert " Maybe" in est.evidence["top"]


def test_logprobs_sentencepiece_marker_and_skip_whitespace_position():
    first = TokenLogprob("\n", -0.1, {"\n": -0.1})
    second = TokenLogprob("▁False", math.log(0.6), {"▁False": math.log(0.6), "▁True": -9999.0})
    est = estimate_from_logprobs(ModelOutput("\nFalse", "m", logprobs=[first, second]))
    assert est.value == pytest.approx(0.0)
    assert est.evidence["position"] == 1


def test_logprobs_without_answer_tokens_is_invalid():
    with pytest.raises(InvalidOutputError, match="no True/False token"):
        estimate_from_logprobs(_out({" Paris": -0.1, " The": -2.0}))
    with pytest.raises(InvalidOutputError, match="no logprobs"):
        estimate_from_logprobs(ModelOutput("True", "m"))


def test_answer_masses_ignores_impossible_tokens():
    assert answer_masses({" True": -9999.0, " False": 0.0}) == pytest.approx((0.0, 1.0, 0.0))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("True", True),
        (" false.", False),
        ("No", False),
        (" yes\n", True),
        # the whole reply must be the word: none is searched for in other text
        ("**Yes**, it is", None),
        ("I think the statement is true", None),
        ("x" * 200_000 + " no", None),
        ("maybe", None),
        ("", None),
    ],
)
def test_parse_bool(text, expected):
    assert parse_bool(text) is expected


def test_sampling_laplace():
    est = estimate_from_samples(["True", "False", "True", "unsure"], 1.0)
    assert est.value == pytest.approx((2 + 1) / (3 + 2))
    assert est.evidence["samples"] == ["True", "False", "True", "unsure"]
    assert est.evidence["parsed"] == [True, False, True, None]
    with pytest.raises(InvalidOutputError):
        estimate_from_samples(["hmm", "?"], 1.0)


@pytest.mark.parametrize(
    ("text", "value"), [("0.73", 0.73), (" .5\n", 0.5), ("70%", 0.7), ("1", 1.0), ("0.", 0.0)]
)
def test_parse_probability(text, value):
    assert parse_probability(text) == pytest.approx(value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("likely", "no number"),
        ("1.5", "not between"),
        ("0.6 or 0.8", "alone"),
        ("P = .5", "alone"),
        ("#$%^ 0.7 qwpoeiru", "alone"),
        ("9" * 100, "too long"),
    ],
)
def test_parse_probability_rejects(text, message):
    with pytest.raises(ValueError, match=message):
        parse_probability(text)


def test_with_instruction_appends_to_last_user_message():
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "Q?"}]
    out = with_instruction(msgs, "Say True.")
    assert out[-1]["content"] == "Q?\n\nSay True."
    assert msgs[-1]["content"] == "Q?"  # not mutated
    out2 = with_instruction([{"role": "assistant", "content": "a"}], "Say True.")
    assert out2[-1] == {"role": "user", "content": "Say True."}


def test_prices_and_overrides():
    assert lookup_price("openai/gpt-4o-mini-2024-07-18") == (0.15, 0.60)
    assert call_cost("openai/gpt-4o-mini", 1_000_000, 1_000_000) == pytest.approx(0.75)
    assert call_cost("openai/my-finetune", 1000, 1000) == 0.0
    assert call_cost("openai/my-finetune", 2_000_000, 0, {"my-finetune": (1.0, 2.0)}) == 2.0
    assert call_cost("local", 10**6, 10**6) == 0.0


def test_cache_key_depends_on_every_part():
    msgs = [{"role": "user", "content": "hi"}]
    base = cache_key("m", msgs, GenerateConfig(), 0)
    assert base == cache_key("m", [dict(msgs[0])], GenerateConfig(), 0)
    assert base != cache_key("m2", msgs, GenerateConfig(), 0)
    assert base != cache_key("m", [{"role": "user", "content": "ho"}], GenerateConfig(), 0)
    assert base != cache_key("m", msgs, GenerateConfig(temperature=1.0), 0)
    assert base != cache_key("m", msgs, GenerateConfig(), 1)


def test_cache_roundtrip_and_threads(tmp_path: Path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    lp = [TokenLogprob(" True", -0.1, {" True": -0.1, " False": -2.0})]
    cache.put("k", ModelOutput("True", "m", 3, 1, lp, cached=True, cost=0.5))
    got = cache.get("k")
    assert got is not None and got.logprobs == lp and got.tokens_in == 3 and not got.cached
    assert cache.get("missing") is None

    def write(i: int) -> None:
        for j in range(25):
            cache.put(f"{i}-{j}", ModelOutput(str(j), "m"))

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(cache) == 1 + 8 * 25
    other = ResponseCache(tmp_path / "c.sqlite")  # a second connection sees the data (WAL)
    assert other.get("7-24") is not None and other.get("7-24").text == "24"
