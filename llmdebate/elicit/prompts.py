"""The text of elicitation: the instructions appended to a question, the answer words, and
parsers for replies. Pure functions and constants; this module imports nothing from the
package. The scripted test double (:mod:`llmdebate.models.scripted`) is told the two probe
instructions by :mod:`llmdebate.elicit.methods` when it is imported.
"""

from __future__ import annotations

import json
import re

ChatMessage = dict[str, str]

TRUE_VARIANTS = (" True", "True", " true", "true", " Yes", "Yes", " yes", "yes")
FALSE_VARIANTS = (" False", "False", " false", "false", " No", "No", " no", "no")
ANSWER_VARIANTS = (*TRUE_VARIANTS, *FALSE_VARIANTS)

TF_INSTRUCTION = "Answer with exactly one word: True or False."
VERBALISED_INSTRUCTION = (
    "How likely is it that the answer is True? Reply with only a probability, "
    "a decimal number between 0 and 1 (for example 0.73)."
)
INSTRUCTIONS = (TF_INSTRUCTION, VERBALISED_INSTRUCTION)


def with_instruction(messages: list[ChatMessage], instruction: str) -> list[ChatMessage]:
    """Append ``instruction`` to the final user message (or add a user message). A prompt
    rendered by a text template (its message names the ``template``) holds its own cue and
    is returned as it is."""
    out = [dict(m) for m in messages]
    if out and out[0].get("template"):
        return out
    if out and out[-1]["role"] == "user":
        out[-1]["content"] = f"{out[-1]['content'].rstrip()}\n\n{instruction}"
    else:
        out.append({"role": "user", "content": instruction})
    return out


_TRUE_WORDS = {"true", "yes"}
_FALSE_WORDS = {"false", "no"}


SHORT_REPLY_CHARS = 64
"""The longest reply read as one word or one number (longer replies are not read)."""


def _bare(text: str) -> str:
    word = text.strip()
    return word[:-1].rstrip() if word.endswith(".") else word


def parse_bool(text: str) -> bool | None:
    """True/False when the whole reply is one True/False/Yes/No word (any case; white space
    and a final full stop allowed), else None: no word is searched for inside other text."""
    if len(text) > SHORT_REPLY_CHARS:
        return None
    w = _bare(text).lower()
    if w in _TRUE_WORDS:
        return True
    if w in _FALSE_WORDS:
        return False
    return None


_LEADING = re.compile(r"\s*([A-Za-z]+)\b[.,:;!]?(\s.*)?", re.DOTALL)


def parse_bool_then_reason(text: str) -> bool | None:
    """True/False from a reply asked as "True or False, then one sentence of reason": the
    reply must begin with the word (a reason may follow); None otherwise. The reply is not
    searched for a word further in."""
    m = _LEADING.fullmatch(text)
    return parse_bool(m.group(1)) if m else None


_NUMBER = re.compile(r"(\d+(?:\.\d+)?|\.\d+)\s*(%?)")


def parse_probability(text: str) -> float:
    """A probability in [0, 1] from a reply ('0.7', '70%', '.7'); ValueError if none.

    The whole reply must be the number (white space and a final full stop allowed), so
    'between 0.6 and 0.8' and 'P = 0.7 because ...' are rejected. A JSON object reply
    (structured outputs) is read from its ``probability`` field.
    """
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            obj = json.loads(stripped)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and "probability" in obj:
            value = obj["probability"]
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError("'probability' must be a number")
            if not 0.0 <= float(value) <= 1.0:
                raise ValueError(f"{value:g} is not between 0 and 1")
            return float(value)
    if len(text) > SHORT_REPLY_CHARS:
        raise ValueError(f"the reply is too long for a probability (> {SHORT_REPLY_CHARS} "
                         "characters)")
    found = _NUMBER.fullmatch(_bare(text))
    if not found:
        if not _NUMBER.search(text):
            raise ValueError("the reply contains no number")
        raise ValueError("reply with the probability alone (one number, e.g. 0.73)")
    raw, pct = found.groups()
    value = float(raw) / (100.0 if pct else 1.0)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{value:g} is not between 0 and 1")
    return value
