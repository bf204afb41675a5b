"""The configuration of ``llmdebate train``: the experiment to generate debates with, the
Stackelberg schedule, and the TRL update of each role."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class LoraSettings(_Section):
    r: int = Field(default=8, ge=1)
    """Rank of the adapters."""
    alpha: int = Field(default=16, ge=1)
    """LoRA alpha (scale alpha / r)."""
    dropout: float = Field(default=0.0, ge=0.0, lt=1.0)
    """Dropout on the adapters."""
    target_modules: list[str] = Field(default_factory=lambda: ["q_proj", "v_proj"])
    """Modules that get adapters (names in the model)."""
    layers: list[int] | None = Field(default=None, min_length=1)
    """Indices of the decoder layers that get adapters (null: every layer). Adapters in the
    top layers only also save the backward pass through the layers below them."""


def _all_projections() -> list[str]:
    return ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


class ExpertSettings(_Section):
    """Expert iteration on the decompose act: supervised LoRA training of the prover on the
    exact splits of interval claims drawn apart from the debate data, graded on held-out
    claims before and after (llmdebate/training/expert.py)."""

    train_claims: int = Field(default=320, ge=2)
    """Training claims (one per number)."""
    train_seed: int = Field(default=1, ge=0)
    """Seed of the training claims (round r: train_seed + 1000 r)."""
    rounds: int = Field(default=1, ge=1)
    """Rounds of expert iteration: each trains on fresh claims (same count), going on from
    the last round's adapter with a fresh optimizer and schedule."""
    train_numbers: tuple[int, int] = (3000, 10000)
    """Range [lo, hi) of the training claims' numbers."""
    train_shape: Literal["random", "debate"] = "random"
    """random: each number gives the top claim or a random subinterval of it; debate: the two
    claims a depth-2 debate asks about (the top claim and one of its halves), as the held-out
    claims are drawn."""
    number_law: Literal["uniform", "dataset"] = "uniform"
    """How the numbers of the training and the held-out claims are drawn. uniform: uniform in
    their range; dataset: the law datasets/divisors.jsonl was drawn from
    (llmdebate.data.generate.divisor_items): alternately a prime in the range and a product of
    two primes in semiprime_factors (at least the range's low end), so half are prime."""
    semiprime_factors: tuple[int, int] = (7, 60)
    """Range [lo, hi) of the two prime factors of the non-prime numbers of the dataset law
    (the dataset's own: no divisor below 7)."""
    split_points: Literal["midpoint", "random"] = "midpoint"
    """Where a claim is split in two for the debate shape's second claim and the estimator's
    subclaims: at the midpoint (the problem code's exact split), or at a point drawn
    uniformly inside it (as the trained prover's exact but unbalanced splits); random splits
    are always in two."""
    held_out_numbers_count: int = Field(default=20, ge=1)
    """Held-out numbers; each gives the two claims a depth-2 debate asks to split."""
    held_out_seed: int = Field(default=2, ge=0)
    """Seed of the held-out claims."""
    held_out_numbers: tuple[int, int] = (100, 3000)
    """Range [lo, hi) of the held-out claims' numbers (the debate dataset's range)."""
    apart_from: str | None = "datasets/divisors.jsonl"
    """Debate dataset whose numbers neither set may contain (checked; null: no check)."""
    widths: list[int] = Field(default_factory=lambda: [2], min_length=1)
    """Widths (subclaims per split) the claims are drawn with."""
    learning_rate: float = Field(default=5e-4, gt=0.0)
    """Peak learning rate (linear warm-up, then linear decay to 0)."""
    warmup_steps: int = Field(default=5, ge=0)
    """Warm-up steps."""
    batch_size: int = Field(default=4, ge=1)
    """Pairs per optimizer step."""
    epochs: int = Field(default=1, ge=1)
    """Passes over the training claims (each in a fresh seeded shuffle)."""
    max_steps: int | None = Field(default=None, ge=1)
    """Stop after this many steps (null: every epoch)."""
    eval_every: int = Field(default=10, ge=1)
    """Steps between held-out loss measurements."""
    held_out_loss_claims: int = Field(default=8, ge=0)
    """Held-out claims whose loss is logged along the way."""
    evaluate: bool = True
    """Grade greedy decompositions of every held-out claim after training."""
    evaluate_before: bool = True
    """Grade them with the base model too, before training."""
    threads: int | None = Field(default=None, ge=1)
    """torch threads while training and grading (null: torch's default)."""
    lora: LoraSettings = Field(
        default_factory=lambda: LoraSettings(r=8, alpha=16, target_modules=_all_projections())
    )
    """The adapter: attention and MLP projections."""


