"""Language-model agents: the prover A and the estimator B of prover-estimator debate.

Every model call goes through :class:`~llmdebate.models.Model` with a role and an act, and is
recorded in the call log of the debate's context (``ctx.calls``). One agent instance plays one
debate (:mod:`llmdebate.agents.factory` builds them), so per-debate memory such as the
prover's stated beliefs lives on the instance. Structured replies
(decompositions, indices, directions) are asked for with the backend's structured-output
mechanism (the schemas of :mod:`llmdebate.agents.replies`) and validated with the same
pydantic models; an invalid reply (for what a schema cannot express, or from a backend that
cannot constrain) is re-asked with the validation error, at most ``max_attempts`` times, then
:class:`InvalidOutputError` is raised (the runner records the debate as failed). Each call
record says whether the backend constrained it and, if its reply was invalid, why.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from functools import partial
from typing import Any, Literal

from llmdebate.agents.audit import audit_decomposition
from llmdebate.agents.parsing import (
    ReplyError,
    parse_decomposition,
    parse_direction,
    parse_index,
)
from llmdebate.agents.replies import (
    decomposition_chars,
    decomposition_schema,
    direction_schema,
    index_schema,
)
from llmdebate.core.decisions import deciding, narrowed
from llmdebate.core.roles import DebateContext, DirectionChoice
from llmdebate.core.schemas import Claim, Decomposition, Estimate, Evidence, ModelCallRecord
from llmdebate.elicit import ProbMethod, estimate
from llmdebate.errors import InvalidOutputError
from llmdebate.models import GenerateConfig, Model
from llmdebate.models.reply_budget import reply_tokens
from llmdebate.models.structured import OutputSchema
from llmdebate.models.wrapper import gather_logged
from llmdebate.prompts import Prompts, rule_text
from llmdebate.qa.passage import JudgeView
from llmdebate.qa.speech import parse_reply

DirectionMode = Literal["belief", "model"]
RecursionMode = Literal["belief", "model"]
Decomposer = Literal["model", "formal"]


def decompose_tokens(width: int) -> int:
    """Tokens a decomposition of ``width`` subclaims gets at least: one per character of the
    longest reply its schema admits, so that a constrained reply always closes (a token is at
    least one character); replies are usually far shorter and stop when the JSON closes."""
    return decomposition_chars(width)


FormalDecomposer = Callable[[Claim, dict[str, Any], int], Decomposition | None]
"""(claim, the dataset item, width) -> the item's own decomposition of the claim, or None."""


def _context_text(item: dict[str, Any] | None) -> str | None:
    if not item:
        return None
    ctx = item.get("context")
    return ctx if isinstance(ctx, str) and ctx.strip() else None


def claim_messages(prompts: Prompts, claim: Claim, ctx: DebateContext) -> list[dict[str, str]]:
    """The ``estimate`` prompt for a claim on its own (no parent, no earlier outcomes)."""
    return prompts.render(
        "estimate",
        claim=claim.text,
        parent=None,
        rule=None,
        subclaims=None,
        index=None,
        outcomes=[],
        context=_context_text(ctx.item),
    )


MAX_WIDENINGS = 2
"""How many times a structured reply cut by its token cap is asked again with twice the cap."""


def reply_budget(model: Model, schema: OutputSchema, floor: int = 8) -> int:
    """The token cap of a structured act: the longest reply ``schema`` admits, however it
    is spaced, in the model's tokenizer with a margin (:mod:`llmdebate.models.reply_budget`)."""
    own = getattr(model, "reply_tokens", None)
    return int(own(schema, floor)) if own is not None else reply_tokens(schema, None, floor)


