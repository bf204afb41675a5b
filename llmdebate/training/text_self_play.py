"""Self-play of both seats in a debate of depth 1 in which the prover writes its own
decompositions: the prover A and the estimator B, each the base model with its own LoRA
adapter (:class:`~llmdebate.training.self_play.TwoSeats`), trained on their payoffs in the
game (:mod:`llmdebate.training.text_game`), the leaf judge's verdict the only label.

One case is a debate on an interval claim x (Figure 2): A's answer from its belief q_A(x),
B's p_1 = P(True | x), A's direction s_1 (eq. 13), A's decomposition of x sampled from its
adapter under the decomposition schema (:mod:`llmdebate.training.text_sample`; the decompose
prompt of :func:`~llmdebate.training.decompose_eval.decompose_prompt`, graded by
:func:`~llmdebate.training.decompose_eval.grade`), B's conditional b_i on A's subclaims (the
estimator's conditional prompt, earlier outcomes stated), A's recursion and the leaf. A's one
adapter gives both its beliefs (P(True) of a claim alone, the estimator's prompt) and its
decompositions. An invalid decomposition, or one with a subclaim the leaf judge cannot rule
on, gets the invalid reward and ends the case.

Training, Algorithm 1's order: one A step, then ``estimator_steps`` B steps against the A
that step left (on the decompositions of that A step).

* A's decompositions: a policy gradient on each sampled reply's log-probability under the
  constrained distribution, with TRL's group advantage of its return to go r_1 + r_0 in the
  decompose act's frame (:func:`~llmdebate.training.text_game.decision_frame`), ``group``
  replies per claim;
* A's beliefs: its expected payoff under mixed directions at both levels (r_1 and r_0, B's
  numbers held fixed), as the leaf self-play's ``prover_expected_payoff``;
* B: its payoff −R_A = −(r_init + r_1 + r_0) with A's played directions, through p_1, the
  b's (E[M_D] and the leaf) and b_j.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from llmdebate.agents.parsing import ReplyError, parse_decomposition
from llmdebate.core.rules import compile_rule
from llmdebate.core.schemas import Claim, Decomposition
from llmdebate.data.problems import claim_truth
from llmdebate.prompts import Prompts, rule_text
from llmdebate.training.claims import IntervalClaim
from llmdebate.training.config import LoraSettings
from llmdebate.training.decompose_eval import grade
from llmdebate.training.estimate_eval import estimate_prompt
from llmdebate.training.self_play import TwoSeats


@dataclass(frozen=True)
class Split:
    """A decomposition as the game reads it: subclaims, its rule's M_D table, B's prompts in
    the order of the conditional table's levels, A's prompts (each subclaim alone). With the
    step as a claim (``step``, its text σ): B's prompt on σ (``step_prompt``, asked once,
    not conditioned on the subclaims' outcomes), A's prompt on σ last among
    ``prover_prompts``, and the oracle's verdict on σ (``step_truth``: the split is exact)."""

    subclaims: list[str]
    table: list[int]
    estimator_prompts: list[list[str]]
    prover_prompts: list[str]
    step: str | None = None
    step_prompt: str | None = None
    step_truth: int | None = None


def truth(text: str) -> int | None:
    """The claim's exact truth (the oracle leaf judge's verdict), or None."""
    return claim_truth(text, {"problem": "divisors"})


def split_of(prompts: Prompts, claim: IntervalClaim, dec: Decomposition,
             step_truth: int | None = None) -> Split:
    """The game's view of ``dec``, a decomposition of ``claim``; with ``step_truth`` (the
    oracle's verdict on the step: the split is exact), its step as a claim too."""
    subs = [s.text for s in dec.subclaims]
    rule = compile_rule(dec.rule, len(subs))
    said = rule_text(dec.rule, len(subs))
    levels = []
    for i in range(len(subs)):
        row = []
        for t in range(1 << i):
            prefix = [(t >> (i - 1 - k)) & 1 for k in range(i)]
            row.append(estimate_prompt(prompts, subs[i], claim, subs, said, i + 1, prefix))
        levels.append(row)
    mine = [estimate_prompt(prompts, s) for s in subs]
    if step_truth is None:
        return Split(subs, [int(v) for v in rule.table], levels, mine)
    step = prompts.text("step_claim", parent=claim.text, rule=said, subclaims=subs)
    b_prompt = estimate_prompt(prompts, step)
    return Split(subs, [int(v) for v in rule.table], levels, [*mine, b_prompt], step,
                 b_prompt, step_truth)


def parsed(prompts: Prompts, claim: IntervalClaim, reply: str, step: bool = False
           ) -> tuple[dict[str, Any], Split | None]:
    """The reply's grade (:func:`grade`) and its split, None where it is invalid; ``step``:
    with its step as a claim."""
    g = grade(claim, reply)
    if not g["valid"]:
        return g, None
    dec = parse_decomposition(reply, Claim(id="c", text=claim.text), claim.width,
                              check_repeats=False)
    return g, split_of(prompts, claim, dec, int(bool(g["exact_split"])) if step else None)


