"""Every judge prompt says what the judge has read of the passage; the speech rules read as
sentences."""

from __future__ import annotations

import re

import pytest

from llmdebate.prompts import Prompts

HEARD = {
    "judge": {"claim": "c", "evidence": "the prover's evidence"},
    "two_sided_judge": {"options": "(A) x\n(B) y", "first": "x", "transcript": "A: ..."},
    "consultancy_judge": {"options": "(A) x\n(B) y", "first": "x", "transcript": "C: ..."},
    "judge_turn": {
        "options": "(A) x\n(B) y", "first": "x", "transcript": "A: ...", "speakers": "two",
        "round": 1, "rounds": 2, "turn_cost": 0.1,
    },
}
DIRECT = {"options": "(A) x\n(B) y", "first": "x"}


def _text(act: str, **variables: object) -> str:
    return "\n".join(m["content"] for m in Prompts().render(act, question="Q?", **variables))


@pytest.mark.parametrize("act", sorted(HEARD))
def test_every_judge_that_reads_speeches_is_told_it_has_not_read_the_passage(act: str) -> None:
    text = _text(act, **HEARD[act], context=None, hidden=True, quoted=True)
    assert "You have not read the passage" in text and "<v_quote>" in text
    shown = _text(act, **HEARD[act], context="THE PASSAGE", hidden=False, quoted=True)
    assert "THE PASSAGE" in shown and "You have not read" not in shown
    assert "Quotes were checked against the passage" in shown


def test_the_direct_judges_hear_no_word_of_quotes_or_speakers() -> None:
    blind = _text("direct_judge", **DIRECT, context=None, hidden=True, quoted=True)
    assert "You have not read the passage" in blind
    assert "quote" not in blind.lower() and "speaker" not in blind.lower()
    expert = _text("direct_judge", **DIRECT, context="THE PASSAGE", hidden=False, quoted=True)
    assert "THE PASSAGE" in expert and "quote" not in expert.lower()


@pytest.mark.parametrize("act", ["two_sided_debater", "consultancy_consultant"])
def test_the_speech_rules_are_separate_sentences_and_count_copies_as_quotes(act: str) -> None:
    text = _text(
        act, options="(A) x\n(B) y", position="x", opponent_position="y", round=1, rounds=2,
        transcript="", context="THE PASSAGE", max_words=100, min_words=None, quote_words=50,
        scratchpad=True,
    )
    assert not re.search(r"[.\"](First|Support)", text), text
    assert ". First think privately" in text
    assert "copied without the tags counts as quoted" in text
