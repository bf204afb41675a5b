"""The text of elicitation: the instructions appended to a question, the answer words, and
parsers for replies. Pure functions and constants; this module imports nothing from the
package, so the scripted test double (:mod:`llmdebate.models.scripted`) can recognise the
prompts without depending on the rest of :mod:`llmdebate.elicit`.
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


def parse_bool(text: str) -> bool | None:
    """True/False from a reply: the first True/False/Yes/No word, or None."""
    for word in re.findall(r"[A-Za-z]+", text):
        w = word.lower()
        if w in _TRUE_WORDS:
            return True
        if w in _FALSE_WORDS:
            return False
    return None


_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?|\.\d+)\s*(%?)")


def parse_probability(text: str) -> float:
    """A probability in [0, 1] from a reply ('0.7', '70%', 'P = .7'); ValueError if none.

    Exactly one number must appear, so a reply like 'between 0.6 and 0.8' is rejected. A JSON
    object reply (structured outputs) is read from its ``probability`` field.
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
    found = _NUMBER.findall(text)
    if not found:
        raise ValueError("the reply contains no number")
    if len(found) > 1:
        raise ValueError(f"the reply contains {len(found)} numbers; give exactly one")
    raw, pct = found[0]
    value = float(raw) / (100.0 if pct else 1.0)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{value:g} is not between 0 and 1")
    return value
