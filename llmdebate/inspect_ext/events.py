"""A finished debate as readable events of an Inspect sample: one info event per stage.

Each event is Markdown (the log viewer renders it): the initialisation, then every round with
its claim, decomposition, the estimator's estimates, the draw, the quote check and the
verdict, or every speech of a speech protocol, then the outcome. The model calls themselves
are the sample's model events, each in a span named after the decision it served
(:mod:`llmdebate.models.inspect_backend`).
"""

from __future__ import annotations

from collections.abc import Iterator

from llmdebate.core.schemas import RoundRecord, Transcript

SOURCE = "llmdebate"


def _fmt(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def span_name(debate_id: str) -> str:
    """A debate's span in the log (the viewer's tree shows a name's last ``/`` part only)."""
    return debate_id.replace("/", " · ")


def round_markdown(r: RoundRecord) -> str:
    """One round of a recursive debate as Markdown."""
    lines = [f"**Round {r.k}**: {r.claim.text}"]
    if r.p is not None:
        lines.append(f"- estimate of the claim p = {_fmt(r.p)}, prover's direction {r.direction}")
    if r.decomposition is not None:
        rule = r.decomposition.rule.kind
        lines.append(f"- decomposition ({rule}):")
        lines += [f"  {i + 1}. {c.text}" for i, c in enumerate(r.decomposition.subclaims)]
    if r.b:
        lines.append("- estimates b = " + ", ".join(_fmt(b) for b in r.b))
    if r.z:
        lines.append(f"- draws z = {r.z}, chosen subclaim m = {r.m}")
    if r.recurse is not None:
        lines.append(f"- recurse into subclaim {r.recurse}")
    if r.evidence is not None:
        lines.append(f"- evidence: {r.evidence.text}")
        checks = {k: v for k, v in r.evidence.data.items() if "quote" in k}
        if checks:
            lines.append(f"- quote check: {checks}")
    if r.verdict is not None:
        v = r.verdict
        lines.append(f"- verdict O = {v.value} (P = {_fmt(v.probability)}, judge {v.judge})")
        if v.rationale:
            lines.append(f"  > {v.rationale}")
    if r.reward is not None:
        lines.append(f"- reward {_fmt(r.reward)} (expected {_fmt(r.expected_reward)})")
    return "\n".join(lines)


def stages(t: Transcript) -> Iterator[str]:
    """The Markdown of every stage of ``t``, in order."""
    yield header(t)
    if t.init is not None:
        i = t.init
        yield (
            f"**Initialisation**: {i.claim.text}\n- prover answers {i.answer}; estimator "
            f"{_fmt(i.estimate.value)} ({i.estimate.method}); draw u = {_fmt(i.u)} → "
            f"ẑ = {i.zhat}; reward {_fmt(i.reward)}"
        )
    for r in t.rounds:
        yield round_markdown(r)
    for turn in t.turns:
        if turn.role == "judge" and turn.position is not None and "decision" in t.meta:
            p = t.meta.get("decision_probability")
            yield (
                f"**judge's decision, round {turn.round}**: chose {turn.position!r}"
                + (f" with probability {_fmt(p)}" if p is not None else "")
            )
            continue
        side = f" (arguing for {turn.position!r})" if turn.position else ""
        yield f"**{turn.role}{side}, round {turn.round}**\n\n{turn.text}"
    yield outcome(t)


def header(t: Transcript) -> str:
    """The debate's card: protocol, variant, what each side defends, and the dataset's key
    labelled as such (the judge never sees it)."""
    lines = [f"### {t.id}", "", f"protocol **{t.protocol}**, variant {t.meta.get('variant')}"]
    assigned = t.meta.get("assigned") or t.meta.get("claimed_answer")
    if assigned is not None:
        lines.append(f"- the prover / consultant defends {assigned!r}")
    if t.meta.get("options"):
        shown = ", ".join(repr(o) for o in t.meta["options"])
        lines.append(f"- answers shown to the judge, in order: {shown}")
    if t.meta.get("gold") is not None:
        lines.append(
            f"- for scoring only (the judge is not told which answer is right): the "
            f"dataset's gold answer {t.meta.get('gold')!r}, distractor "
            f"{t.meta.get('distractor')!r}"
        )
    return "\n".join(lines)


def outcome(t: Transcript) -> str:
    """The end of ``t``: status, payoff, the judge's decision."""
    parts = [f"**Outcome**: {t.status}"]
    if t.failure:
        parts.append(f"failure: {t.failure}")
    if t.total is not None:
        parts.append(f"prover's total {_fmt(t.total)} (expected {_fmt(t.expected_total)})")
    if "decision" in t.meta:
        parts.append(f"the judge chose {t.meta['decision']!r}")
    return "\n- ".join(parts)


def emit(t: Transcript) -> None:
    """Add the stages of ``t`` to the current Inspect sample as info events."""
    from inspect_ai.log import transcript

    for text in stages(t):
        transcript().info(text, source=SOURCE)

