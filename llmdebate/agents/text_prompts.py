"""Plain-text prompts for models behind a text-completions endpoint (base models).

A model served with ``endpoint: completions`` and no ``chat_template`` reads one plain text,
not chat turns. For such a role, :class:`TextPrompts` renders an act from
``text/<act>.j2`` when the prompt folder (or the defaults) has one: a template without
blocks whose text is the whole prompt, ending where the model should go on (e.g.
``Answer:``), usually after few-shot examples. Acts without a text template fall back to the
chat template, whose messages the backend renders as labelled turns
(:func:`llmdebate.models.text_prompt.format_prompt`).

Besides the act's variables, a text template gets ``method``: the role's probability method
(``logprobs``, ``sampling``, ``verbalised``; the judge's may also be ``generate``), since a
base model is cued differently for a word and for a number. It may set, at its top level,

* ``examples``: the few-shot examples it shows (any JSON values), and
* ``stop``: the stop sequences of its replies (a list of strings).

The result is one user message carrying the text and, for the call record, ``template``
(the file) and ``examples``; the backend sends its content as is, and the elicitation
methods add no instruction to it (the template holds its own cue).
"""

from __future__ import annotations

import json
from typing import Any

from jinja2 import TemplateError, TemplateNotFound

from llmdebate.models.interface import Backend
from llmdebate.prompts import PromptError, Prompts

TEXT_FOLDER = "text"


def wants_text_prompts(backend: Backend) -> bool:
    """Whether ``backend`` sends plain-text prompts that it does not render itself (a
    completions endpoint without a chat template; for a replica set, every replica)."""
    return backend.profile.text_prompts


class TextPrompts(Prompts):
    """The prompts of one role whose model reads plain text: ``text/<act>.j2`` where it
    exists, else the chat templates (see the module docstring)."""

    def __init__(self, base: Prompts, method: str | None = None) -> None:
        # a view of ``base``: the same loaders and environment, templates read once
        self.__dict__.update(base.__dict__)
        self.method = method
        self._text_templates: dict[str, Any] = {}

    def text_template(self, act: str) -> Any | None:
        """The text template of ``act``, or None when there is none."""
        if act not in self._text_templates:
            name = f"{TEXT_FOLDER}/{act}.j2"
            try:
                self._text_templates[act] = self.env.get_template(name)
            except TemplateNotFound:
                self._text_templates[act] = None
            except TemplateError as exc:
                raise PromptError(f"prompt template {name}: {exc}") from None
        return self._text_templates[act]

    def render(self, act: str, **variables: Any) -> list[dict[str, str]]:
        tmpl = self.text_template(act)
        if tmpl is None:
            return super().render(act, **variables)
        name = f"{TEXT_FOLDER}/{act}.j2"
        try:
            module = tmpl.make_module({"method": self.method, **variables})
        except TemplateError as exc:
            raise PromptError(f"prompt template {name}: {exc}") from None
        text = str(module).strip()
        if not text:
            raise PromptError(f"prompt template {name} renders no text")
        message: dict[str, Any] = {"role": "user", "content": text, "template": name}
        examples = getattr(module, "examples", None)
        if examples is not None:
            message["examples"] = json.loads(json.dumps(examples, default=str))
        stop = getattr(module, "stop", None)
        if stop is not None:
            if not isinstance(stop, list | tuple) or not all(isinstance(s, str) for s in stop):
                raise PromptError(f"prompt template {name}: stop must be a list of strings")
            message["stop"] = list(stop)
        return [message]