async def ask_structured(
    model: Model,
    messages: list[dict[str, str]],
    parse: Callable[[str], Any],
    *,
    role: str,
    act: str,
    config: GenerateConfig,
    max_attempts: int,
    calls: list[Any],
    schema: OutputSchema | None = None,
    attempts: list[int] | None = None,
) -> Any:
    """Generate (asking for ``schema`` when given), parse; on a :class:`ReplyError` re-ask
    with the error, bounded. A reply that fails because ``max_tokens`` cut it is asked again
    as it was with twice the budget (at most :data:`MAX_WIDENINGS` times, not counted as an
    attempt). The record of an invalid reply gets the error in ``invalid``; ``attempts`` (a
    list) receives the number of attempts made."""
    errors: list[str] = []
    convo = list(messages)
    if schema is not None:
        config = dataclasses.replace(config, json_schema=schema)
    widened = 0
    n = 0
    while n < max_attempts:
        n += 1
        own: list[Any] = []
        try:
            out = await model.generate(convo, config, role=role, act=act, log=own)
        finally:
            calls.extend(own)
        try:
            value = parse(out.text)
        except ReplyError as exc:
            if own:
                own[-1].invalid = str(exc)
            if out.tokens_out >= config.max_tokens and widened < MAX_WIDENINGS:
                # cut by the cap, not wrong: the same question with twice the budget
                widened += 1
                n -= 1
                config = dataclasses.replace(config, max_tokens=2 * config.max_tokens)
                continue
            errors.append(f"{exc} (reply: {out.text[:120]!r})")
            convo = [
                *convo,
                {"role": "assistant", "content": out.text},
                {"role": "user", "content": f"That reply is not valid: {exc}. Try again."},
            ]
            continue
        if attempts is not None:
            attempts.append(n)
        return value
    raise InvalidOutputError(
        f"{role} {act}: no valid reply in {max_attempts} attempts; last: {errors[-1]}"
    )


