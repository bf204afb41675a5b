"""What the speech protocols share: the options text, the transcript text, the judge's choice.

What a judge reads of an item's passage is one :class:`~llmdebate.qa.passage.JudgeView`
per debate (:func:`view_of`: ``judge.passage``, or the direct baseline's variant ``blind`` /
``expert``): :func:`judge_variables` gives every judge prompt the passage only when shown, and
the speeches with their quotes checked (:func:`transcript_text`); the speeches themselves go
through :mod:`llmdebate.protocols.speeches` (scratchpad, word limits, quotes).

Two-sided debate, consultancy and the direct judge all end with the judge choosing between
the item's gold answer and its distractor, shown in the order ``spec.shown``. With a judge that
defers (``judge.kind`` human or deferred) the debate stops there, status ``awaiting_verdict``,
with the options in ``meta.options``; :func:`complete_choice` finishes it with a person's
probability, through the same code that records a model judge's choice.
"""

from __future__ import annotations

from typing import Any

from llmdebate.agents.factory import Team
from llmdebate.core import scoring
from llmdebate.core.schemas import Transcript, Turn
from llmdebate.elicit import estimate
from llmdebate.errors import ProtocolViolation
from llmdebate.models import Model
from llmdebate.prompts import Prompts
from llmdebate.protocols.spec import DebateSpec, Log, ProtocolSettings
from llmdebate.qa.passage import HIDDEN, SHOWN, JudgeView

LETTERS = "AB"
VIEW_VARIANTS = {"blind": HIDDEN, "expert": SHOWN}
"""Variants that set the judge's view of the passage themselves (the direct baselines)."""


def options_text(options: tuple[str, str] | list[str]) -> str:
    return "\n".join(f"({LETTERS[i]}) {o}" for i, o in enumerate(options))


def _speaker(t: Turn) -> str:
    """Who spoke: a debater with its answer, the judge asking after a round, or a speaker
    arguing for no answer (a topology's step of ``position: none``)."""
    if t.position is None:
        return f"{t.role} (after round {t.round})" if t.role == "judge" else \
            f"{t.role} (round {t.round})"
    return f'{t.role} (round {t.round}, arguing for "{t.position}")'


def transcript_text(turns: list[Turn], view: JudgeView | None = None) -> str:
    """The speeches as a judge (or the next speaker) reads them: arguments only (never a
    scratchpad), each quote marked verified or unverified when the item has a passage."""
    return "\n\n".join(
        f"{_speaker(t)}:\n"
        + (view.for_model(t.text, t.quotes) if view is not None else t.text).strip()
        for t in turns
    )


def passage_mode(variant: str, configured: str) -> str:
    """The judge's view of the passage in a debate of ``variant`` (``judge.passage``
    unless the variant sets it)."""
    return VIEW_VARIANTS.get(variant, configured)


def view_of(spec: DebateSpec, team: Team) -> JudgeView:
    """The judge's view of the passage of debate ``spec``."""
    mode = passage_mode(spec.variant, team.judge.passage)
    return JudgeView.of({"context": spec.item.context}, mode)


def recorded_view(t: Transcript) -> JudgeView:
    """The judge's view of a recorded debate (its ``meta.passage``; hidden when unrecorded)."""
    return JudgeView.of(t.item, str(t.meta.get("passage") or HIDDEN))


def judge_variables(
    question: str, view: JudgeView, turns: list[Turn] | None = None
) -> dict[str, Any]:
    """What a judge's prompt is given: the question, the passage only when shown, and the
    speeches with their quotes marked."""
    out: dict[str, Any] = {
        "question": question,
        "context": view.context(),
        "hidden": view.hidden,
        "quoted": view.passage is not None,
    }
    if turns is not None:
        out["transcript"] = transcript_text(turns, view)
    return out


Decision = tuple[str, float, dict[str, Any]]


def choice_of(options: tuple[str, str] | list[str], p_first: float) -> Decision:
    """(chosen option, its probability, raw) from P(the first option is correct)."""
    choice = options[0] if p_first >= 0.5 else options[1]
    prob = p_first if p_first >= 0.5 else 1.0 - p_first
    return choice, prob, {"p_first": p_first}


