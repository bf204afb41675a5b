"""Reward functions for online RL in the signatures the trainers call.

Each plays out the rest of a debate from a row's ``state`` (``llmdebate export --format
trl-prompt-only`` / ``verl`` / ``openrlhf``) with the policy's completion as the decision, and
frozen opponents and judge (the run's models, or any model string given in ``swap``), and
returns the decision's effect on the player's payoff: its return to go from the first reward
term it changes (:mod:`llmdebate.export.credit`, every number from
:mod:`llmdebate.core.scoring`), the expected one (default; the protocol's draws after the
decision averaged round by round) or the sampled one. In prover-estimator debate it is given
relative to the decision (default, ``relative``): minus the recorded reply's return, over the
decision's own r^level (:class:`llmdebate.core.scoring.RewardFrame`), so that completions of a
decision near the top, which differ by r^level, get distinct float32 rewards and GRPO
advantages of order one; ``relative=False``: divided by the debate's one scale
(:func:`llmdebate.core.scoring.reward_scale`: in [-1, 1]); ``normalize=False``: the game's
units. A
completion that is not wholly the act's answer (:mod:`llmdebate.agents.parsing`), an empty
free-text reply (evidence, speech) and any reply over the size limit earn the invalid reward,
below every valid reply of the debate (:class:`llmdebate.core.scoring.RewardOptions`;
docs/training.md, "Reward scale").

* TRL: ``DebateReward(...)`` is a ``reward_funcs`` entry: ``f(prompts, completions, state=...,
  **kwargs) -> list[float]``; :class:`AsyncDebateReward` is the ``async`` variant.
* verl: :func:`compute_score` ``(data_source, solution_str, ground_truth, extra_info,
  **kwargs)``.
* OpenRLHF: :func:`reward_func` ``(queries, prompts, labels, **kwargs)``.

verl and OpenRLHF import a function by path: their options come as keyword arguments (verl's
``custom_reward_function.reward_kwargs``) or, for those not given, from the environment
(:data:`ENV_OPTIONS`): ``LLMDEBATE_RL_SWAP`` (JSON {role: model string}),
``LLMDEBATE_RL_SAMPLED=1``, ``LLMDEBATE_RL_NORMALIZE=0``, ``LLMDEBATE_RL_RELATIVE=0``,
``LLMDEBATE_RL_INVALID_REWARD``,
``LLMDEBATE_RL_INVALID_MARGIN``, ``LLMDEBATE_RL_MAX_REPLY_CHARS``, ``LLMDEBATE_RL_LOGPROBS_AS``.
Both are safe to call inside a running event loop (the debate then plays in a worker thread).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Coroutine, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from llmdebate.agents.factory import Team
from llmdebate.agents.parsing import ReplyError, reply_cap
from llmdebate.core import scoring
from llmdebate.core.schemas import ModelCallRecord, Transcript
from llmdebate.elicit import estimate_from_samples, parse_bool
from llmdebate.elicit import parse_probability as parse_stated
from llmdebate.errors import InvalidOutputError, ProtocolViolation, RuleError
from llmdebate.export.credit import judged, naive_payoff, pe_call_credits, pe_terms
from llmdebate.protocols.families import RecursiveProtocol, SpeechProtocol
from llmdebate.protocols.registry import protocol_of
from llmdebate.rl.replay import Injection, fork, team_for

DECISION_OF_ACT = {
    "direction": "direction",
    "decompose": "decompose",
    "recurse": "recurse",
    "evidence": "evidence",
    "estimate": "estimate",
}


NAIVE_ACTS = {"prover": ("decompose", "value", "evidence"), "challenger": ("recurse",)}
LOGPROBS_AS = ("answer", "verbalised", "frozen", "refuse")
T = TypeVar("T")


def completion_probability(
    text: str, method: str, temperature: float = 1.0, logprobs_as: str = "answer"
) -> tuple[bool, float | None]:
    """What a completion for a probability decision stands for, by the elicitation method the
    run used for it: (inject the completion?, its probability).

    * ``verbalised``: the number the reply states (the method's own parser);
    * ``sampling``: one of the method's samples; the probability is the method's estimate
      from that one sample, (k + 1) / (n + 2) = 2/3 for True, 1/3 for False;
    * ``logprobs``: the method reads the model's probability of the answer True, which a
      sampled completion does not carry. ``logprobs_as`` says how its completion is read:
      ``answer`` (default: its True/False word as 1/0: a completion sampled from the model
      says True with the probability the method reads, and every reward is linear in the
      probability, so the expected reward over completions is the reward the method's
      probability gets), ``verbalised`` (a stated number, as the verbalised method reads it,
      for a policy prompted to state one), ``frozen`` (nothing is injected: the frozen model
      of the role answers by its method, for a baseline or a counterfactual), or ``refuse``
      (:class:`LogprobsCompletionError`).

    A completion that says nothing the method can read raises ValueError (an invalid reply).
    """
    if method == "verbalised":
        return True, parse_stated(text)
    if method == "sampling":
        try:
            return True, float(estimate_from_samples([text], temperature).value)
        except InvalidOutputError as exc:
            raise ValueError(str(exc)) from None
    if method != "logprobs":
        raise ValueError(f"no completion reading for the elicitation method {method!r}")
    if logprobs_as == "frozen":
        return False, None
    if logprobs_as == "verbalised":
        return True, parse_stated(text)
    if logprobs_as == "answer":
        word = parse_bool(text)
        if word is None:
            raise ValueError("the reply says neither True nor False")
        return True, float(word)
    raise LogprobsCompletionError(
        "the logprobs method reads the model's token distribution, not a reply: a completion "
        "states no probability; pass logprobs_as='answer' (its True/False word as 1/0), "
        "'verbalised' (a stated number) or 'frozen' (the frozen model answers by its method), "
        "or export trl-unpaired for KTO"
    )


class LogprobsCompletionError(RuntimeError):
    """A completion for a logprobs-method decision, with ``logprobs_as="refuse"``."""


def _completion_text(completion: Any) -> str:
    """A TRL completion: a string, or conversational [{"role": "assistant", "content": …}]."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion:
        return str(completion[-1].get("content", ""))
    return str(completion)


class DebateRewardBase:
    """Shared: the teams (one per run config) and the scoring of one completion.

    Options (each also a training config field and an environment variable of
    :func:`compute_score` / :func:`reward_func`, :data:`ENV_OPTIONS`): ``expected`` (the
    expected reward over the protocol's draws, else the sampled one), ``normalize``,
    ``relative``, ``invalid_reward``, ``margin`` and ``max_reply_chars``
    (:class:`scoring.RewardOptions`),
    ``logprobs_as`` (:func:`completion_probability`), ``swap`` ({role: model string}: the
    frozen models that play the rest).
    """

    def __init__(
        self,
        *,
        expected: bool = True,
        normalize: bool = True,
        relative: bool = True,
        swap: dict[str, str] | None = None,
        invalid_reward: float | None = None,
        margin: float = 0.5,
        max_reply_chars: int = 16_000,
        name: str = "debate_reward",
        logprobs_as: str = "answer",
    ) -> None:
        if logprobs_as not in LOGPROBS_AS:
            raise ValueError(f"logprobs_as: one of {', '.join(LOGPROBS_AS)} (got {logprobs_as!r})")
        self.logprobs_as = logprobs_as
        self.expected = expected
        self.options = scoring.RewardOptions(
            normalize=normalize, relative=relative, margin=margin, invalid_reward=invalid_reward,
            max_reply_chars=max_reply_chars,
        )
        self.swap = dict(swap or {})
        self.__name__ = name  # TRL logs a reward function under its __name__
        self._teams: dict[str, Team] = {}

    @property
    def normalize(self) -> bool:
        return self.options.normalize

    def invalid(self, scale: float = 1.0, frame: scoring.RewardFrame | None = None) -> float:
        """The reward of an invalid reply in a debate of this ``scale`` (``frame``: the
        decision's own, :meth:`decision_frame`, when rewards are relative)."""
        return scoring.invalid_training_reward(scale, self.options, frame)

    def team(self, config: dict[str, Any]) -> Team:
        key = json.dumps(config, sort_keys=True, default=str)
        if key not in self._teams:
            self._teams[key] = team_for(config, self.swap)
        return self._teams[key]

    async def score(self, completion: Any, state: str | dict[str, Any]) -> float:
        """The reward of one completion; ``None`` stands for a reply that could not be read
        off the trainer's text at all (it gets the invalid reward)."""
        return (await self.play(completion, state))[0]

    async def play(
        self, completion: Any, state: str | dict[str, Any]
    ) -> tuple[float, Transcript | None]:
        """The reward of one completion and the debate played on from it (None for an invalid
        reply: no debate was played)."""
        st = json.loads(state) if isinstance(state, str) else state
        t = Transcript.model_validate(st["transcript"])
        protocol = protocol_of(t)
        if protocol.can.estimator_rewards:
            return await self._score_pe(
                None if completion is None else _completion_text(completion), st, t)
        if completion is None:
            scheme = scoring.reward_scheme(t) or scoring.JUDGED
            return self.invalid(scoring.reward_scale(scheme, scoring.ratio_for(t.config),
                                                     t.config.depth)), None
        text = _completion_text(completion)
        if isinstance(protocol, RecursiveProtocol):
            return await self._score_naive(text, st, t)
        if isinstance(protocol, SpeechProtocol):
            return await self._score_speech(text, st, t)
        raise ValueError(f"no reward for a decision of a {t.protocol} debate (no debater)")

    def _probability(
        self, st: dict[str, Any], text: str, role: str, method_field: str
    ) -> tuple[bool, float | None]:
        """(inject?, the probability a completion stands for) by the elicitation method of
        the decision's role in the run config; see :func:`completion_probability`."""
        section = st["config"].get(role) or {}
        method = str(section.get(method_field, "logprobs"))
        temperature = float(section.get("temperature", 1.0))
        return completion_probability(text, method, temperature, self.logprobs_as)

    async def _play(
        self, t: Transcript, st: dict[str, Any], at: int, inject: Injection | None, **kw: Any
    ) -> Transcript | None:
        try:
            new = await fork(t, self.team(st["config"]), at, inject=inject,
                             swapped=tuple(self.swap), **kw)
        except (InvalidOutputError, ReplyError, ProtocolViolation, RuleError):
            return None
        if new.status != "complete":
            raise ValueError(f"{t.id}: the continued debate is {new.status}")
        return new

    def _unscored(self, act: str, text: str) -> bool:
        """A reply of any act over its size cap, or an empty free-text reply."""
        if len(text) > min(self.options.max_reply_chars, reply_cap(act)):
            return True
        return act in scoring.FREE_TEXT_ACTS and not scoring.reply_ok(text, self.options)

    def decision_frame(self, t: Transcript, call: ModelCallRecord) -> scoring.RewardFrame:
        """The decision's own frame (:class:`scoring.RewardFrame`): the recorded reply's
        return to go (expected or sampled, as this reward) as the baseline, the decision's
        r^level as the unit; computed from the recorded debate in float64, before any
        trainer rounds the reward to float32."""
        credits = [c for _, c in pe_call_credits(t, pe_terms(t), call)]
        if not credits:
            raise ValueError(f"{t.id}: the recorded debate has no reward for this decision")
        first = credits[0]
        base = first.expected_return_to_go if self.expected else first.return_to_go
        assert base is not None
        r = scoring.ratio_for(t.config)
        return scoring.RewardFrame(base, scoring.decision_unit(r, first.term, t.config.depth))

    async def _score_pe(
        self, text: str | None, st: dict[str, Any], t: Transcript
    ) -> tuple[float, Transcript | None]:
        act = str(st["act"])
        if act not in DECISION_OF_ACT or st["speaker"] not in ("prover", "estimator"):
            raise ValueError(f"no reward for a {st['speaker']} {act} decision")
        term = str(st.get("term") or "")
        if not term:
            raise ValueError(
                f"{t.id}: the {st['speaker']} {act} row has no reward term (a reply that was "
                "never played): export the run again"
            )
        unit = scoring.reward_scale(scoring.DISCOUNTED, scoring.ratio_for(t.config),
                                    t.config.depth)
        k = st.get("round")
        prefix = st.get("prefix")
        call = ModelCallRecord.model_validate({
            "role": st["speaker"], "model": "", "decision": DECISION_OF_ACT[act], "round": k,
            "index": st.get("index"), "prefix": prefix,
        })
        frame = self.decision_frame(t, call) if self.options.relative else None
        if text is None or self._unscored(act, text):
            return self.invalid(unit, frame), None
        at, at_act = (t.config.depth, "direction") if k is None else (int(k), act)
        inject: Injection | None = None
        value: float | None = None
        live = True
        if st["speaker"] == "estimator":
            try:
                live, value = self._probability(st, text, "estimator", "method")
            except ValueError:
                return self.invalid(unit, frame), None
        if live:
            inject = Injection(
                speaker=st["speaker"], act=act, round=k, completion=text,
                index=st.get("index"), prefix=tuple(prefix) if prefix is not None else None,
                value=value,
            )
        new = await self._play(t, st, at, inject, act=at_act)
        if new is None:
            return self.invalid(unit, frame), None
        terms = pe_terms(new)
        # the decision's effect on the player's payoff: its return to go from the first term
        # it changes (pe_call_credits lists a decision's terms in protocol order); 0 when the
        # decision vanished (the continuation stopped early)
        credits = [c for _, c in pe_call_credits(new, terms, call)]
        value_out: float | None = 0.0
        if credits:
            first = credits[0]
            value_out = first.expected_return_to_go if self.expected else first.return_to_go
        assert value_out is not None
        return scoring.training_reward(value_out, unit, self.options, frame), new

    async def _score_naive(
        self, text: str, st: dict[str, Any], t: Transcript
    ) -> tuple[float, Transcript | None]:
        speaker, act, k = str(st["speaker"]), str(st["act"]), st.get("round")
        if act not in NAIVE_ACTS.get(speaker, ()) or k is None:
            raise ValueError(f"no reward for a naive-debate {speaker} {act} decision")
        unit = scoring.reward_scale(scoring.PLUS_MINUS_ONE, 1.0, 0)
        if self._unscored(act, text):
            return self.invalid(unit), None
        value: float | None = None
        live = True
        if act in ("value", "recurse"):  # one subclaim's probability
            role, field = ("prover", "belief_method") if speaker == "prover" else (
                "estimator", "method")
            try:
                live, value = self._probability(st, text, role, field)
            except ValueError:
                return self.invalid(unit), None
        inject = Injection(speaker=speaker, act=act, round=int(k), completion=text,
                           index=st.get("index"), value=value) if live else None
        new = await self._play(t, st, int(k), inject, act=act)
        if new is None:
            return self.invalid(unit), None
        payoff = naive_payoff(new)
        return scoring.training_reward(payoff if speaker == "prover" else -payoff, unit,
                                       self.options), new

    async def _score_speech(
        self, text: str, st: dict[str, Any], t: Transcript
    ) -> tuple[float, Transcript | None]:
        speaker, rnd = str(st["speaker"]), st.get("round")
        if st["act"] != "speech" or rnd is None:
            raise ValueError(f"no reward for a {t.protocol} {speaker} {st['act']} decision")
        unit = scoring.reward_scale(scoring.JUDGED, 1.0, 0)
        if self._unscored("speech", text):
            return self.invalid(unit), None
        inject = Injection(speaker=speaker, act="speech", round=int(rnd), completion=text)
        new = await self._play(t, st, int(rnd), inject, speaker=speaker)
        if new is None:
            return self.invalid(unit), None
        got = judged(new, speaker)
        if got is None:
            raise ValueError(f"{t.id}: the continued debate has no judge's probability")
        sampled, expected = got
        return scoring.training_reward(expected if self.expected else sampled, unit,
                                       self.options), new

    async def score_all(self, completions: list[Any], states: list[Any]) -> list[float]:
        return list(
            await asyncio.gather(
                *(self.score(c, s) for c, s in zip(completions, states, strict=True))
            )
        )


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to its end from synchronous code: with ``asyncio.run``, or, when this
    thread already runs an event loop (verl's reward loop, a notebook), in a worker thread
    with its own loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="llmdebate-reward") as pool:
        return pool.submit(asyncio.run, coro).result()


class DebateReward(DebateRewardBase):
    """A TRL ``reward_funcs`` entry (synchronous)."""

    def __call__(
        self, prompts: list[Any], completions: list[Any], state: list[str], **kwargs: Any
    ) -> list[float]:
        return run_sync(self.score_all(completions, state))


class AsyncDebateReward(DebateRewardBase):
    """A TRL ``reward_funcs`` entry (``async``: TRL awaits it beside other reward functions)."""

    async def __call__(
        self, prompts: list[Any], completions: list[Any], state: list[str], **kwargs: Any
    ) -> list[float]:
        return await self.score_all(completions, state)


ENV_OPTIONS = {
    "swap": "LLMDEBATE_RL_SWAP",
    "sampled": "LLMDEBATE_RL_SAMPLED",
    "normalize": "LLMDEBATE_RL_NORMALIZE",
    "relative": "LLMDEBATE_RL_RELATIVE",
    "invalid_reward": "LLMDEBATE_RL_INVALID_REWARD",
    "margin": "LLMDEBATE_RL_INVALID_MARGIN",
    "max_reply_chars": "LLMDEBATE_RL_MAX_REPLY_CHARS",
    "logprobs_as": "LLMDEBATE_RL_LOGPROBS_AS",
}
"""The options of :func:`compute_score` and :func:`reward_func` → the environment variable
each is read from when not given as a keyword argument."""


def _flag(name: str, raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"{name}: 1 or 0 (got {raw!r})")


def reward_options(
    kwargs: Mapping[str, Any], environ: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The :class:`DebateReward` keyword arguments of a verl or OpenRLHF call: each option of
    :data:`ENV_OPTIONS` from ``kwargs``, else from its environment variable; other keywords
    (verl's ``reward_router_address``, …) are ignored."""
    env = os.environ if environ is None else environ
    raw: dict[str, tuple[str, Any]] = {}
    for key, var in ENV_OPTIONS.items():
        if key in kwargs and kwargs[key] is not None:
            raw[key] = (key, kwargs[key])
        elif env.get(var, "") != "":
            raw[key] = (var, env[var])
    out: dict[str, Any] = {}
    try:
        for key, (name, value) in raw.items():
            if key == "swap":
                out["swap"] = json.loads(value) if isinstance(value, str) else dict(value)
            elif key == "sampled":
                out["expected"] = not _flag(name, value)
            elif key in ("normalize", "relative"):
                out[key] = _flag(name, value)
            elif key in ("invalid_reward", "margin"):
                out[key] = float(value)
            elif key == "max_reply_chars":
                out[key] = int(value)
            else:
                out[key] = str(value)
    except (TypeError, ValueError) as exc:  # json.JSONDecodeError is a ValueError
        raise ValueError(f"{name}: {exc}") from None
    return out


_REWARDS: dict[str, DebateReward] = {}


def _reward_for(kwargs: Mapping[str, Any]) -> DebateReward:
    """One :class:`DebateReward` per distinct set of options (its teams are reused)."""
    opts = reward_options(kwargs)
    key = json.dumps(opts, sort_keys=True)
    if key not in _REWARDS:
        _REWARDS[key] = DebateReward(**opts)
    return _REWARDS[key]


def compute_score(
    data_source: str, solution_str: str, ground_truth: str, extra_info: Any = None,
    **kwargs: Any,
) -> float:
    """verl's custom reward function: ``ground_truth`` is the row's state; options as
    keyword arguments (``custom_reward_function.reward_kwargs``) or environment variables
    (:data:`ENV_OPTIONS`); other keywords verl passes are ignored."""
    return run_sync(_reward_for(kwargs).score(solution_str, ground_truth))


def reward_func(queries: list[str], prompts: list[str], labels: list[str], **kwargs: Any) -> Any:
    """OpenRLHF's remote reward function: ``labels`` are the rows' states; ``queries`` are
    prompt + response, so the response is what follows the prompt (a query that does not start
with its prompt gets the invalid reward: the whole query is never read). Options as for
    :func:`compute_score`."""
    responses = [  # a query that does not start with its prompt has no readable reply
        q[len(p) :] if q.startswith(p) else None for q, p in zip(queries, prompts, strict=True)
    ]
    scores = run_sync(_reward_for(kwargs).score_all(responses, labels))
    try:
        import torch
    except ImportError:  # pragma: no cover - OpenRLHF always has torch
        return {"rewards": scores, "scores": scores}
    t = torch.tensor(scores, dtype=torch.float32)
    return {"rewards": t, "scores": t, "extra_logs": {}}