def exact_split(prompts: Prompts, claim: IntervalClaim, step: bool = False) -> Split:
    """The problem code's exact split of ``claim`` (``step``: with its step as a claim)."""
    from llmdebate.data.problems import formal_decomposition

    dec = formal_decomposition(Claim(id="c", text=claim.text), {"problem": "divisors"},
                               claim.width)
    if dec is None:  # pragma: no cover - every IntervalClaim parses
        raise ReplyError(f"no exact split of {claim.text!r}")
    return split_of(prompts, claim, dec, 1 if step else None)


@dataclass(frozen=True)
class TextCase:
    """One claim: its prompts, its truth (read only by the figures), its number (the
    cluster of the intervals), the problem code's exact split, and ``judge``: index of the
    case whose exact split's verdicts the leaf judge reads (itself, or another case's under
    the shuffled control)."""

    claim: IntervalClaim
    prompt: str
    decompose: str
    truth: int
    number: int
    exact: Split
    judge: int


@dataclass(frozen=True)
class TextPlaySettings:
    """One run of the two seats."""

    prover_steps: int = 8
    estimator_steps: int = 2
    batch_size: int = 2
    """Claims per A step."""
    group: int = 4
    """Sampled decompositions per claim (a GRPO group)."""
    learning_rate: float = 1e-3
    temperature: float = 0.1
    """τ of A's mixed directions while its beliefs learn."""
    epsilon: float = 0.0
    """ε of eq. 13 when A's directions are played."""
    ratio: float = 0.025
    """r = ε(1 − ρ)/4 of the debate (the default configuration's ε = 0.2, ρ = 0.5)."""
    max_tokens: int = 380
    """The decomposition's token budget (the prover's, ``decompose_tokens(2)``)."""
    step_claim: bool = False
    """The step as a claim (docs/protocol.md, "The step as a claim"): B gives the split's
    step σ a probability, E[r_1] uses E[M'] and the recursion may choose σ as the leaf."""
    round_every: int = 2
    train_estimator: bool = True
    lora: LoraSettings = field(default_factory=LoraSettings)
    draws: int = 1000


@dataclass
class Played:
    """One sampled decomposition of a case, played: its grade, split, the leaf judge's
    verdicts on its subclaims (None: not judgeable) and its return to go r_1 + r_0."""

    case: TextCase
    grade: dict[str, Any]
    split: Split | None
    verdicts: list[int] | None
    value: float


Verdicts = Callable[[TextCase, Split], list[int] | None]


def oracle_verdicts(case: TextCase, split: Split) -> list[int] | None:
    """The oracle leaf judge on each subclaim (None when one is not a claim it can rule on),
    and on the step claim last where the split has one."""
    got = [truth(s) for s in split.subclaims]
    if any(v is None for v in got):
        return None
    out = [int(v) for v in got if v is not None]
    return out if split.step_truth is None else [*out, split.step_truth]


def shuffled_verdicts(cases: Sequence[TextCase]) -> Verdicts:
    """The shuffled control's judge: on subclaim i of any split of case c, the truth of
    subclaim i (mod its width) of the exact split of case ``c.judge`` (a permutation of the
    cases): real leaf verdicts at their base rate, nothing about which claim is true."""

    def judge(case: TextCase, split: Split) -> list[int] | None:
        if oracle_verdicts(case, split) is None:
            return None
        other = cases[case.judge].exact.subclaims
        out = [int(truth(other[i % len(other)]) or 0) for i in range(len(split.subclaims))]
        # the step's verdict is about the split, not the claim's truth: kept
        return out if split.step_truth is None else [*out, split.step_truth]

    return judge


def seat_values(seats: TwoSeats, seat: str, prompts: Sequence[str], grad: bool) -> Any:
    """The seat's P(True) of each prompt (a tensor; with gradient in its adapter, or not)."""
    if not prompts:
        return seats.torch.zeros(0)
    return seats.probabilities(seat, prompts) if grad else seats.fixed(seat, prompts)


def levels_of(values: Any, split: Split, start: int) -> tuple[list[list[Any]], Any, int]:
    """B's conditional table of ``split`` and its b_σ on the step claim (None: no step
    claim) from a flat tensor of its prompts' values (:func:`flat`'s order)."""
    out = []
    for row in split.estimator_prompts:
        out.append([values[start + t] for t in range(len(row))])
        start += len(row)
    if split.step_prompt is None:
        return out, None, start
    return out, values[start], start + 1


def flat(splits: Sequence[Split]) -> list[str]:
    """B's prompts of each split: its conditional table's, then its step claim's."""
    return [p for s in splits
            for p in [*(x for row in s.estimator_prompts for x in row),
                      *([s.step_prompt] if s.step_prompt else [])]]
