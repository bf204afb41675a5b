"""Elicitation: turning a model's replies into the probability that a claim is True.

One registry of probability methods (:data:`METHODS`, the one list of names): ``logprobs``,
``sampling`` and ``verbalised``, one small class each in :mod:`llmdebate.elicit.methods`.
Call them through::

    est = await estimate(model, messages, "sampling", samples=8, role="judge", log=calls)
    ests = await estimates(model, [messages_a, messages_b], "logprobs", log=calls)

Each estimate appends one :class:`~llmdebate.schemas.ModelCallRecord` to ``log``.

Adding a method: add its name to :data:`ProbMethod` in :mod:`llmdebate.elicit.methods`,
write one subclass of :class:`Method` there (``name``, optional ``needs_logprobs`` /
``check``, and ``elicit``, which makes its calls with ``log=trace.calls``) and decorate it
with ``@register``. A test checks that the registry's keys equal :data:`METHODS`.

:mod:`llmdebate.elicit.prompts` holds the instructions, answer words and reply parsers.
"""

from llmdebate.elicit.methods import (
    LOGPROBS_TOP,
    METHODS,
    REGISTRY,
    VERBALISED_ATTEMPTS,
    Method,
    Options,
    ProbMethod,
    Trace,
    answer_masses,
    estimate,
    estimate_from_logprobs,
    estimate_from_samples,
    estimates,
    get_method,
    register,
)
from llmdebate.elicit.prompts import (
    FALSE_VARIANTS,
    TF_INSTRUCTION,
    TRUE_VARIANTS,
    VERBALISED_INSTRUCTION,
    parse_bool,
    parse_probability,
    with_instruction,
)

__all__ = [
    "FALSE_VARIANTS",
    "LOGPROBS_TOP",
    "METHODS",
    "REGISTRY",
    "TF_INSTRUCTION",
    "TRUE_VARIANTS",
    "VERBALISED_ATTEMPTS",
    "VERBALISED_INSTRUCTION",
    "Method",
    "Options",
    "ProbMethod",
    "Trace",
    "answer_masses",
    "estimate",
    "estimate_from_logprobs",
    "estimate_from_samples",
    "estimates",
    "get_method",
    "parse_bool",
    "parse_probability",
    "register",
    "with_instruction",
]
