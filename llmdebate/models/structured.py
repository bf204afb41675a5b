"""Structured outputs: the JSON schema a call asks for, in the form every provider accepts.

A caller that wants a structured reply puts an :class:`OutputSchema` in
:attr:`GenerateConfig.json_schema`; each backend asks for it with its own mechanism and
sets :attr:`ModelOutput.constrained` when the mechanism was applied (for a server, when it is
known to enforce the field: :mod:`llmdebate.models.enforcement`):

* OpenAI: ``response_format`` ``{"type": "json_schema", "json_schema": {..., "strict": true}}``;
* OpenAI-compatible servers: the per-role option ``structured`` picks the server's field
  (:data:`STRUCTURED_MODES`); ``none`` sends the plain prompt;
* Anthropic: one tool whose ``input_schema`` is the schema, forced with ``tool_choice``;
* local transformers: constrained decoding with xgrammar (token masks at every step);
* scripted: replies as scripted (unconstrained).

The reply is always parsed and validated by the caller with the same pydantic model the
schema came from, so a backend that cannot constrain falls back to prompt-and-parse.
:func:`strict_schema` turns a pydantic model's JSON schema into the strict form OpenAI requires
(every property required, ``additionalProperties: false``, references inlined).
"""

from __future__ import annotations

import copy
import functools
import json
from dataclasses import dataclass
from typing import Any, Literal, get_args

from pydantic import BaseModel

StructuredMode = Literal[
    "response_format",
    "guided_json",
    "structured_outputs",
    "structured_outputs_grammar",
    "json_schema",
    "grammar",
    "none",
]
STRUCTURED_MODES: tuple[str, ...] = get_args(StructuredMode)
"""How an OpenAI-compatible server is asked for a schema:

* ``response_format``: OpenAI's ``response_format`` json_schema, strict (OpenAI; vLLM and
  llama.cpp accept it too);
* ``guided_json``: vLLM's ``guided_json`` (before 0.10; vLLM 0.32 answers 200 and ignores
  it: the probe of :mod:`llmdebate.models.enforcement` finds that out);
* ``structured_outputs``: vLLM's ``structured_outputs: {"json": schema}`` (0.10 and later).
  vLLM's JSON grammar lets whitespace run on between tokens, and a small model can spend
  all of ``max_tokens`` on it (seen with Gemma 3 270M on vLLM 0.32);
* ``structured_outputs_grammar``: vLLM's ``structured_outputs: {"grammar": gbnf}``, the
  schema converted to GBNF as for ``grammar`` below (at most one space between tokens, so
  a reply ends); the surest choice on vLLM;
* ``json_schema``: llama.cpp server's ``json_schema`` field;
* ``grammar``: llama.cpp server's ``grammar`` field: the schema converted to GBNF
  (:func:`llmdebate.models.gbnf.schema_to_gbnf`), or the grammar given for the schema's name
  in the ``grammars`` option (``{"decomposition": "root ::= ..."}``); a schema outside the
  converter's subset with no grammar given is sent unconstrained;
* ``none``: the plain prompt; the reply is parsed.
"""


@dataclass(frozen=True)
class OutputSchema:
    """A named JSON schema for one act (``name`` matches ``^[a-zA-Z0-9_-]+$``)."""

    name: str
    schema_json: str
    """The schema as canonical JSON (hashable; it enters the cache key)."""

    @property
    def schema(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.schema_json)
        return loaded

    @classmethod
    def of(cls, name: str, schema: dict[str, Any]) -> OutputSchema:
        # key order is kept: grammar engines write properties in the order listed
        return cls(name, json.dumps(schema, separators=(",", ":")))

    @classmethod
    def from_model(
        cls, model: type[BaseModel], name: str | None = None, **overrides: Any
    ) -> OutputSchema:
        """The strict schema of a pydantic model; ``overrides`` patch property schemas by
        dotted path (e.g. ``{"subclaims.maxItems": 3}``)."""
        schema = strict_schema(model.model_json_schema())
        for path, value in overrides.items():
            *parents, key = path.split(".")
            node = schema
            for p in parents:
                node = node["properties"][p]
            node[key] = value
        return cls.of(name or model.__name__.lower(), schema)


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Inline ``$defs``, require every property and forbid extra ones, drop titles and
    defaults: the subset of JSON schema that OpenAI's strict mode and grammar engines share."""
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(n) for n in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            target = defs[node["$ref"].rsplit("/", 1)[-1]]
            return walk(copy.deepcopy(target))
        out = {k: walk(v) for k, v in node.items() if k not in ("title", "default", "$defs")}
        if out.get("type") == "object" and "properties" in out:
            out["required"] = list(out["properties"])
            out["additionalProperties"] = False
        return out

    result: dict[str, Any] = walk(schema)
    return result


def openai_response_format(schema: OutputSchema) -> dict[str, Any]:
    """OpenAI's ``response_format`` for a strict JSON schema."""
    return {
        "type": "json_schema",
        "json_schema": {"name": schema.name, "schema": schema.schema, "strict": True},
    }


def server_fields(
    mode: str, schema: OutputSchema, grammars: dict[str, str] | None = None
) -> dict[str, Any] | None:
    """The request fields that ask an OpenAI-compatible server for ``schema`` in ``mode``
    (None: the mode cannot constrain this schema, send the plain prompt)."""
    if mode == "response_format":
        return {"response_format": openai_response_format(schema)}
    if mode == "guided_json":
        return {"guided_json": schema.schema}
    if mode == "structured_outputs":
        return {"structured_outputs": {"json": schema.schema}}
    if mode == "json_schema":
        return {"json_schema": schema.schema}
    if mode in ("grammar", "structured_outputs_grammar"):
        gbnf = (grammars or {}).get(schema.name) or schema_grammar(schema.schema_json)
        if not gbnf:
            return None
        if mode == "grammar":
            return {"grammar": gbnf}
        return {"structured_outputs": {"grammar": gbnf}}
    return None


@functools.lru_cache(maxsize=256)
def schema_grammar(schema_json: str) -> str | None:
    """The GBNF grammar of a schema (given as JSON); None outside the converter's subset."""
    from llmdebate.models.gbnf import GrammarError, schema_to_gbnf

    try:
        return schema_to_gbnf(json.loads(schema_json))
    except GrammarError:
        return None