class LabellerRewardSettings(_Section):
    """A policy trained on a labeller's reward: the embedded model with a LoRA adapter answers
    each two-option question of labelling runs (True: the first option), and is trained on
    the labels those runs cached, one arm per labeller (llmdebate/training/label_reward.py,
    docs/labelling.md)."""

    labels: list[str] = Field(min_length=1)
    """Labelling run directories (their transcripts), or label caches written by an earlier
    training run (<out>/labeller-reward/cache.json)."""
    arms: list[str] | None = None
    """The rewards, each an arm: checker (the roofline), shuffled (the checker's labels
    permuted among the answers: the control), or a labeller of the runs (a protocol's name);
    null: checker, every labeller, shuffled."""
    held_out: int = Field(default=12, ge=1)
    """Questions held out of training (the accuracy's questions), drawn by ``split_seed``."""
    split_seed: int = Field(default=0, ge=0)
    """Seed of the held-out questions."""
    steps: int = Field(default=40, ge=1)
    """Policy-gradient steps per arm."""
    batch_size: int = Field(default=8, ge=1)
    """Questions per step."""
    learning_rate: float = Field(default=1e-3, gt=0.0)
    """Peak learning rate (linear warm-up, then linear decay to 0)."""
    warmup_steps: int = Field(default=2, ge=0)
    """Warm-up steps."""
    round_every: int = Field(default=10, ge=1)
    """Steps between rounds of figures (round 0: the base model)."""
    samples: int = Field(default=4, ge=1)
    """Answers sampled from the policy per training question in each round (the labeller's
    MCC, the reward and the audit are over them)."""
    seeds: list[int] = Field(default_factory=lambda: [0], min_length=1)
    """Seeds of each arm (the adapter's initialisation, the batches, the samples)."""
    threads: int | None = Field(default=None, ge=1)
    """torch threads (null: torch's default)."""
    draws: int = Field(default=1000, ge=10)
    """Bootstrap draws of each interval."""
    lora: LoraSettings = Field(
        default_factory=lambda: LoraSettings(r=4, alpha=8, target_modules=_all_projections())
    )
    """The policy's adapter."""


