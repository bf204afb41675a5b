"""A scripted backend: a real :class:`Backend` whose replies are given in advance.

It is a *test double* — for tests of agents and protocols and for dry runs — not a model.
Requests go through the same :class:`~llmdebate.models.wrapper.Model` wrapper as any provider
(cache, retries, accounting, call records); its cache is in memory by default, so scripted
replies never leak between runs. It recognises the probes of :mod:`llmdebate.elicit`, so
that it can play a model answering them: elicitation tells it their instructions when it is
imported (:func:`answers_probes`), so the models floor imports no prompt of a floor above.

How it answers, in order:

1. a probability probe made by :func:`llmdebate.elicit.estimate` is answered from the scripted
   probability p of the conversation (``probabilities``: a ``{substring: p}`` dict matched
   against the message texts in order, or a callable ``messages -> p``; else
   ``default_probability``):

   * ``logprobs``: reply " True" or " False" with top logprobs ``{" True": log p,
     " False": log(1 - p)}``, so the real extraction code runs;
   * ``sampling``: "True" with probability p, drawn from a generator seeded by
     (seed, sample_index, messages), so it is deterministic;
   * ``verbalised``: the number p;

2. otherwise the next queued reply in ``replies``;
3. otherwise ``responder(messages)``;
4. otherwise :class:`~llmdebate.errors.InvalidOutputError`.

``fail_first`` makes the first n requests raise a transient error (to exercise retries);
``delay_s`` adds latency. Every request is kept in ``requests``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import random
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from llmdebate.errors import InvalidOutputError, UserError
from llmdebate.models.interface import (
    Backend,
    ChatMessage,
    GenerateConfig,
    ModelOutput,
    TokenLogprob,
    TransientError,
)
from llmdebate.models.profile import BackendProfile

ProbabilitySource = dict[str, float] | Callable[[list[ChatMessage]], float] | None
IMPOSSIBLE = -9999.0  # the logprob OpenAI reports for a token it rules out


@dataclass(frozen=True)
class Probes:
    """The instructions that make a request a probability probe (empty: none known)."""

    true_false: str = ""
    """Appended to a question answered with one word, True or False (``sampling``)."""
    verbalised: str = ""
    """Asks for the probability as a number (``verbalised``)."""

    def instructions(self) -> tuple[str, ...]:
        return tuple(i for i in (self.true_false, self.verbalised) if i)


PROBES = Probes()
"""The probes every scripted backend answers (:func:`answers_probes`)."""


def answers_probes(true_false: str, verbalised: str) -> None:
    """Teach the scripted backend elicitation's probe instructions (:mod:`llmdebate.elicit`
    calls this when it is imported)."""
    global PROBES
    PROBES = Probes(true_false, verbalised)


class ScriptedBackend(Backend):
    """Queued replies, a responder callable and scripted probabilities (a test double)."""

    provider = "scripted"
    default_concurrency = 64

    def __init__(
        self,
        replies: Iterable[str] | None = None,
        *,
        probabilities: ProbabilitySource = None,
        default_probability: float = 0.5,
        responder: Callable[[list[ChatMessage]], str] | None = None,
        name: str = "scripted",
        supports_logprobs: bool = True,
        fail_first: int = 0,
        delay_s: float = 0.0,
    ) -> None:
        _check_p(default_probability, "default_probability")
        self.name = name
        self.replies: deque[str] = deque(replies or [])
        self.probabilities = probabilities
        self.default_probability = default_probability
        self.responder = responder
        self.profile = BackendProfile(logprobs=supports_logprobs, persistent_cache=False)
        self.fail_first = fail_first
        self.delay_s = delay_s
        self.requests: list[list[ChatMessage]] = []

    def probability_for(self, messages: list[ChatMessage]) -> float:
        """The scripted P(True) for a conversation (instructions stripped)."""
        plain = _strip_instructions(messages)
        if callable(self.probabilities):
            p = float(self.probabilities(plain))
        elif self.probabilities:
            text = "\n".join(m["content"] for m in plain)
            p = next(
                (v for k, v in self.probabilities.items() if k in text), self.default_probability
            )
        else:
            p = self.default_probability
        return _check_p(p, "a scripted probability")

    async def generate(
        self, messages: list[ChatMessage], config: GenerateConfig, sample_index: int = 0
    ) -> ModelOutput:
        self.requests.append([dict(m) for m in messages])
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.fail_first > 0:
            self.fail_first -= 1
            raise TransientError("scripted transient failure")
        logprobs = None
        last = messages[-1]["content"]
        if config.top_logprobs:
            p = self.probability_for(messages)
            lp_t = math.log(p) if p > 0 else IMPOSSIBLE
            lp_f = math.log(1 - p) if p < 1 else IMPOSSIBLE
            text = " True" if p >= 0.5 else " False"
            top = {" True": lp_t, " False": lp_f}
            logprobs = [TokenLogprob(text, top[text], top)]
        elif PROBES.verbalised and any(PROBES.verbalised in m["content"] for m in messages):
            text = f"{self.probability_for(messages):.6g}"
        elif PROBES.true_false and PROBES.true_false in last:
            p = self.probability_for(messages)
            if config.temperature <= 0:
                text = "True" if p >= 0.5 else "False"
            else:
                text = "True" if _rng(messages, config, sample_index).random() < p else "False"
        elif self.replies:
            text = self.replies.popleft()
        elif self.responder is not None:
            text = self.responder([dict(m) for m in messages])
        else:
            raise InvalidOutputError(f"{self.name}: no scripted reply left and no responder")
        return ModelOutput(
            text=text,
            model=self.name,
            tokens_in=sum(len(m["content"].split()) for m in messages),
            tokens_out=len(text.split()),
            logprobs=logprobs,
        )


def _check_p(p: float, what: str) -> float:
    if not 0.0 <= p <= 1.0 or math.isnan(p):
        raise UserError(f"{what} must be in [0, 1] (got {p})")
    return p


def _strip_instructions(messages: list[ChatMessage]) -> list[ChatMessage]:
    out = []
    for m in messages:
        content = m["content"]
        for instr in PROBES.instructions():
            content = content.replace(f"\n\n{instr}", "").replace(instr, "")
        if content.strip() or m["role"] != "user":
            out.append({"role": m["role"], "content": content})
    return out


def _rng(messages: list[ChatMessage], config: GenerateConfig, sample_index: int) -> random.Random:
    blob = json.dumps([messages, config.seed, sample_index], sort_keys=True)
    return random.Random(int.from_bytes(hashlib.sha256(blob.encode()).digest()[:8], "little"))