class LLMProver:
    """Debater A played by a language model.

    ``direction="belief"`` (default): A states its own probability of the current claim with
    the model's probability method and the direction follows eq. 13 with threshold ε (at the
    top claim A's own value is its answer a; if |p_d - a| <= ε every direction is 0).
    ``direction="model"``: the model picks higher / lower / right.
    ``recursion="belief"`` (default): j = argmax_i |b_i - own probability of y_i|;
    ``recursion="model"``: the model picks the index.
    ``decomposer="formal"`` takes the decomposition from the problem (bundled formal datasets)
    when it has one, else asks the model.
    ``structured=False`` asks for structured replies by prompt alone (no schema is sent).
    ``keep_invalid=True``: when every attempt at a decomposition fails only a check that the
    schema cannot express (a subclaim repeating its claim), the last such decomposition is
    played instead of failing the debate; its audit says ``valid: false`` and why.
    A decomposition gets at least :func:`decompose_tokens` tokens.
    """

    def __init__(
        self,
        model: Model,
        prompts: Prompts | None = None,
        *,
        direction: DirectionMode = "belief",
        recursion: RecursionMode = "belief",
        belief_method: ProbMethod = "logprobs",
        samples: int = 8,
        temperature: float = 0.0,
        max_tokens: int = 400,
        max_attempts: int = 3,
        decomposer: Decomposer = "model",
        formal: FormalDecomposer | None = None,
        name: str | None = None,
        structured: bool = True,
        keep_invalid: bool = False,
    ) -> None:
        self.model = model
        self.prompts = prompts or Prompts()
        self.direction_mode = direction
        self.recursion_mode = recursion
        self.belief_method = belief_method
        self.samples = samples
        self.gen = GenerateConfig(temperature=temperature, max_tokens=max_tokens)
        self.max_attempts = max_attempts
        self.decomposer = decomposer
        self.formal = formal
        self.name = name or f"llm-prover:{model.name}"
        self.structured = structured
        self.keep_invalid = keep_invalid
        self.beliefs: dict[str, float] = {}
        """The prover's own probability of every claim it was asked about in this debate."""
        self.audits: list[dict[str, Any]] = []
        """One entry per decomposition of this debate (:func:`audit_decomposition`, with its
        ``source``, model or formal, and the attempts the model needed)."""

    def _schema(self, schema: OutputSchema) -> OutputSchema | None:
        return schema if self.structured else None

    # ---------------------------------------------------------------- answers
    async def pick_answer(self, item: dict[str, Any], calls: list[Any]) -> str:
        """The prover's own answer to a QA item (``assignment: choose``): a choice or free text.
        Its calls serve the debate's ``answer`` decision (asked before the debate starts)."""
        with deciding("answer"):
            return await self._pick_answer(item, calls)

    async def _pick_answer(self, item: dict[str, Any], calls: list[Any]) -> str:
        messages = self.prompts.render(
            "answer",
            question=item["question"],
            choices=item.get("choices"),
            context=_context_text(item),
        )
        choices = item.get("choices")
        if choices:
            j = await ask_structured(
                self.model,
                messages,
                lambda t: parse_index(t, len(choices)),
                role="prover",
                act="answer",
                config=GenerateConfig(
                    temperature=0.0,
                    max_tokens=reply_budget(self.model, index_schema(len(choices))),
                ),
                max_attempts=self.max_attempts,
                calls=calls,
                schema=self._schema(index_schema(len(choices))),
            )
            return str(choices[j])

        def free(text: str) -> str:
            line = text.strip().splitlines()[0].strip() if text.strip() else ""
            if not line:
                raise ReplyError("reply with the answer")
            return line

        return str(
            await ask_structured(
                self.model,
                messages,
                free,
                role="prover",
                act="answer",
                config=GenerateConfig(temperature=0.0, max_tokens=32),
                max_attempts=self.max_attempts,
                calls=calls,
            )
        )

    async def answer(self, claim: Claim, ctx: DebateContext) -> int:
        """A defends the claim it was given (its assigned or chosen answer): a = 1."""
        return 1

    # ---------------------------------------------------------------- beliefs
    async def belief(self, claim: Claim, ctx: DebateContext) -> float:
        """A's own probability that ``claim`` is true (asked once per claim and debate)."""
        if claim.text in self.beliefs:
            return self.beliefs[claim.text]
        messages = claim_messages(self.prompts, claim, ctx)
        est = await estimate(
            self.model,
            messages,
            self.belief_method,
            samples=self.samples,
            role="prover",
            act="belief",
            log=ctx.calls,
        )
        self.beliefs[claim.text] = est.value
        return est.value

    # ---------------------------------------------------------------- the rounds
    async def direction(
        self, claim: Claim, p: float, k: int, ctx: DebateContext
    ) -> DirectionChoice | int:
        eps = ctx.config.epsilon
        top = ctx.top_claim is not None and claim is ctx.top_claim and k == ctx.config.depth
        if top and self.direction_mode == "belief":
            a = 1 if ctx.answer is None else ctx.answer
            if abs(p - a) <= eps:
                return DirectionChoice(0, rest_zero=True)
            own = float(a)
        elif self.direction_mode == "belief":
            own = await self.belief(claim, ctx)
        else:
            messages = self.prompts.render("direction", claim=claim.text, p=p, epsilon=eps, k=k)
            return int(
                await ask_structured(
                    self.model,
                    messages,
                    parse_direction,
                    role="prover",
                    act="direction",
                    config=GenerateConfig(
                        temperature=0.0, max_tokens=reply_budget(self.model, direction_schema())
                    ),
                    max_attempts=self.max_attempts,
                    calls=ctx.calls,
                    schema=self._schema(direction_schema()),
                )
            )
        if own - p > eps:
            return 1
        if own - p < -eps:
            return -1
        return 0

    async def decompose(self, claim: Claim, k: int, ctx: DebateContext) -> Decomposition:
        width = ctx.config.width
        item = ctx.item
        meta = (item or {}).get("meta") or None
        if self.decomposer == "formal" and self.formal is not None and item is not None:
            dec = self.formal(claim, item, width)
            if dec is not None:
                self.audits.append({"source": "formal", **audit_decomposition(claim, dec, meta)})
                return dec
        messages = self.prompts.render(
            "decompose",
            claim=claim.text,
            width=width,
            k=k,
            depth=ctx.config.depth,
            top_claim=ctx.top_claim.text if ctx.top_claim else claim.text,
            context=_context_text(item),
        )
        attempts: list[int] = []
        kept: list[tuple[Decomposition, str]] = []

        def parse(text: str) -> Decomposition:
            try:
                return parse_decomposition(text, claim, width)
            except ReplyError as exc:
                if self.keep_invalid:  # well-formed but useless: kept to play if nothing better
                    try:
                        loose = parse_decomposition(text, claim, width, check_repeats=False)
                    except ReplyError:
                        pass
                    else:
                        kept.append((loose, str(exc)))
                raise

        gen = dataclasses.replace(
            self.gen, max_tokens=max(self.gen.max_tokens, decompose_tokens(width))
        )
        invalid: str | None = None
        try:
            dec = await ask_structured(
                self.model,
                messages,
                parse,
                role="prover",
                act="decompose",
                config=gen,
                max_attempts=self.max_attempts,
                calls=ctx.calls,
                schema=self._schema(decomposition_schema(width)),
                attempts=attempts,
            )
        except InvalidOutputError:
            if not kept:
                raise
            dec, invalid = kept[-1]
        audit = audit_decomposition(claim, dec, meta)
        self.audits.append(
            {
                "source": "model",
                "attempts": attempts[0] if attempts else self.max_attempts,
                "valid": invalid is None,
                "invalid": invalid,
                **audit,
            }
        )
        return dec

    async def choose(
        self,
        claim: Claim,
        decomposition: Decomposition,
        b: list[float],
        z: list[int],
        ctx: DebateContext,
    ) -> int:
        subs = decomposition.subclaims
        if len(subs) == 1:
            return 0
        if self.recursion_mode == "belief":
            own = await asyncio.gather(*(self.belief(s, ctx) for s in subs))
            gaps = [abs(bi - oi) for bi, oi in zip(b, own, strict=True)]
            return max(range(len(gaps)), key=lambda i: (gaps[i], -i))
        messages = self.prompts.render(
            "choose",
            claim=claim.text,
            rule=rule_text(decomposition.rule, len(subs)),
            subclaims=[
                # z is empty when the prover commits to j before the draws (variant "commit")
                {"text": s.text, "b": bi, "z": z[i] if i < len(z) else None}
                for i, (s, bi) in enumerate(zip(subs, b, strict=True))
            ],
        )
        return int(
            await ask_structured(
                self.model,
                messages,
                lambda t: parse_index(t, len(subs)),
                role="prover",
                act="choose",
                config=GenerateConfig(
                    temperature=0.0, max_tokens=reply_budget(self.model, index_schema(len(subs)))
                ),
                max_attempts=self.max_attempts,
                calls=ctx.calls,
                schema=self._schema(index_schema(len(subs))),
            )
        )

    async def evidence(self, claim: Claim, ctx: DebateContext) -> Evidence:
        """Evidence for the leaf, from a prompt holding only the claim (and the item's passage).

        With a passage the prompt teaches ``<quote>`` markup and a private ``<thinking>``
        scratchpad: the evidence is the argument alone (the scratchpad is kept in
        ``data["thinking"]``), and its quotes are checked against the passage
        (``data["quotes"]``: text, status, spans)."""
        passage = _context_text(ctx.item)
        messages = self.prompts.render("evidence", claim=claim.text, context=passage)
        out = await self.model.generate(
            messages, self.gen, role="prover", act="evidence", log=ctx.calls
        )
        reply = parse_reply(out.text) if passage else None
        text = (reply.argument if reply is not None else out.text).strip()
        if not text:
            raise InvalidOutputError("prover evidence: the model returned an empty reply")
        if reply is None:
            return Evidence(text=text)
        data: dict[str, Any] = {"quotes": JudgeView.of(ctx.item, None).records(text)}
        if reply.thinking:
            data["thinking"] = reply.thinking
        return Evidence(text=text, data=data)


