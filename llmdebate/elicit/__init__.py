"""Elicitation: turning a model's replies into the probability that a claim is True.

One registry of probability methods (:data:`METHODS`, a :class:`~llmdebate.registry.Registry`,
the one list of names): ``logprobs``, ``sampling`` and ``verbalised``, one small class each in
:mod:`llmdebate.elicit.methods`.
Call them through::

    est = await estimate(model, messages, "sampling", samples=8, role="judge", log=calls)
    ests = await estimates(model, [messages_a, messages_b], "logprobs", log=calls)

Each estimate appends one :class:`~llmdebate.core.schemas.ModelCallRecord` to ``log``.

Adding a method: write one subclass of :class:`Method` (optional ``needs_logprobs`` /
``check``, and ``elicit``, which makes its calls with ``log=trace.calls``) and decorate it
with ``@METHODS.register("name")``; in another package, name its module in the entry-point
group ``llmdebate.methods``. Config fields of type :data:`ProbMethod` accept it at once.

:mod:`llmdebate.elicit.prompts` holds the instructions, answer words and reply parsers.
"""

from llmdebate.elicit.methods import (
    LOGPROBS_TOP,
    METHODS,
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
)
from llmdebate.elicit.prompts import (
    FALSE_VARIANTS,
    TF_INSTRUCTION,
    TRUE_VARIANTS,
    VERBALISED_INSTRUCTION,
    parse_bool,
    parse_bool_then_reason,
    parse_probability,
    with_instruction,
)

__all__ = [
    "FALSE_VARIANTS",
    "LOGPROBS_TOP",
    "METHODS",
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
    "parse_bool_then_reason",
    "parse_probability",
    "with_instruction",
]
