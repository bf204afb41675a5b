"""The probability methods, one class each, entries of the registry :data:`METHODS`.

Each method asks a :class:`~llmdebate.models.Model` whether the True/False question ending a
conversation is True and turns the replies into an :class:`~llmdebate.core.schemas.Estimate`:

* ``logprobs`` — one answer token with its top-20 logprobs; P = m_T / (m_T + m_F), where m_T
  sums the probabilities of the True variants and m_F those of the False variants;
* ``sampling`` — n answers at temperature T (each cached under its own sample index);
  P = (k + 1) / (n + 2) (Laplace smoothing);
* ``verbalised`` — the model states a number in [0, 1] (asked as ``{"probability": p}`` with
  the backend's structured outputs, :data:`PROBABILITY_SCHEMA`); a reply that does not parse
  is re-asked with the parse error, up to 3 attempts, then
  :class:`~llmdebate.errors.InvalidOutputError`.
"""

from __future__ import annotations

import math
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator

from llmdebate.core.decisions import calling
from llmdebate.core.schemas import Estimate, ModelCallRecord
from llmdebate.elicit.prompts import (
    ANSWER_VARIANTS,
    FALSE_VARIANTS,
    TF_INSTRUCTION,
    TRUE_VARIANTS,
    VERBALISED_INSTRUCTION,
    ChatMessage,
    parse_bool_then_reason,
    parse_probability,
    with_instruction,
)
from llmdebate.errors import InvalidOutputError, UserError
from llmdebate.models.interface import BASE_MODEL_HINT, GenerateConfig, ModelOutput
from llmdebate.models.scripted import answers_probes
from llmdebate.models.structured import OutputSchema
from llmdebate.models.wrapper import Model, describe_error, gather_logged
from llmdebate.registry import Registry

answers_probes(TF_INSTRUCTION, VERBALISED_INSTRUCTION)  # the scripted test double plays them

LOGPROBS_TOP = 20  # the most OpenAI returns
MASSES = ("p_true_mass", "p_false_mass", "neither_mass")
"""The answer masses of a ``logprobs`` estimate (its evidence), also kept on its call record
(``notes["masses"]``): the probability of the True variants, of the False variants, and of
every other token at the answer position. True + False is the *answer mass*: how much of the
model's reply was an answer at all (docs/metrics.md, "beliefs")."""
VERBALISED_ATTEMPTS = 3
PROBABILITY_SCHEMA = OutputSchema.of(
    "probability",
    {
        "type": "object",
        "properties": {"probability": {"type": "number", "minimum": 0, "maximum": 1}},
        "required": ["probability"],
        "additionalProperties": False,
    },
)
"""The verbalised probability's reply, enforced by backends with structured outputs."""


# ---------------------------------------------------------------------- pure extraction
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
            + (f"; {BASE_MODEL_HINT}" if output.endpoint == "chat" else "")
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
    # built unvalidated (one per estimate): the value is a finite ratio, clamped to [0, 1]
    return Estimate.trusted(value=min(1.0, max(0.0, value)), method="logprobs", evidence=evidence)


def estimate_from_samples(samples: list[str], temperature: float) -> Estimate:
    """Laplace-smoothed frequency of True among the parsable samples.

    A sample is cut at a few tokens (:class:`Sampling`), so it answers when it begins with a
    True/False/Yes/No word (:func:`parse_bool_then_reason`); no word is searched for further in.
    """
    parsed = [parse_bool_then_reason(s) for s in samples]
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


# ------------------------------------------------------------------------------ methods
@dataclass(frozen=True)
class Options:
    """The settings of one estimate (each method reads the ones it uses)."""

    samples: int = 8
    temperature: float = 1.0


@dataclass
class Trace:
    """What a method did, for the estimate's one call record: the messages sent last, the
    records of its model calls, and the reply fields to show."""

    sent: list[ChatMessage]
    calls: list[ModelCallRecord] = field(default_factory=list)
    completion: str | None = None
    logprobs: list[dict[str, Any]] | None = None
    samples: list[str] | None = None


