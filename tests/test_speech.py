"""A speech's scratchpad, word count and word limits."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmdebate.qa.quotes import extract_quotes
from llmdebate.qa.speech import (
    LimitDecision,
    WordLimit,
    count_words,
    enforce_word_limit,
    parse_reply,
    truncate_words,
    truncation_marker,
)

SECRET = "SCRATCHPADSECRET"
plain = st.text(alphabet=st.sampled_from(list("abc xyz.,!?\n'\"")), max_size=80)


def reply_shapes(thinking: str, argument: str) -> list[str]:
    """The shapes a model's reply takes: all tags, no argument tag, a missing opening or
    closing thinking tag, thinking after the argument, upper-case tags, several blocks."""
    return [
        f"<thinking>{thinking}</thinking>\n<argument>{argument}</argument>",
        f"<thinking>{thinking}</thinking>\n{argument}",
        f"{thinking}</thinking>\n<argument>{argument}</argument>",
        f"{thinking}</thinking>{argument}",
        f"<thinking>{thinking}\n<argument>{argument}</argument>",
        f"<thinking>{thinking}<argument>{argument}",
        f"<argument>{argument}</argument><thinking>{thinking}</thinking>",
        f"<THINKING>{thinking}</THINKING><ARGUMENT>{argument}</ARGUMENT>",
        f"<thinking>{thinking}</thinking>{argument}<thinking>{thinking}</thinking>",
    ]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plain, plain.filter(lambda s: s.strip()))
def test_no_scratchpad_text_reaches_the_argument(thinking: str, argument: str) -> None:
    thinking = f"{thinking} {SECRET} {thinking}"
    for shape in reply_shapes(thinking, argument):
        reply = parse_reply(shape)
        assert SECRET not in reply.argument, shape
        assert SECRET in reply.thinking, shape
        assert reply.argument == argument.strip(), shape
        assert reply.problem is None
        assert "<" not in reply.argument


def test_a_reply_with_only_thinking_has_no_argument() -> None:
    for shape in (f"<thinking>{SECRET}</thinking>", f"<thinking>{SECRET}", "", "  "):
        reply = parse_reply(shape)
        assert reply.argument == ""
        assert reply.problem is not None and "no argument" in reply.problem
    assert parse_reply("Just an argument.").argument == "Just an argument."
    assert parse_reply("Just an argument.").thinking == ""


def test_json_replies() -> None:
    good = json.dumps({"thinking": SECRET, "argument": "A is right."})
    assert parse_reply(good, "json") == parse_reply(f"```json\n{good}\n```", "json")
    reply = parse_reply(good, "json")
    assert (reply.thinking, reply.argument, reply.problem) == (SECRET, "A is right.", None)
    bad = parse_reply("<argument>x</argument>", "json")
    assert bad.argument == "" and bad.problem is not None and "not a JSON object" in bad.problem
    empty = parse_reply(json.dumps({"thinking": SECRET}), "json")
    assert SECRET not in empty.argument and empty.problem == 'the reply has no "argument" string'
    assert parse_reply("[1]", "json").problem == "the reply is not a JSON object"


def test_words_are_counted_without_quote_tags() -> None:
    assert count_words("one two  three\nfour") == 4
    assert count_words("He said <quote>it was late</quote>.") == 5
    assert count_words("<v_quote>a</v_quote><u_quote>b</u_quote>") == 2
    assert count_words("") == 0
    assert count_words("wait — what ?") == 2


def test_truncation_cuts_at_a_sentence_end_with_a_marker() -> None:
    text = "One two three. Four five six seven. Eight nine ten eleven twelve."
    cut, kept = truncate_words(text, 9)
    assert cut == f"One two three. Four five six seven. {truncation_marker(9)}"
    assert kept == 7
    # no sentence end within the last half: cut at the word
    cut, kept = truncate_words("a b c d e f g h i j k l", 5)
    assert (cut, kept) == (f"a b c d e {truncation_marker(5)}", 5)
    # within the limit: unchanged
    assert truncate_words(text, 12) == (text, 12)


def test_truncation_closes_a_quote_it_cuts() -> None:
    text = "He wrote <quote>the night was dark and the rain fell hard on the roof</quote> then."
    cut, kept = truncate_words(text, 6)
    assert kept == 6
    assert cut.endswith(f"</quote> {truncation_marker(6)}")
    (quote,) = extract_quotes(cut)
    assert quote.closed and quote.text == "the night was dark"
    cut, _ = truncate_words("Look <quote>one two three.</quote> four five six seven", 4)
    assert cut == f"Look <quote>one two three.</quote> {truncation_marker(4)}"


def test_enforcing_a_word_limit() -> None:
    limit = WordLimit(max_words=5, min_words=2, reasks=1)
    within = enforce_word_limit("a b c", limit)
    assert within.decision == "within" and within.text == "a b c" and within.message is None

    long = "a b c d. e f g."
    reask = enforce_word_limit(long, limit)
    assert reask.decision == "reask" and reask.text == long
    assert reask.message == (
        "Your argument has 7 words, over the limit of 5. Write it again in at most 5 words."
    )
    cut = enforce_word_limit(long, limit, reasks_used=1)
    assert cut.decision == "truncated" and cut.kept_words == 4
    assert cut.text == f"a b c d. {truncation_marker(5)}"
    assert count_words(cut.text) == 4  # the marker is not counted: a second check passes
    assert enforce_word_limit(cut.text, limit, reasks_used=1).decision == "within"
    assert cut.record() == {
        "decision": "truncated",
        "words": 7,
        "kept_words": 4,
        "message": None,
        "max_words": 5,
        "min_words": 2,
    }

    short = enforce_word_limit("a", limit)
    assert short.decision == "reask" and "under the minimum of 2" in (short.message or "")
    kept = enforce_word_limit("a", limit, reasks_used=1)
    assert kept == LimitDecision("short", 1, "a", 1, None, 5, 2)
    assert enforce_word_limit("a " * 500, WordLimit()).decision == "within"


def test_word_limit_bounds_are_checked() -> None:
    with pytest.raises(ValueError, match="min_words"):
        WordLimit(max_words=10, min_words=20)
    with pytest.raises(ValueError, match="max_words"):
        WordLimit(max_words=0)
    with pytest.raises(ValueError, match="reasks"):
        WordLimit(reasks=-1)
