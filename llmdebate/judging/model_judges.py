"""Judges of the leaf claim: a language model, the gold truth (oracle), or a deferred verdict."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from llmdebate.agents.factory import Team
from llmdebate.agents.judge_registry import ASKS, DEFERS, JUDGES, USES_MODEL, WHOLE_DEBATES
from llmdebate.agents.llm import ask_structured
from llmdebate.agents.parsing import ReplyError
from llmdebate.agents.replies import verdict_schema
from llmdebate.core.roles import DebateContext, Judge
from llmdebate.core.schemas import Claim, Evidence, Ruling, Verdict
from llmdebate.core.scoring import argmax_verdict, sampled_verdict, verdict_draw
from llmdebate.data.problems import claim_truth
from llmdebate.elicit import ProbMethod, estimate, parse_bool_then_reason
from llmdebate.errors import InvalidOutputError
from llmdebate.models import GenerateConfig, Model
from llmdebate.prompts import Prompts
from llmdebate.qa.passage import HIDDEN, JudgeView

JudgeMethod = Literal["generate"] | ProbMethod
TruthFn = Callable[[str, dict[str, Any] | None], int | None]


class LLMJudge:
    """A model reads the leaf claim and the prover's evidence and rules True or False.

    ``passage`` (``judge.passage``): on an item with a passage, ``hidden`` gives the judge the
    claim and the evidence only, the evidence's quotes marked ``<v_quote>`` / ``<u_quote>``
    (the prover's quotes are the evidence it sees of the passage); ``shown`` adds the passage.

    With ``method`` logprobs / sampling / verbalised the verdict carries the model's
    probability P[O = 1], and ``ruling`` (``judge.ruling``) says how the judge rules from it:
    ``argmax`` O = 1[P >= 1/2] (deterministic: the expected leaf reward uses O), ``sample``
    O = 1[u < P] with u the debate seed's verdict draw (recorded; the expected leaf reward
    uses P). ``generate`` reads a True/False word from a plain reply (no probability: a
    deterministic ruling).
    """

    def __init__(
        self,
        model: Model,
        prompts: Prompts | None = None,
        *,
        method: JudgeMethod = "logprobs",
        samples: int = 8,
        temperature: float = 1.0,
        max_attempts: int = 3,
        name: str | None = None,
        passage: str = HIDDEN,
        ruling: Ruling = "argmax",
    ) -> None:
        if ruling == "sample" and method == "generate":
            raise ValueError("judge.ruling sample needs a probability: judge.method generate "
                             "gives none (use logprobs, sampling or verbalised)")
        self.model = model
        self.ruling: Ruling = ruling
        self.passage = passage
        self.prompts = prompts or Prompts()
        self.method = method
        self.samples = samples
        self.temperature = temperature
        self.max_attempts = max_attempts
        self.name = name or f"llm-judge:{model.name}"

    async def verdict(self, claim: Claim, evidence: Evidence, ctx: DebateContext) -> Verdict:
        view = JudgeView.of(ctx.item, self.passage)
        quotes = evidence.data.get("quotes") if isinstance(evidence.data, dict) else None
        messages = self.prompts.render(
            "judge",
            claim=view.for_model(claim.text),
            evidence=view.for_model(evidence.text, quotes),
            context=view.context(),
            hidden=view.hidden,
            quoted=view.passage is not None,
        )
        if self.method != "generate":
            est = await estimate(
                self.model,
                messages,
                self.method,
                samples=self.samples,
                temperature=self.temperature,
                role="judge",
                act="verdict",
                log=ctx.calls,
            )
            return self._rule(est.value, ctx)

        def parse(text: str) -> bool:
            v = parse_bool_then_reason(text)
            if v is None:
                raise ReplyError("reply True or False")
            return v

        value = await ask_structured(
            self.model,
            [
                *messages[:-1],
                {
                    **messages[-1],
                    "content": messages[-1]["content"]
                    + "\n\nReply with True or False, then one sentence of reason.",
                },
            ],
            parse,
            role="judge",
            act="verdict",
            config=GenerateConfig(temperature=0.0, max_tokens=64),
            max_attempts=self.max_attempts,
            calls=ctx.calls,
            schema=verdict_schema(),
        )
        return Verdict(value=int(value), judge=self.name, ruling="argmax")

    def _rule(self, p: float, ctx: DebateContext) -> Verdict:
        """The verdict from P[O = 1] under this judge's ruling."""
        if self.ruling == "argmax":
            return Verdict(
                value=argmax_verdict(p), probability=p, judge=self.name, ruling="argmax"
            )
        if ctx.seed is None:
            raise ValueError("a sampling judge draws its verdict from the debate's seed: none")
        u = verdict_draw(ctx.seed)
        return Verdict(
            value=sampled_verdict(u, p), probability=p, judge=self.name, ruling="sample", u=u
        )


