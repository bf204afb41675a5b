"""Reward functions for online RL in the signatures the trainers call.

Each plays out the rest of a debate from a row's ``state`` (``llmdebate export --format
trl-prompt-only`` / ``verl`` / ``openrlhf``) with the policy's completion as the decision, and
frozen opponents and judge (the run's models, or any model string given in ``swap``), and
returns the reward the decision is credited with (:mod:`llmdebate.export.credit`, every
number from :mod:`llmdebate.scoring`): the expected one (default; lower variance) or the
sampled one, in units of r^(d+1) unless ``normalize=False``. A completion that does not
parse as the decision earns ``invalid_reward``.

* TRL: ``DebateReward(...)`` is a ``reward_funcs`` entry: ``f(prompts, completions, state=...,
  **kwargs) -> list[float]``; :class:`AsyncDebateReward` is the ``async`` variant.
* verl: :func:`compute_score` ``(data_source, solution_str, ground_truth, extra_info)``.
* OpenRLHF: :func:`reward_func` ``(queries, prompts, labels)``.

verl and OpenRLHF import a function by path, so these two read their settings from the
environment: ``LLMDEBATE_RL_SWAP`` (JSON {role: model string}) and ``LLMDEBATE_RL_SAMPLED=1``.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

from llmdebate import scoring
from llmdebate.agents.factory import Team
from llmdebate.agents.parsing import ReplyError
from llmdebate.elicit import estimate_from_samples, parse_bool
from llmdebate.elicit import parse_probability as parse_stated
from llmdebate.errors import InvalidOutputError, ProtocolViolation, RuleError
from llmdebate.export.credit import judged, naive_payoff, pe_call_credits, pe_terms
from llmdebate.protocols.interface import ESTIMATOR, RECURSIVE, SPEECHES
from llmdebate.protocols.registry import protocol_of
from llmdebate.rl.replay import Injection, fork, team_for
from llmdebate.schemas import ModelCallRecord, Transcript

DECISION_OF_ACT = {
    "direction": "direction",
    "decompose": "decompose",
    "recurse": "recurse",
    "evidence": "evidence",
    "estimate": "estimate",
}


NAIVE_ACTS = {"prover": ("decompose", "value", "evidence"), "challenger": ("recurse",)}
LOGPROBS_AS = ("refuse", "answer", "frozen")


def completion_probability(
    text: str, method: str, temperature: float = 1.0, logprobs_as: str = "refuse"
) -> tuple[bool, float | None]:
    """What a completion for a probability decision stands for, by the elicitation method the
    run used for it: (inject the completion?, its probability).

    * ``verbalised``: the number the reply states (the method's own parser);
    * ``sampling``: one of the method's samples; the probability is the method's estimate
      from that one sample, (k + 1) / (n + 2) = 2/3 for True, 1/3 for False;
    * ``logprobs``: the method reads the model's distribution over the answer token, which a
      sampled completion does not carry. ``logprobs_as`` says what to do: ``refuse``
      (ValueError), ``answer`` (its answer word as a certain estimate: True 1, False 0), or
      ``frozen`` (nothing is injected: the frozen model of the role answers by its method,
      for a baseline or a counterfactual).

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
    if logprobs_as == "answer":
        word = parse_bool(text)
        if word is None:
            raise ValueError("the reply says neither True nor False")
        return True, float(word)
    raise LogprobsCompletionError(
        "the logprobs method reads the model's token distribution, not a reply: a completion "
        "states no probability; pass logprobs_as='answer' (its True/False word as 1/0) or "
        "'frozen' (the frozen model answers by its method), or export trl-unpaired for KTO"
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
    """Shared: the teams (one per run config) and the scoring of one completion."""

    def __init__(
        self,
        *,
        expected: bool = True,
        normalize: bool = True,
        swap: dict[str, str] | None = None,
        invalid_reward: float = -1.0,
        name: str = "debate_reward",
        logprobs_as: str = "refuse",
    ) -> None:
        if logprobs_as not in LOGPROBS_AS:
            raise ValueError(f"logprobs_as: one of {', '.join(LOGPROBS_AS)} (got {logprobs_as!r})")
        self.logprobs_as = logprobs_as
        self.expected = expected
        self.normalize = normalize
        self.swap = dict(swap or {})
        self.invalid_reward = invalid_reward
        self.__name__ = name  # TRL logs a reward function under its __name__
        self._teams: dict[str, Team] = {}

    def team(self, config: dict[str, Any]) -> Team:
        key = json.dumps(config, sort_keys=True, default=str)
        if key not in self._teams:
            self._teams[key] = team_for(config, self.swap)
        return self._teams[key]

    async def score(self, completion: Any, state: str | dict[str, Any]) -> float:
        st = json.loads(state) if isinstance(state, str) else state
        t = Transcript.model_validate(st["transcript"])
        text = _completion_text(completion)
        protocol = protocol_of(t)
        if protocol.can(ESTIMATOR):
            return await self._score_pe(text, st, t)
        if protocol.can(RECURSIVE):
            return await self._score_naive(text, st, t)
        if protocol.can(SPEECHES):
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

    async def _score_pe(self, text: str, st: dict[str, Any], t: Transcript) -> float:
        act = str(st["act"])
        if act not in DECISION_OF_ACT or st["speaker"] not in ("prover", "estimator"):
            raise ValueError(f"no reward for a {st['speaker']} {act} decision")
        k = st.get("round")
        at, at_act = (t.config.depth, "direction") if k is None else (int(k), act)
        prefix = st.get("prefix")
        inject: Injection | None = None
        value: float | None = None
        live = True
        if st["speaker"] == "estimator":
            try:
                live, value = self._probability(st, text, "estimator", "method")
            except ValueError:
                return self.invalid_reward
        if live:
            inject = Injection(
                speaker=st["speaker"], act=act, round=k, completion=text,
                index=st.get("index"), prefix=tuple(prefix) if prefix is not None else None,
                value=value,
            )
        new = await self._play(t, st, at, inject, act=at_act)
        if new is None:
            return self.invalid_reward
        terms = pe_terms(new)
        call = ModelCallRecord.model_validate({
            "role": st["speaker"], "model": "", "decision": DECISION_OF_ACT[act], "round": k,
            "index": st.get("index"), "prefix": prefix,
        })
        credits = [c for _, c in pe_call_credits(new, terms, call)]
        credit = next((c for c in credits if c.term == st.get("term")), None)
        if credit is None:  # the decision's term vanished (the continuation stopped early)
            return 0.0
        value_out = credit.expected_reward if self.expected else credit.reward
        assert value_out is not None
        return float(value_out / scoring.normalizer(new.config) if self.normalize else value_out)

    async def _score_naive(self, text: str, st: dict[str, Any], t: Transcript) -> float:
        speaker, act, k = str(st["speaker"]), str(st["act"]), st.get("round")
        if act not in NAIVE_ACTS.get(speaker, ()) or k is None:
            raise ValueError(f"no reward for a naive-debate {speaker} {act} decision")
        value: float | None = None
        live = True
        if act in ("value", "recurse"):  # one subclaim's probability
            role, field = ("prover", "belief_method") if speaker == "prover" else (
                "estimator", "method")
            try:
                live, value = self._probability(st, text, role, field)
            except ValueError:
                return self.invalid_reward
        inject = Injection(speaker=speaker, act=act, round=int(k), completion=text,
                           index=st.get("index"), value=value) if live else None
        new = await self._play(t, st, int(k), inject, act=act)
        if new is None:
            return self.invalid_reward
        payoff = naive_payoff(new)
        return float(payoff if speaker == "prover" else -payoff)

    async def _score_speech(self, text: str, st: dict[str, Any], t: Transcript) -> float:
        speaker, rnd = str(st["speaker"]), st.get("round")
        if st["act"] != "speech" or rnd is None:
            raise ValueError(f"no reward for a {t.protocol} {speaker} {st['act']} decision")
        inject = Injection(speaker=speaker, act="speech", round=int(rnd), completion=text)
        new = await self._play(t, st, int(rnd), inject, speaker=speaker)
        if new is None:
            return self.invalid_reward
        got = judged(new, speaker)
        if got is None:
            raise ValueError(f"{t.id}: the continued debate has no judge's probability")
        sampled, expected = got
        return float(expected if self.expected else sampled)

    async def score_all(self, completions: list[Any], states: list[Any]) -> list[float]:
        return list(
            await asyncio.gather(
                *(self.score(c, s) for c, s in zip(completions, states, strict=True))
            )
        )


class DebateReward(DebateRewardBase):
    """A TRL ``reward_funcs`` entry (synchronous)."""

    def __call__(
        self, prompts: list[Any], completions: list[Any], state: list[str], **kwargs: Any
    ) -> list[float]:
        return asyncio.run(self.score_all(completions, state))


class AsyncDebateReward(DebateRewardBase):
    """A TRL ``reward_funcs`` entry (``async``: TRL awaits it beside other reward functions)."""

    async def __call__(
        self, prompts: list[Any], completions: list[Any], state: list[str], **kwargs: Any
    ) -> list[float]:
        return await self.score_all(completions, state)


def _from_env() -> DebateReward:
    swap = json.loads(os.environ.get("LLMDEBATE_RL_SWAP", "{}") or "{}")
    return DebateReward(expected=os.environ.get("LLMDEBATE_RL_SAMPLED") != "1", swap=swap)


_ENV_REWARD: DebateReward | None = None


def _env_reward() -> DebateReward:
    global _ENV_REWARD
    if _ENV_REWARD is None:
        _ENV_REWARD = _from_env()
    return _ENV_REWARD


def compute_score(
    data_source: str, solution_str: str, ground_truth: str, extra_info: Any = None
) -> float:
    """verl's custom reward function: ``ground_truth`` is the row's state."""
    return asyncio.run(_env_reward().score(solution_str, ground_truth))


def reward_func(queries: list[str], prompts: list[str], labels: list[str]) -> Any:
    """OpenRLHF's remote reward function: ``labels`` are the rows' states; ``queries`` are
    prompt + response, so the response is what follows the prompt."""
    responses = [
        q[len(p) :] if q.startswith(p) else q for q, p in zip(queries, prompts, strict=True)
    ]
    scores = asyncio.run(_env_reward().score_all(responses, labels))
    try:
        import torch
    except ImportError:  # pragma: no cover - OpenRLHF always has torch
        return {"rewards": scores, "scores": scores}
    t = torch.tensor(scores, dtype=torch.float32)
    return {"rewards": t, "scores": t, "extra_logs": {}}
