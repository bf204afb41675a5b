"""Inspect's mock model playing llmdebate's scripted models (not a test module).

``mock_role(backend)`` is an Inspect ``mockllm/model`` whose every reply is what the
:class:`~llmdebate.models.scripted.ScriptedBackend` ``backend`` answers (with its logprobs),
with usage set so that Inspect counts no tokens itself.
"""

from __future__ import annotations

import json
from typing import Any

from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessageAssistant,
    Logprob,
    Logprobs,
    ModelOutput,
    ModelUsage,
    TopLogprob,
    get_model,
)
from inspect_ai.model import Model as InspectModel

from llmdebate.models import GenerateConfig, ScriptedBackend

ITEMS = [
    {"id": "q1", "question": "Is water wet?", "choices": ["yes", "no"], "answer": "yes",
     "facts": ["Water makes things wet."]},
    {"id": "q2", "question": "Is fire cold?", "choices": ["yes", "no"], "answer": "no"},
]


def reply(messages: list[dict[str, str]]) -> str:
    if "JSON" in messages[0]["content"]:
        return json.dumps({"subclaims": ["part one", "part two"], "rule": {"kind": "and"}})
    if "number of the correct option" in messages[-1]["content"]:
        return "2"
    return "An argument."


def judge_p(messages: list[dict[str, str]]) -> float:
    text = messages[-1]["content"]
    return 0.8 if '"yes"' in text else 0.3


def answer(backend: ScriptedBackend, messages: list[Any], config: Any) -> ModelOutput:
    """What ``backend`` answers Inspect's ``messages`` under Inspect's ``config``."""
    msgs = [{"role": m.role, "content": m.text} for m in messages]
    cfg = GenerateConfig(
        temperature=config.temperature or 0.0,
        max_tokens=config.max_tokens or 256,
        top_logprobs=config.top_logprobs if config.logprobs else None,
    )
    coro = backend.generate(msgs, cfg)  # the scripted backend never suspends
    try:
        coro.send(None)
    except StopIteration as stop:
        out = stop.value
    else:  # pragma: no cover
        raise AssertionError("the scripted backend suspended")
    logprobs = None
    if out.logprobs:
        logprobs = Logprobs(content=[
            Logprob(token=t.token, logprob=t.logprob,
                    top_logprobs=[TopLogprob(token=k, logprob=v) for k, v in t.top.items()])
            for t in out.logprobs
        ])
    return ModelOutput(
        model="mockllm/model",
        choices=[ChatCompletionChoice(
            message=ChatMessageAssistant(content=out.text, model="mockllm/model"),
            stop_reason="stop", logprobs=logprobs,
        )],
        usage=ModelUsage(input_tokens=out.tokens_in, output_tokens=out.tokens_out,
                         total_tokens=out.tokens_in + out.tokens_out),
    )


def mock_role(backend: ScriptedBackend) -> InspectModel:
    def outputs(messages: list[Any], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        return answer(backend, messages, config)

    return get_model("mockllm/model", custom_outputs=outputs, memoize=False)


def mock_roles() -> dict[str, InspectModel]:
    """Prover, estimator and judge as in tests/test_protocols_e2e.py."""
    return {
        "prover": mock_role(ScriptedBackend(responder=reply, default_probability=0.8)),
        "estimator": mock_role(ScriptedBackend(default_probability=0.6)),
        "judge": mock_role(ScriptedBackend(probabilities=judge_p)),
    }
