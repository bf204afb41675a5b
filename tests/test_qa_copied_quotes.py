"""Passage text copied without quote tags is a quote: under the field's normalisation (case and
punctuation ignored), against the quote budget with the same re-ask and cut, and recorded for
the quote statistics."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmdebate.agents.settings import ProverSettings
from llmdebate.protocols.speeches import Rules, _judge
from llmdebate.qa.passage import JudgeView
from llmdebate.qa.quotes import QuoteBudget

PASSAGE = (
    "The ship's captain, a weathered man named Holt, had crossed the northern sea nine times. "
    "On the tenth crossing the ice closed around the hull, and for forty days the crew waited, "
    "rationing biscuits and telling stories of home. When the thaw came, only Holt and the "
    "cook, a quiet boy from the southern islands, were strong enough to raise the sails. "
    "They brought the ship into harbour on a grey morning, and no one in the town believed "
    "them until they saw the frozen rigging with their own eyes."
)
WORDS = PASSAGE.split()


def _view() -> JudgeView:
    return JudgeView.of({"context": PASSAGE}, "hidden")


def _disguise(text: str) -> str:
    """The copy a model writes: punctuation stripped, case changed."""
    return re.sub(r"[^\w\s]", "", text).upper()


def test_a_92_word_copy_without_tags_goes_over_a_50_word_budget_is_reasked_and_cut() -> None:
    copy = " ".join((WORDS * 2)[:92])
    raw = f"<argument>My side is right. {_disguise(copy)}</argument>"
    rules = Rules.of(ProverSettings(quote_words=50, scratchpad=True))
    attempt = _judge(rules, _view(), raw, reasks=0)
    assert attempt.budget is not None and "over the limit of 50" in attempt.budget
    assert attempt.message and "copied without quote tags counts as quoted" in attempt.message
    records = _view().records(attempt.reply.argument, rules.budget)
    assert records and all(q["copied"] and q["status"] == "over_budget" for q in records)
    shown = _view().for_model(attempt.reply.argument, records)
    assert "HOLT" not in shown and "over the budget" in shown


def test_a_short_copy_within_the_budget_is_a_verified_quote_with_spans() -> None:
    copy = "the ice closed around the hull, and for forty days"
    view = _view()
    (q,) = view.records(f"Recall: {copy.title()}! That settles it.", QuoteBudget(max_words=50))
    assert q["copied"] and q["status"] == "verified"
    (start, end), = q["spans"]
    assert PASSAGE[start:end].lower().startswith("the ice") and PASSAGE[start:end].endswith("days")
    assert "<v_quote>" in view.for_model(f"Recall: {copy.title()}! That settles it.", [q])


def test_copies_and_marked_quotes_share_one_budget_in_speech_order() -> None:
    view = _view()
    text = (
        "<quote>the crew waited, rationing biscuits and telling stories of home</quote> and "
        "only holt and the cook a quiet boy from the southern islands were strong enough"
    )
    quoted = view.quoted(text)
    assert [type(q).__name__ for q in quoted] == ["CheckedQuote", "CopiedQuote"]
    records = view.records(text, QuoteBudget(max_words=12))
    assert [(q["status"], q.get("copied", False)) for q in records] == [
        ("verified", False), ("over_budget", True)
    ]


def test_with_the_passage_shown_copies_are_plain_text() -> None:
    view = JudgeView.of({"context": PASSAGE}, "shown")
    assert view.records(" ".join(WORDS[:20]), QuoteBudget(max_words=5)) == []


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(start=st.integers(0, len(WORDS) - 12), n=st.integers(8, 12), upper=st.booleans())
def test_any_disguised_copy_of_at_least_30_characters_counts(
    start: int, n: int, upper: bool
) -> None:
    copy = " ".join(WORDS[start : start + n])
    written = _disguise(copy) if upper else re.sub(r"[^\w\s]", "", copy).lower()
    quoted = _view().quoted(f"zzz {written} qqq")
    assert sum(len(q.text.split()) for q in quoted) == len(written.split())