class OracleJudge:
    """The gold truth of the leaf claim.

    Uses ``claim.truth`` when set, else ``truth(claim.text, item meta)`` (for the bundled
    formal datasets, any subclaim in a recognised form). When the truth is unknown it asks
    ``fallback`` (e.g. an :class:`LLMJudge`), or raises :class:`InvalidOutputError`.
    """

    def __init__(
        self,
        truth: TruthFn | None = None,
        *,
        fallback: Judge | None = None,
        name: str = "oracle",
    ) -> None:
        self.truth = truth or claim_truth
        self.fallback = fallback
        self.name = name

    async def verdict(self, claim: Claim, evidence: Evidence, ctx: DebateContext) -> Verdict | None:
        value = claim.truth
        if value is None:
            value = self.truth(claim.text, (ctx.item or {}).get("meta"))
        if value is not None:
            return Verdict(value=int(value), probability=float(value), judge=self.name)
        if self.fallback is not None:
            return await self.fallback.verdict(claim, evidence, ctx)
        raise InvalidOutputError(
            f"oracle judge: the truth of the leaf claim is unknown: {claim.text[:160]!r}"
        )


class DeferredJudge:
    """Returns no verdict: the debate is stored ``awaiting_verdict`` for a person to finish."""

    def __init__(self, name: str = "deferred") -> None:
        self.name = name

    async def verdict(self, claim: Claim, evidence: Evidence, ctx: DebateContext) -> None:
        return None


def _llm_judge(team: Team) -> LLMJudge:
    j = team.judge
    return LLMJudge(
        team.model_for("judge"),
        team.prompts_for("judge", j.method),
        method=j.method,
        samples=j.samples,
        temperature=j.temperature,
        passage=j.passage,
        ruling=j.ruling,
    )


@JUDGES.register("llm", capabilities={WHOLE_DEBATES, ASKS, USES_MODEL})
def llm_judge(team: Team) -> Judge:
    """A model rules (the ``judge`` role's model)."""
    return _llm_judge(team)


@JUDGES.register("oracle")
def oracle_judge(team: Team) -> Judge:
    """The gold truth of the leaf claim."""
    return OracleJudge(claim_truth)


@JUDGES.register("oracle-or-llm", capabilities={WHOLE_DEBATES, USES_MODEL})
def oracle_or_llm_judge(team: Team) -> Judge:
    """The gold truth where known, else the model."""
    return OracleJudge(claim_truth, fallback=_llm_judge(team))


@JUDGES.register("deferred", capabilities={DEFERS, WHOLE_DEBATES, ASKS})
def deferred_judge(team: Team) -> Judge:
    """No verdict now: the debate waits for a person (llmdebate assign / serve / judge)."""
    return DeferredJudge("deferred")


@JUDGES.register("human", capabilities={DEFERS, WHOLE_DEBATES, ASKS})
def human_judge(team: Team) -> Judge:
    """A person rules later, as deferred."""
    return DeferredJudge("human")