class UpdateSettings(_Section):
    """How one role is updated: a few steps of a TRL trainer on its exported decisions."""

    method: Literal["kto", "sft", "grpo"] = "kto"
    """kto: TRL's KTOTrainer on trl-unpaired rows (label = the decision's advantage > 0);
    sft: TRL's SFTTrainer on the rows labelled good (filtered imitation);
    grpo: online RL, TRL's GRPOTrainer on trl-prompt-only rows, each sampled completion
    rewarded by llmdebate.rl.DebateReward (the rest of the debate played by the frozen models
    of the generation's run)."""
    baseline: str = "advantage"
    """The labels: advantage (the decision's expected return above the mean of the decisions
    of its kind: protocol, player, act, round, term), or reward above expected (the
    decision's own expected reward: only the luck of the protocol's draws), mean, or a
    number."""
    learning_rate: float = Field(default=1e-4, gt=0.0)
    """Learning rate."""
    batch_size: int = Field(default=4, ge=2)
    """Examples per step (KTO needs at least 2: its KL estimate pairs examples)."""
    max_steps: int = Field(default=1, ge=1)
    """Optimizer steps per update."""
    max_length: int = Field(default=512, ge=16)
    """Longest tokenized prompt + completion."""
    max_rows: int | None = Field(default=None, ge=1)
    """Use at most this many rows per update (chosen by a seeded shuffle)."""
    beta: float = Field(default=0.1, gt=0.0)
    """KTO's beta."""
    lora: LoraSettings | None = Field(default_factory=LoraSettings)
    """LoRA adapters (merged into the checkpoint); null: update every weight."""
    num_generations: int = Field(default=4, ge=2)
    """grpo: completions sampled per prompt (the group whose rewards are compared)."""
    max_completion_length: int | None = Field(default=None, ge=1)
    """grpo: tokens per sampled completion; null (default): the longest answer the trained
    acts need (llmdebate/training/generation.py: 8 for a one-word act, 64 per subclaim + 16
    for a decomposition, 128 for evidence). A completion also stops where its act's answer
    ends (a line break; a blank line for free text)."""
    sampled_reward: bool = False
    """grpo: reward a completion with the debate's sampled reward instead of its expected
    reward over the protocol's draws (the default: lower variance)."""
    acts: list[str] | None = None
    """Train on these acts only (default: every act the role made with a model)."""
    normalize_reward: bool = True
    """grpo: each reward (the decision's return to go) divided by the debate's one scale, the
    most |R_A| can be, so it lies in [-1, 1] and keeps the rounds' weights (docs/training.md,
    "Reward scale"); false: in the debate's own units."""
    relative_reward: bool = True
    """grpo, with normalize_reward (prover-estimator debate): each reward relative to its
    decision, (return to go - the recorded reply's) / the decision's r^level, so that a
    decision near the top gets GRPO advantages of order one (docs/training.md, "Reward
    scale"); false: divided by the debate's one scale."""
    invalid_reward: float | None = Field(default=None, lt=-1.0)
    """grpo: the reward of a completion that is not wholly the act's answer (or is empty free
    text, or over its act's size cap), on the scaled scale; below -1, the lowest valid reward
    (default: -1 - invalid_margin)."""
    invalid_margin: float = Field(default=0.5, gt=0.0)
    """grpo: how far below the lowest valid reward an invalid completion lands."""
    max_reply_chars: int = Field(default=16_000, ge=1)
    """grpo: the longest free-text completion (evidence, speech) that is scored."""
    logprobs_as: Literal["answer", "verbalised", "frozen", "refuse"] = "answer"
    """grpo: how a completion for a logprobs-method probability decision is read: answer
    (its True/False word as 1/0), verbalised (a stated number: the prompt then asks for the
    probability as a number, so the completion expresses the probability it is rewarded
    for), frozen (the frozen model answers), refuse (an error)."""


class TrainConfig(_Section):
    """Everything ``llmdebate train`` needs; saved as ``train.yaml`` in its output folder."""

    name: str = "train"
    """Name of the training run (its folder is <out_dir>/<name>-<timestamp> unless given)."""
    experiment: str | dict[str, Any] = "configs/local-divisors.yaml"
    """The experiment whose debates are generated: a config file, or the config inline. Its
    prover and estimator models are the starting points (local, or hf/<dir>)."""
    iterations: int = Field(default=1, ge=0)
    """Prover updates (each after estimator_updates estimator updates); 0: none (with
    ``expert``: expert iteration alone)."""
    expert: ExpertSettings | None = None
    """Expert iteration on exactly graded decompositions before the debate updates: the
    prover's LoRA adapter (written to <out>/expert/adapter)."""
    estimator_expert: ExpertSettings | None = None
    """Expert iteration of the estimator on the exact truth of interval claims and their
    subclaims before the debate updates: its LoRA adapter for logprobs probabilities
    (written to <out>/estimator-expert/adapter; llmdebate/training/estimator_expert.py)."""
    labeller_reward: LabellerRewardSettings | None = None
    """A policy trained on labellers' cached labels (needs iterations: 0;
    <out>/labeller-reward)."""
    estimator_updates: int = Field(default=2, ge=0)
    """m: estimator updates per prover update (A-leading Stackelberg: B best-responds)."""
    regenerate: bool = True
    """Generate fresh debates with the current models before every update (on-policy);
    false: every update of an iteration uses the iteration's first debates."""
    prover: UpdateSettings = Field(default_factory=UpdateSettings)
    estimator: UpdateSettings = Field(default_factory=UpdateSettings)
    text: bool = True
    """Plain-text prompts as the local backend formats them (base models have no chat
    template); false: conversational rows with the tokenizer's chat template."""
    device: Literal["auto", "cpu", "cuda"] = "auto"
    """Where the updates run (auto: cuda when available)."""
    seed: int = Field(default=0, ge=0)
    """Seed of the debates (iteration i, generation g uses seed + 1000 i + g) and updates."""
    evaluate_last: bool = True
    """After the last update, one more generation of debates with the final models."""
    out_dir: str = "runs"
    """Where the training folder is created."""
    test_fraction: float = Field(default=0.0, ge=0.0, le=1.0)
    """Share of items held out of the updates (their rows are not trained on)."""