class LLMEstimator:
    """Debater B played by a language model: probabilities only.

    ``method``: ``logprobs``, ``sampling`` (``samples`` at ``temperature``) or ``verbalised``.
    Conditional probabilities b_i are asked with the earlier outcomes z_<i stated in the prompt
    (the paper's protocol). ``independent=True`` instead asks all b_i of a round in one batched
    request that ignores z_<i (cheaper; the same number is returned for every prefix).
    """

    def __init__(
        self,
        model: Model,
        prompts: Prompts | None = None,
        *,
        method: ProbMethod = "logprobs",
        samples: int = 8,
        temperature: float = 1.0,
        independent: bool = False,
        name: str | None = None,
    ) -> None:
        self.model = model
        self.prompts = prompts or Prompts()
        self.method = method
        self.samples = samples
        self.temperature = temperature
        self.independent = independent
        self.name = name or f"llm-estimator:{model.name}"
        self._batches: dict[str, asyncio.Future[list[Estimate]]] = {}

    async def _probability(
        self, messages: list[dict[str, str]], act: str, ctx: DebateContext
    ) -> Estimate:
        return await estimate(
            self.model,
            messages,
            self.method,
            samples=self.samples,
            temperature=self.temperature,
            role="estimator",
            act=act,
            log=ctx.calls,
        )

    async def estimate(self, claim: Claim, ctx: DebateContext) -> Estimate:
        return await self._probability(claim_messages(self.prompts, claim, ctx), "estimate", ctx)

    async def _alone(
        self, messages: list[dict[str, str]], j: int, *, log: list[ModelCallRecord]
    ) -> Estimate:
        """b_j asked with no earlier outcome stated, one of a batch: its call serves the b_j
        of the decision being asked for (:func:`~llmdebate.core.decisions.narrowed`)."""
        with narrowed(j, ()):
            return await estimate(
                self.model,
                messages,
                self.method,
                samples=self.samples,
                temperature=self.temperature,
                role="estimator",
                act="independent",
                log=log,
            )

    def _messages(
        self,
        claim: Claim,
        dec: Decomposition,
        i: int,
        prefix: tuple[int, ...],
        ctx: DebateContext,
    ) -> list[dict[str, str]]:
        subs = dec.subclaims
        return self.prompts.render(
            "estimate",
            claim=subs[i].text,
            parent=claim.text,
            rule=rule_text(dec.rule, len(subs)),
            subclaims=[s.text for s in subs],
            index=i + 1,
            outcomes=[
                {"index": j + 1, "text": subs[j].text, "value": int(v)}
                for j, v in enumerate(prefix)
            ],
            context=_context_text(ctx.item),
        )

    async def conditional(
        self,
        claim: Claim,
        decomposition: Decomposition,
        i: int,
        prefix: tuple[int, ...],
        ctx: DebateContext,
    ) -> Estimate:
        if not self.independent:
            return await self._probability(
                self._messages(claim, decomposition, i, prefix, ctx), "conditional", ctx
            )
        key = claim.id + "\n" + decomposition.model_dump_json()
        fut = self._batches.get(key)
        if fut is None or fut.get_loop() is not asyncio.get_running_loop():  # a fork's own loop
            batch = [
                partial(self._alone, self._messages(claim, decomposition, j, (), ctx), j)
                for j in range(decomposition.width)
            ]
            fut = asyncio.ensure_future(gather_logged(batch, ctx.calls))
            self._batches[key] = fut
        ests = await fut
        e = ests[i]
        return e.model_copy(update={"evidence": {**e.evidence, "independent": True}})