class Method(ABC):
    """One probability method, an entry of :data:`METHODS`: subclasses implement
    :meth:`elicit` (and may set ``needs_logprobs``, override :meth:`check`)."""

    needs_logprobs: ClassVar[bool] = False

    def __init__(self, name: str) -> None:
        self.name = name
        """The name it is registered under."""

    def check(self, model: Model, options: Options) -> None:
        """Raise a one-line :class:`~llmdebate.errors.UserError` if the method cannot run."""
        if self.needs_logprobs and not model.supports_logprobs:
            others = [n for n in METHODS.names() if not METHODS.get(n).needs_logprobs]
            raise UserError(
                f"{model.name} returns no logprobs ({model.backend.provider} has none): "
                f"use {' or '.join(f'method={n!r}' for n in others)}"
            )

    @abstractmethod
    async def elicit(
        self, model: Model, messages: list[ChatMessage], options: Options, trace: Trace
    ) -> Estimate:
        """Make the calls (with ``log=trace.calls``), fill ``trace``, return the estimate."""


METHODS: Registry[type[Method]] = Registry("probability method", group="llmdebate.methods")
"""The probability methods by name (``logprobs``, ``sampling``, ``verbalised`` are built in,
registered below; a package adds one through the entry-point group ``llmdebate.methods``)."""


def get_method(name: str, *, where: str = "") -> Method:
    """The method called ``name``; a :class:`~llmdebate.errors.UserError` listing the
    registered names otherwise (``where``: the field or flag the name came from)."""
    return METHODS.get(name, where=where)(name)


def _known_method(name: str) -> str:
    if name not in METHODS:
        raise ValueError(METHODS.unknown(name))
    return name


ProbMethod = Annotated[str, AfterValidator(_known_method), METHODS]
"""The name of a probability method: a config field of this type accepts the names of
:data:`METHODS` and names them in its error message (and ``--help`` lists them: the
registry rides along as the annotation's metadata)."""


@METHODS.register("logprobs", capabilities={"logprobs"})
class Logprobs(Method):
    """One answer token at temperature 0 with its top-20 logprobs."""

    needs_logprobs = True

    async def elicit(
        self, model: Model, messages: list[ChatMessage], options: Options, trace: Trace
    ) -> Estimate:
        trace.sent = with_instruction(messages, TF_INSTRUCTION)
        cfg = GenerateConfig(
            temperature=0.0,
            max_tokens=1,
            top_logprobs=LOGPROBS_TOP,
            logprob_tokens=ANSWER_VARIANTS if model.backend.reports_logprob_tokens else None,
        )
        out = await model.generate(trace.sent, cfg, log=trace.calls)
        trace.completion = out.text
        trace.logprobs = _logprob_dicts(out, trace.calls)
        return estimate_from_logprobs(out)


def _logprob_dicts(out: ModelOutput, calls: list[ModelCallRecord]) -> list[dict[str, Any]] | None:
    """The output's logprobs as the call record holds them (that record's list, if it has
    one: it was converted once already), else converted here."""
    if not out.logprobs:
        return None
    if calls and calls[-1].logprobs is not None and calls[-1].error is None:
        return calls[-1].logprobs
    return [{"token": lp.token, "logprob": lp.logprob, "top": dict(lp.top)} for lp in out.logprobs]


@METHODS.register("sampling")
class Sampling(Method):
    """``samples`` short answers at ``temperature``, Laplace-smoothed."""

    def check(self, model: Model, options: Options) -> None:
        if options.samples < 1:
            raise UserError(f"samples must be >= 1 (got {options.samples})")

    async def elicit(
        self, model: Model, messages: list[ChatMessage], options: Options, trace: Trace
    ) -> Estimate:
        trace.sent = with_instruction(messages, TF_INSTRUCTION)
        cfg = GenerateConfig(temperature=options.temperature, max_tokens=4)
        outs = await model.generate_many(
            [trace.sent] * options.samples,
            cfg,
            sample_indices=range(options.samples),
            log=trace.calls,
        )
        trace.samples = [o.text for o in outs]
        return estimate_from_samples(trace.samples, options.temperature)


@METHODS.register("verbalised")
class Verbalised(Method):
    """A stated probability, re-asked with the parse error up to 3 attempts."""

    async def elicit(
        self, model: Model, messages: list[ChatMessage], options: Options, trace: Trace
    ) -> Estimate:
        trace.sent = with_instruction(messages, VERBALISED_INSTRUCTION)
        cfg = GenerateConfig(temperature=0.0, max_tokens=16, json_schema=PROBABILITY_SCHEMA)
        errors: list[str] = []
        for _ in range(VERBALISED_ATTEMPTS):
            out = await model.generate(trace.sent, cfg, log=trace.calls)
            trace.completion = out.text
            try:
                value = parse_probability(out.text)
            except ValueError as exc:
                errors.append(f"{out.text[:80]!r}: {exc}")
                trace.sent = [
                    *trace.sent,
                    {"role": "assistant", "content": out.text},
                    {
                        "role": "user",
                        "content": f"That reply could not be read ({exc}). "
                        + VERBALISED_INSTRUCTION,
                    },
                ]
                continue
            evidence = {"reply": out.text, "attempts": len(errors) + 1, "errors": errors}
            return Estimate(value=value, method="verbalised", evidence=evidence)
        raise InvalidOutputError(
            f"{model.name} gave no probability in {VERBALISED_ATTEMPTS} attempts: "
            + "; ".join(errors)
        )


