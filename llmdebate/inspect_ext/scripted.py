"""The Inspect model ``llmdebate/scripted``: llmdebate's scripted backend as an Inspect model
provider, so that ``inspect eval llmdebate/debate --model llmdebate/scripted`` plays every
role of every protocol with no network, no key and no download (a smoke test of the task,
its scorer and its log; not a model).

Each reply is what a :class:`~llmdebate.models.scripted.ScriptedBackend` answers: a
probability asked for (any method: logprobs, sampling, verbalised) is 0.7 for True; a
decomposition asked for as JSON is two subclaims joined by ``and``; a choice among numbered
options is the first; anything else is one sentence. Usage is set on every reply, so Inspect
counts no tokens (which would fetch tiktoken's encoding).
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessage,
    ChatMessageAssistant,
    GenerateConfig,
    Logprob,
    Logprobs,
    ModelAPI,
    ModelOutput,
    ModelUsage,
    TopLogprob,
    modelapi,
)
from inspect_ai.tool import ToolChoice, ToolInfo

from llmdebate.models import GenerateConfig as DebateConfig
from llmdebate.models import ScriptedBackend

PROVIDER = "llmdebate"
PROBABILITY = 0.7
_SPLITS = itertools.count(1)  # each decomposition's subclaims new, never a claim repeated


def scripted_reply(messages: list[dict[str, str]]) -> str:
    """The scripted player's reply to a request that is not a probability probe."""
    if any("JSON" in m["content"] for m in messages if m["role"] == "system"):
        n = next(_SPLITS)
        return json.dumps({"subclaims": [f"Part {n}a of the claim holds.",
                                         f"Part {n}b of the claim holds."],
                           "rule": {"kind": "and"}})
    if "number of the correct option" in messages[-1]["content"]:
        return "1"
    return "The claim follows from its parts."


class ScriptedAPI(ModelAPI):
    """Inspect's side of ``llmdebate/scripted``: each request answered by one scripted
    backend."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),  # noqa: B008 - Inspect's own signature
        **model_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config)
        self.backend = ScriptedBackend(responder=scripted_reply,
                                       default_probability=PROBABILITY)

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        messages = [{"role": m.role, "content": m.text} for m in input]
        cfg = DebateConfig(
            temperature=config.temperature or 0.0,
            max_tokens=config.max_tokens or 256,
            top_logprobs=config.top_logprobs if config.logprobs else None,
        )
        out = await self.backend.generate(messages, cfg)
        logprobs = None
        if out.logprobs:
            logprobs = Logprobs(content=[
                Logprob(token=t.token, logprob=t.logprob,
                        top_logprobs=[TopLogprob(token=k, logprob=v) for k, v in t.top.items()])
                for t in out.logprobs
            ])
        name = f"{PROVIDER}/{self.model_name}"
        return ModelOutput(
            model=name,
            choices=[ChatCompletionChoice(
                message=ChatMessageAssistant(content=out.text, model=name),
                stop_reason="stop", logprobs=logprobs,
            )],
            usage=ModelUsage(input_tokens=out.tokens_in, output_tokens=out.tokens_out,
                             total_tokens=out.tokens_in + out.tokens_out),
        )


@modelapi(name=PROVIDER)
def scripted() -> type[ModelAPI]:
    """The provider ``llmdebate`` (its one model: ``llmdebate/scripted``)."""
    return ScriptedAPI
