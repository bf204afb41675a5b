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
from llmdebate.errors import InvalidOutputError, ProtocolViolation, RuleError
from llmdebate.export.credit import pe_call_credits, pe_terms
from llmdebate.rl.replay import Injection, fork, team_for
from llmdebate.schemas import ModelCallRecord, Transcript

DECISION_OF_ACT = {
    "direction": "direction",
    "decompose": "decompose",
    "recurse": "recurse",
    "evidence": "evidence",
    "estimate": "estimate",
}


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
    ) -> None:
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
        act = str(st["act"])
        if act not in DECISION_OF_ACT or st["speaker"] not in ("prover", "estimator"):
            raise ValueError(f"no reward for a {st['speaker']} {act} decision")
        k = st.get("round")
        at, at_act = (t.config.depth, "direction") if k is None else (int(k), act)
        prefix = st.get("prefix")
        inject = Injection(
            speaker=st["speaker"],
            act=act,
            round=k,
            completion=_completion_text(completion),
            index=st.get("index"),
            prefix=tuple(prefix) if prefix is not None else None,
        )
        swapped = tuple(self.swap)
        try:
            new = await fork(t, self.team(st["config"]), at, act=at_act, inject=inject,
                             swapped=swapped)
        except (InvalidOutputError, ReplyError, ProtocolViolation, RuleError):
            return self.invalid_reward
        if new.status != "complete":
            raise ValueError(f"{t.id}: the continued debate is {new.status}")
        terms = pe_terms(new)
        call = ModelCallRecord(
            role=st["speaker"], model="", decision=DECISION_OF_ACT[act], round=k,
            index=st.get("index"), prefix=prefix,
        )
        credits = [c for _, c in pe_call_credits(new, terms, call)]
        credit = next((c for c in credits if c.term == st.get("term")), None)
        if credit is None:  # the decision's term vanished (the continuation stopped early)
            return 0.0
        value = credit.expected_reward if self.expected else credit.reward
        assert value is not None
        return float(value / scoring.normalizer(new.config) if self.normalize else value)

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
