"""Turning model outputs into probabilities that a True/False question is answered True.

Three methods, all pure functions here (the wrapper makes the calls):

* ``logprobs`` — one answer token with its top alternatives; P = m_T / (m_T + m_F) where m_T
  sums the probabilities of the True variants and m_F those of the False variants.
* ``sampling`` — n answers at temperature T; P = (k + 1) / (n + 2) (Laplace smoothing).
* ``verbalised`` — the model states a number in [0, 1]; it is parsed and validated.
"""

from __future__ import annotations

import math
import re
from typing import Any

from llmdebate.errors import InvalidOutputError
from llmdebate.models.base import ChatMessage, ModelOutput
from llmdebate.schemas import Estimate

TRUE_VARIANTS = (" True", "True", " true", "true", " Yes", "Yes", " yes", "yes")
FALSE_VARIANTS = (" False", "False", " false", "false", " No", "No", " no", "no")

TF_INSTRUCTION = "Answer with exactly one word: True or False."
VERBALISED_INSTRUCTION = (
    "How likely is it that the answer is True? Reply with only a probability, "
    "a decimal number between 0 and 1 (for example 0.73)."
)


def with_instruction(messages: list[ChatMessage], instruction: str) -> list[ChatMessage]:
    """Append ``instruction`` to the final user message (or add a user message)."""
    out = [dict(m) for m in messages]
    if out and out[-1]["role"] == "user":
        out[-1]["content"] = f"{out[-1]['content'].rstrip()}\n\n{instruction}"
    else:
        out.append({"role": "user", "content": instruction})
    return out


def _norm(token: str) -> str:
    # SentencePiece / BPE space markers, as some servers return them raw.
    return token.replace("\u2581", " ").replace("\u0120", " ")


def answer_masses(top: dict[str, float]) -> tuple[float, float, float]:
    """(p_true_mass, p_false_mass, neither_mass) from one position's top logprobs."""
    p_true = p_false = 0.0
    total = 0.0
    for token, lp in top.items():
        p = math.exp(lp) if lp > -1e4 else 0.0
        total += p
        t = _norm(token)
        if t in TRUE_VARIANTS:
            p_true += p
        elif t in FALSE_VARIANTS:
            p_false += p
    neither = max(0.0, min(1.0, 1.0 - p_true - p_false)) if total > 0 else 1.0
    return p_true, p_false, neither


def _answer_position(output: ModelOutput) -> int:
    """The first generated position whose token is not whitespace/punctuation-only."""
    assert output.logprobs is not None
    for i, lp in enumerate(output.logprobs):
        if _norm(lp.token).strip(" \n\t*:\"'`"):
            return i
    return 0


def estimate_from_logprobs(output: ModelOutput) -> Estimate:
    """P(True) at the answer position of ``output``; InvalidOutputError if no evidence."""
    if not output.logprobs:
        raise InvalidOutputError(f"{output.model} returned no logprobs")
    pos = _answer_position(output)
    at = output.logprobs[pos]
    top = dict(at.top)
    top.setdefault(at.token, at.logprob)
    p_true, p_false, neither = answer_masses(top)
    if p_true + p_false <= 0.0:
        shown = ", ".join(f"{t!r}" for t in list(top)[:5])
        raise InvalidOutputError(
            f"{output.model}: no True/False token among the top logprobs (top: {shown})"
        )
    value = p_true / (p_true + p_false)
    evidence: dict[str, Any] = {
        "top": {t: round(v, 6) for t, v in sorted(top.items(), key=lambda kv: -kv[1])},
        "p_true_mass": p_true,
        "p_false_mass": p_false,
        "neither_mass": neither,
        "position": pos,
        "completion": output.text,
    }
    return Estimate(value=min(1.0, max(0.0, value)), method="logprobs", evidence=evidence)


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


def estimate_from_samples(samples: list[str], temperature: float) -> Estimate:
    """Laplace-smoothed frequency of True among the parsable samples."""
    parsed = [parse_bool(s) for s in samples]
    valid = [p for p in parsed if p is not None]
    if not valid:
        raise InvalidOutputError(
            f"none of {len(samples)} samples said True or False (first: {samples[0][:60]!r})"
        )
    k = sum(valid)
    n = len(valid)
    evidence = {
        "samples": samples,
        "parsed": parsed,
        "k_true": k,
        "n_valid": n,
        "n": len(samples),
        "temperature": temperature,
    }
    return Estimate(value=(k + 1) / (n + 2), method="sampling", evidence=evidence)


_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?|\.\d+)\s*(%?)")


def parse_probability(text: str) -> float:
    """A probability in [0, 1] from a reply ('0.7', '70%', 'P = .7'); ValueError if none.

    Exactly one number must appear, so a reply like 'between 0.6 and 0.8' is rejected.
    """
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
