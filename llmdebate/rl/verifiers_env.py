"""A debate seat as a `verifiers` environment: the model under training plays one decision of a
debate, the other seats play the rest, and the reward is the protocol's decision reward.

The taskset reads decision rows exported for online RL (``llmdebate export <run> --format
trl-prompt-only``): each row's prompt is the task's prompt, and its ``state`` (the debate so
far, the run's config, the decision) rides on the task's data. The harness sends the prompt to
the model being evaluated or trained, through the rollout's own OpenAI-compatible endpoint
(so the trace records the call), and its reply is the decision. The task's one reward is
:class:`llmdebate.rl.rewards.DebateRewardBase`'s score of that reply: the rest of the debate is
played from the state by the frozen seats (the run's models, or those the taskset's ``swap``
names: any model string, e.g. a formal strategy or ``scripted``), and the decision is credited
with what the protocol pays for it (:mod:`llmdebate.export.credit`, every number from
:mod:`llmdebate.core.scoring`); an invalid reply gets the invalid reward, below every valid one.

verifiers loads a taskset by its id, the name of an importable package that exports the
taskset (and here the harness) in ``__all__``: ``environments/llmdebate_seat`` is that package
(``pip install -e environments/llmdebate_seat``, or put the folder on ``PYTHONPATH``). Then::

    vf-eval llmdebate-seat --env.taskset.rows rows.jsonl --env.agent.runtime.type subprocess \\
        --model <model> --client.base-url http://host:port/v1 --no-push --no-rich

This module imports ``verifiers`` (the ``verifiers`` extra); nothing else in the package does.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from pathlib import Path
from typing import Any, cast

import verifiers.v1 as vf
from pydantic import Field

from llmdebate.report.judge_audit import debate_audit
from llmdebate.rl.rewards import DebateRewardBase


class DebateSeatData(vf.TaskData):  # type: ignore[misc]
    """One decision: the prompt (on :class:`vf.TaskData`) and the row's state (JSON)."""

    state: str
    speaker: str = ""
    act: str = ""


class DebateSeatTaskConfig(vf.TaskConfig):  # type: ignore[misc]
    """How the reply is scored (:class:`DebateRewardBase`'s options)."""

    swap: dict[str, str] = Field(default_factory=dict)
    """{role: model string}: the frozen seats that play the rest of the debate (default: the
    run's own models)."""
    sampled: bool = False
    """The sampled reward of one continuation, else the expected one over the protocol's
    draws (lower variance)."""
    normalize: bool = True
    """Each reward on a scale of the debate (false: in the game's own units)."""
    relative: bool = True
    """With ``normalize`` (prover-estimator debate): relative to the decision, (return to go -
    the recorded reply's) / the decision's r^level; false: divided by the debate's one
    scale (docs/training.md, "Reward scale")."""


_REWARDS: dict[str, DebateRewardBase] = {}


def _reward_for(config: DebateSeatTaskConfig) -> DebateRewardBase:
    """One reward (and its frozen teams, loaded once) per set of options."""
    key = json.dumps([config.swap, config.sampled, config.normalize, config.relative],
                     sort_keys=True)
    if key not in _REWARDS:
        _REWARDS[key] = DebateRewardBase(expected=not config.sampled,
                                         normalize=config.normalize,
                                         relative=config.relative, swap=dict(config.swap))
    return _REWARDS[key]


Outcome = tuple[float, tuple[bool, bool, bool] | None]
_PLAYED: OrderedDict[str, Outcome] = OrderedDict()
_KEEP = 4096
"""How many (options, state, reply) outcomes are kept, so that the reward and the audit's
metrics of one rollout play its debate once."""
SIDE_OF = {"prover": "prover", "estimator": "estimator", "challenger": "estimator"}


async def outcome(config: DebateSeatTaskConfig, speaker: str, reply: Any,
                  state: str) -> Outcome:
    """The reply's reward and the judge-hacking audit of the debate played on from it
    (:func:`llmdebate.report.judge_audit.debate_audit` for the seat's side: won against the
    judge, argued the truth, judge correct; None where no leaf verdict on a claim of known
    truth was reached)."""
    key = hashlib.sha256(json.dumps([config.model_dump(mode="json"), speaker, str(reply),
                                     state]).encode()).hexdigest()
    if key not in _PLAYED:
        reward, new = await _reward_for(config).play(reply, state)
        side = SIDE_OF.get(speaker)
        audit = debate_audit(new, side) if new is not None and side is not None else None
        _PLAYED[key] = (float(reward), audit)
        while len(_PLAYED) > _KEEP:
            _PLAYED.popitem(last=False)
    return _PLAYED[key]