# ---------------------------------------------------------------------------- public API
async def estimate(
    model: Model,
    messages: list[ChatMessage],
    method: ProbMethod | str,
    *,
    samples: int = 8,
    temperature: float = 1.0,
    role: str = "",
    act: str = "",
    log: list[ModelCallRecord] | None = None,
) -> Estimate:
    """P(the True/False question ending ``messages`` is True) by ``method``.

    When ``log`` is given, one record is appended for the whole estimate (also on failure):
    the messages sent (the last ones, for a re-asked verbalised estimate), the completion
    (or the samples), the logprobs, and the summed tokens, cost and retries; a ``logprobs``
    estimate's record also holds the answer masses in ``notes["masses"]`` (:data:`MASSES`).
    """
    start = time.perf_counter()
    options = Options(samples=samples, temperature=temperature)
    trace = Trace(sent=messages)
    try:
        impl = get_method(method)
        impl.check(model, options)
        with calling(role, act):
            est = await impl.elicit(model, messages, options, trace)
    except Exception as exc:
        if log is not None:
            log.append(
                model.record(
                    role, act, messages=trace.sent, error=describe_error(exc), **_totals(trace)
                )
            )
        raise
    if log is not None:
        latency = time.perf_counter() - start
        masses = {k: float(est.evidence[k]) for k in MASSES if k in est.evidence}
        notes = {"masses": masses} if masses else {}
        only = trace.calls[0] if len(trace.calls) == 1 else None
        if (
            only is not None
            and only.error is None
            and trace.samples is None
            and only.messages is trace.sent
            and only.completion == trace.completion
            and only.logprobs is trace.logprobs
        ):
            # one call that is the whole estimate (the usual logprobs case): its record, named
            # for the estimate, is the record, with the same fields as the one below
            update = {"role": role, "act": act, "latency_s": latency}
            log.append(only.model_copy(update={**update, "notes": {**only.notes, **notes}}))
        else:
            log.append(
                model.record(
                    role,
                    act,
                    messages=trace.sent,
                    completion=trace.completion if trace.samples is None else None,
                    logprobs=trace.logprobs,
                    samples=trace.samples,
                    latency_s=latency,
                    notes=notes,
                    **_totals(trace),
                )
            )
    est.evidence.setdefault("model", model.name)
    return est


async def estimates(
    model: Model,
    batch: Sequence[list[ChatMessage]],
    method: ProbMethod | str,
    *,
    samples: int = 8,
    temperature: float = 1.0,
    role: str = "",
    act: str = "",
    log: list[ModelCallRecord] | None = None,
) -> list[Estimate]:
    """:func:`estimate` for each conversation, in input order.

    The calls go out together, so a local model answers them in one padded forward pass.
    Every estimate runs to its end; then the records are appended to ``log`` in input order
    and the failure that matters most, if any, is raised: one that stops the run
    (authentication, a user error) before one that ends the debate.
    """
    return await gather_logged(
        [
            partial(
                estimate,
                model,
                m,
                method,
                samples=samples,
                temperature=temperature,
                role=role,
                act=act,
            )
            for m in batch
        ],
        log,
    )


def _totals(trace: Trace) -> dict[str, Any]:
    """The summed figures of an estimate's calls (one pass: this runs for every estimate)."""
    tokens_in = tokens_out = retries = 0
    cost = 0.0
    done = 0
    cached = True
    constrained: bool | None = None  # every call asked for a schema and the backend enforced it
    batch_size: int | None = None
    for r in trace.calls:
        retries += r.retries
        if r.error is not None:
            continue
        done += 1
        tokens_in += r.tokens_in
        tokens_out += r.tokens_out
        cost += r.cost
        cached = cached and r.cached
        if r.constrained is not None:
            constrained = r.constrained if constrained is None else constrained and r.constrained
        if r.batch_size and (batch_size is None or r.batch_size > batch_size):
            batch_size = r.batch_size
    return {
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "cost": float(cost),
        "cached": done > 0 and cached,
        "retries": retries,
        "constrained": constrained,
        "batch_size": batch_size,
    }
