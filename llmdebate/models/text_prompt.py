"""Chat messages rendered as one plain-text prompt, for base models and completions endpoints.

Without a chat template the messages become labelled turns (the form the embedded base
model and any text-completions endpoint read)::

    System: <content>

    User: <content>

    Answer:

(``Assistant: <content>`` for assistant turns; a final assistant turn is continued instead of
adding ``Answer:``.) A base model would go on to write the next turn, so generation also stops
at :data:`TURN_STOPS`. With a chat template (a model's own Jinja template, from a
``tokenizer_config.json``, a tokenizer folder or a ``.jinja`` file), the messages are rendered
by it with ``add_generation_prompt=True``, as a chat endpoint would.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from llmdebate.errors import UserError
from llmdebate.models.interface import ChatMessage
from llmdebate.records.paths import resolve_path

LABELS = {"system": "System", "user": "User", "assistant": "Assistant"}
TURN_STOPS = ["\n\nUser:", "\n\nSystem:"]


def format_prompt(messages: list[ChatMessage]) -> str:
    """Plain-text prompt for a base model (see the module docstring)."""
    parts = [f"{LABELS[m['role']]}: {m['content'].strip()}" for m in messages]
    prompt = "\n\n".join(parts)
    return prompt if messages[-1]["role"] == "assistant" else prompt + "\n\nAnswer:"


def is_text_prompt(messages: list[ChatMessage]) -> bool:
    """Whether ``messages`` start with a prompt rendered by a text template (its message
    names the ``template``; :mod:`llmdebate.agents.text_prompts`)."""
    return bool(messages) and bool(messages[0].get("template"))


def render_text_prompt(messages: list[ChatMessage]) -> str:
    """A text template's prompt, sent as it is; the turns of a re-ask after it: the reply
    continues the prompt, then the new request and the prompt's last line (its cue, e.g.
    ``Answer:``) again."""
    prompt = messages[0]["content"]
    cue = prompt.rsplit("\n", 1)[-1].strip()
    parts = [prompt]
    for m in messages[1:]:
        if m["role"] == "assistant":
            parts.append(m["content"] if m["content"][:1].isspace() else " " + m["content"])
        else:
            parts.append(f"\n\n{m['content'].strip()}\n{cue}")
    return "".join(parts)


def load_chat_template(source: str | Path) -> str:
    """A chat template from a ``.jinja`` file, a ``tokenizer_config.json`` or a folder
    holding one; :class:`~llmdebate.errors.UserError` naming the file otherwise."""
    path = resolve_path(source)  # relative: the current folder, then the repository
    if path.is_dir():
        path = path / "tokenizer_config.json"
    if not path.is_file():
        raise UserError(f"chat_template: no file at {path}")
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".json":
        return text
    try:
        template = json.loads(text).get("chat_template")
    except (ValueError, AttributeError) as exc:
        raise UserError(f"chat_template: {path} is not a tokenizer config ({exc})") from None
    if isinstance(template, list):  # named templates: take the default one
        template = next((t.get("template") for t in template if t.get("name") == "default"), None)
    if not isinstance(template, str) or not template.strip():
        raise UserError(f"chat_template: {path} holds no chat_template")
    return template


class ChatTemplate:
    """A model's chat template, rendered in a Jinja sandbox."""

    def __init__(self, template: str, bos_token: str = "", eos_token: str = "") -> None:
        from jinja2 import TemplateError
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)

        def raise_exception(message: str) -> None:
            raise UserError(f"chat template: {message}")

        env.globals["raise_exception"] = raise_exception
        try:
            self.template = env.from_string(template)
        except TemplateError as exc:
            raise UserError(f"chat template does not compile: {exc}") from None
        self.extra: dict[str, Any] = {"bos_token": bos_token, "eos_token": eos_token}

    def render(self, messages: list[ChatMessage]) -> str:
        return str(
            self.template.render(messages=messages, add_generation_prompt=True, **self.extra)
        )