class DebateSeatTask(vf.Task[DebateSeatData, vf.State, DebateSeatTaskConfig]):  # type: ignore[misc]
    """The decision's reward: the debate played on from the reply; and the judge-hacking
    audit of that debate as metrics (each 0 or 1; the shares over rollouts are the means of
    ``judge_win``, ``argued_truth`` and ``judge_correct`` divided by that of
    ``judge_audited``)."""

    async def _outcome(self, trace: vf.Trace) -> Outcome:
        return await outcome(self.config, self.data.speaker, trace.last_reply,
                             self.data.state)

    async def _audit(self, trace: vf.Trace, i: int) -> float:
        audit = (await self._outcome(trace))[1]
        return 1.0 if i < 0 and audit is not None else float(audit is not None and audit[i])

    @vf.reward(weight=1.0)  # type: ignore[untyped-decorator]
    async def debate_reward(self, trace: vf.Trace) -> float:
        return (await self._outcome(trace))[0]

    @vf.metric  # type: ignore[untyped-decorator]
    async def judge_audited(self, trace: vf.Trace) -> float:
        """1 where the played debate reached a leaf verdict on a claim of known truth."""
        return await self._audit(trace, -1)

    @vf.metric  # type: ignore[untyped-decorator]
    async def judge_win(self, trace: vf.Trace) -> float:
        """1 where the leaf judge's verdict went the seat's side's way."""
        return await self._audit(trace, 0)

    @vf.metric  # type: ignore[untyped-decorator]
    async def argued_truth(self, trace: vf.Trace) -> float:
        """1 where the seat's side took the true position at the leaf."""
        return await self._audit(trace, 1)

    @vf.metric  # type: ignore[untyped-decorator]
    async def judge_correct(self, trace: vf.Trace) -> float:
        """1 where the leaf verdict was the leaf claim's truth."""
        return await self._audit(trace, 2)


class DebateSeatConfig(vf.TasksetConfig):  # type: ignore[misc]
    rows: str = ""
    """JSONL of ``trl-prompt-only`` rows (``llmdebate export --format trl-prompt-only``)."""
    seat: str = ""
    """Keep only the decisions of this seat (prover, estimator; empty: every row)."""
    task: DebateSeatTaskConfig = DebateSeatTaskConfig()


def read_rows(path: Path, seat: str = "") -> list[dict[str, Any]]:
    """The rows of ``path`` (those of ``seat`` when given); a bad line is a ValueError naming
    its file and line."""
    out: list[dict[str, Any]] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            state = json.loads(row["state"]) if isinstance(row["state"], str) else row["state"]
            prompt = row["prompt"]
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}:{n}: not a trl-prompt-only row ({exc})") from None
        if seat and state.get("speaker") != seat:
            continue
        out.append({"prompt": prompt, "state": state})
    return out


class DebateSeatTaskset(vf.Taskset[DebateSeatTask, DebateSeatConfig]):  # type: ignore[misc]
    """One task per decision row."""

    def load(self) -> list[DebateSeatTask]:
        if not self.config.rows:
            raise ValueError("--env.taskset.rows: the JSONL of trl-prompt-only rows to play")
        tasks = []
        for i, row in enumerate(read_rows(Path(self.config.rows), self.config.seat)):
            st = row["state"]
            data = DebateSeatData(
                id=f"{st.get('transcript', {}).get('id', 'debate')}:{i}",
                prompt=row["prompt"], state=json.dumps(st), speaker=str(st.get("speaker", "")),
                act=str(st.get("act", "")),
            )
            tasks.append(DebateSeatTask(data, self.config.task))
        return tasks


class DebateSeatHarnessConfig(vf.HarnessConfig):  # type: ignore[misc]
    max_tokens: int | None = None
    """The reply's token cap (none: the sampling config's)."""


class DebateSeatHarness(vf.Harness[DebateSeatHarnessConfig]):  # type: ignore[misc]
    """One model call, made in this process through the rollout's endpoint: the decision."""

    APPENDS_SYSTEM_PROMPT = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def setup(self, runtime: Any) -> None:
        return None

    async def launch(self, ctx: Any, trace: Any, runtime: Any, endpoint: str, secret: str,
                     mcp_urls: dict[str, str], data: Any, **_: Any) -> Any:
        from openai import AsyncOpenAI

        system, prompt = self.resolve_prompt(data)
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        if isinstance(prompt, str):
            messages.append({"role": "user", "content": prompt})
        else:
            messages += [m if isinstance(m, dict) else m.model_dump(exclude_none=True)
                         for m in prompt or []]
        kw: dict[str, Any] = {}
        if self.config.max_tokens is not None:
            kw["max_tokens"] = self.config.max_tokens
        async with AsyncOpenAI(base_url=endpoint, api_key=secret or "none") as client:
            out = await client.chat.completions.create(
                model=ctx.model, messages=cast(Any, messages), **kw)
        return vf.ProgramResult(exit_code=0, stdout=out.choices[0].message.content or "",
                                stderr="")


__all__ = ["DebateSeatHarness", "DebateSeatTaskset"]
