"""The interactive judge: its structured turn (ask / decide) and its score."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from llmdebate.core.scoring import interactive_judge_score, log_score
from llmdebate.protocols.judge_turn import (
    QUESTION_CHARS,
    JudgeTurnError,
    JudgeTurnReply,
    judge_turn_schema,
    parse_judge_turn,
)

# ---------------------------------------------------------------------------- the score


def test_score_values() -> None:
    assert interactive_judge_score(1.0, 0, 0.05) == 0.0
    assert interactive_judge_score(0.5, 0, 0.1) == pytest.approx(math.log(0.5))
    assert interactive_judge_score(0.8, 3, 0.05) == pytest.approx(math.log(0.8) - 0.15)
    # Michael et al.'s default: bits, 0.05 a turn
    assert interactive_judge_score(0.5, 2, 0.05, log_base=2.0) == pytest.approx(-1.1)
    assert interactive_judge_score(0.0, 1, 0.05) == -math.inf
    # with no turns it is the log score of the judges' verdicts
    assert interactive_judge_score(0.3, 0, 0.2) == pytest.approx(log_score(0.3, 1))


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.floats(0.01, 0.99), st.floats(0.0, 0.5), st.integers(0, 20), st.floats(0.001, 1.0))
def test_score_is_monotone(p: float, dp: float, turns: int, cost: float) -> None:
    q = min(1.0, p + dp)
    assert interactive_judge_score(q, turns, cost) >= interactive_judge_score(p, turns, cost)
    assert interactive_judge_score(p, turns + 1, cost) < interactive_judge_score(p, turns, cost)
    assert interactive_judge_score(p, turns + 1, 0.0) == interactive_judge_score(p, turns, 0.0)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((1.5, 0, 0.1), "p_correct"),
        ((0.5, -1, 0.1), "turns"),
        ((0.5, 1, -0.1), "turn_cost"),
    ],
)
def test_score_bad_input(args: tuple[float, int, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        interactive_judge_score(*args)


# ---------------------------------------------------------------------------- the turn


def test_schema_is_strict_and_flat() -> None:
    schema = judge_turn_schema()
    assert schema.name == "judge_turn"
    body = schema.schema
    assert body["type"] == "object" and body["additionalProperties"] is False
    assert body["required"] == ["action", "question", "p_first"]
    assert body["properties"]["action"]["enum"] == ["ask", "decide"]
    assert body["properties"]["p_first"]["minimum"] == 0.0
    assert body["properties"]["p_first"]["maximum"] == 1.0
    assert body["properties"]["question"]["maxLength"] == QUESTION_CHARS


def test_parse_ask_and_decide() -> None:
    ask = parse_judge_turn('{"action": "ask", "question": "Quote line 3?", "p_first": 0.4}')
    assert ask.asks and ask.question == "Quote line 3?" and ask.p_correct(False) == 0.6
    text = 'I am confident.\n```json\n{"action": "decide", "p_first": 0.9}\n```'
    dec = parse_judge_turn(text)
    assert not dec.asks and dec.question == "" and dec.p_correct(True) == 0.9


def test_a_reply_valid_under_the_schema_parses() -> None:
    reply = JudgeTurnReply(action="decide", question="", p_first=0.25)
    assert parse_judge_turn(json.dumps(reply.model_dump())) == reply


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("no json here", "no complete JSON object"),
        (
            '{"action": "ask", "question": "  ", "p_first": 0.5}',
            "question: an 'ask' turn needs a non-empty question",
        ),
        ('{"action": "stop", "question": "", "p_first": 0.5}', "action"),
        ('{"action": "decide", "question": "", "p_first": 1.2}', "p_first"),
        ('{"action": "ask", "question": "q"}', "p_first"),
        ('{"action": "decide", "question": "", "p_first": 0.5, "why": 1}', "why: unknown field"),
        ('{broken {"action": "ask", "p_first": 0.5}', "question: Field required"),
        ('{"action": "ask", "question": "q", "p_first"', "no complete JSON object"),
    ],
)
def test_parse_errors_name_the_field(text: str, message: str) -> None:
    with pytest.raises(JudgeTurnError, match=message) as info:
        parse_judge_turn(text)
    assert "\n" not in str(info.value)


def test_long_questions_are_refused() -> None:
    with pytest.raises(ValidationError):
        JudgeTurnReply(action="ask", question="x" * (QUESTION_CHARS + 1), p_first=0.5)