async def judge_choice(
    team: Team, act: str, options: tuple[str, str], log: Log, **variables: Any
) -> Decision | None:
    """The judge's pick between two options: P(option A is correct) from the judge model.

    Returns (chosen option, probability of the chosen option, the raw estimate as a dict), or
    None when the judge defers to a person.
    """
    if team.judge_defers:
        return None
    j = team.judge
    return await model_choice(
        team.models["judge"],
        team.prompts,
        act,
        options,
        log,
        method=j.method,
        samples=j.samples,
        temperature=j.temperature,
        **variables,
    )


async def model_choice(
    model: Model,
    prompts: Prompts,
    act: str,
    options: tuple[str, str] | list[str],
    log: Log,
    *,
    method: str = "logprobs",
    samples: int = 8,
    temperature: float = 1.0,
    **variables: Any,
) -> Decision:
    """A model judge's pick between two options (prompt ``act``); see :func:`judge_choice`."""
    messages = prompts.render(act, options=options_text(options), first=options[0], **variables)
    est = await estimate(
        model,
        messages,
        method if method != "generate" else "logprobs",
        samples=samples,
        temperature=temperature,
        role="judge",
        act=act,
        log=log,
    )
    choice, prob, raw = choice_of(options, float(est.value))
    return choice, prob, {**raw, "method": est.method}


def with_quote_penalty(t: Transcript, team: Team) -> Transcript:
    """``t`` with the optional quote penalty recorded (``prover.quote_penalty`` > 0): per
    speaker, :func:`llmdebate.core.scoring.quote_penalties`, re-scored like every reward."""
    weight = team.prover.quote_penalty
    if weight > 0:
        t.meta["quote_penalty"] = {
            "weight": weight,
            "by_role": scoring.quote_penalties(t, weight),
        }
    return t


def _record_choice(t: Transcript, decision: Decision, judge_round: int) -> None:
    choice, prob, raw = decision
    t.turns.append(
        Turn(
            role="judge",
            round=judge_round,
            text=f"The judge chose: {choice}",
            position=choice,
        )
    )
    t.meta.update(decision=choice, decision_probability=prob, judge=raw)


def decided(
    spec: DebateSpec,
    settings: ProtocolSettings,
    *,
    agents: dict[str, str],
    turns: list[Turn],
    log: Log,
    decision: Decision | None,
    judge_round: int,
    options: tuple[str, str],
    **meta: Any,
) -> Transcript:
    """The transcript of a protocol that ends with the judge's choice between the two options.

    ``decision`` None (a deferred judge): status ``awaiting_verdict``, to be finished by
    :func:`complete_choice`.
    """
    t = Transcript(
        id=spec.debate_id,
        protocol=spec.protocol,
        config=settings.debate,
        seed=spec.seed,
        agents=agents,
        item=spec.item_dict,
        turns=list(turns),
        calls=log,
        meta={**meta, "options": list(options), "judge_round": judge_round},
    )
    if decision is None:
        t.status = "awaiting_verdict"
    else:
        _record_choice(t, decision, judge_round)
    return t


def complete_choice(
    transcript: Transcript, p_first: float, judge: str, **raw: Any
) -> Transcript:
    """Finish a speech-protocol debate awaiting its judge with P(``meta.options[0]`` correct).

    The same record as a model judge's choice (:func:`decided`); ``raw`` is kept with it.
    """
    if transcript.status != "awaiting_verdict" or "options" not in transcript.meta:
        raise ProtocolViolation(f"debate {transcript.id} is not awaiting a verdict")
    if not 0.0 <= p_first <= 1.0:
        raise ProtocolViolation(f"a probability is in [0, 1] (got {p_first})")
    t = transcript.model_copy(deep=True)
    choice, prob, base = choice_of(t.meta["options"], p_first)
    t.agents["judge"] = judge
    _record_choice(t, (choice, prob, {**base, **raw}), int(t.meta.get("judge_round", 0)))
    t.status = "complete"
    return t
