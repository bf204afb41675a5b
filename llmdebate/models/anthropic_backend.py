"""Anthropic's messages API. It returns no logprobs: use sampling or verbalised estimates.

The key comes from ``$ANTHROPIC_API_KEY`` (or ``api_key_env``); a local ``base_url``
(or ``$ANTHROPIC_BASE_URL``) may run without one (a dummy key is sent). System messages are
joined into the ``system`` parameter. The SDK client is built with ``max_retries=0``, one
per event loop (its connections belong to the loop that opened them: a command that runs
several ``asyncio.run`` on one backend gets a fresh client on each).

Temperature: the 1.x/2.x SDKs dropped ``temperature`` from ``messages.create()``, so it is
sent through ``extra_body`` (same wire payload), capped at 1, and left out when it is 1.0
(the API default). Newer Claude models reject any other value: pass
``send_temperature=False`` to ``get_model`` for those (sampling then runs at the default 1.0).

Structured outputs: a call with ``json_schema`` offers one tool named after the schema, with
the schema as its ``input_schema``, and forces it (``tool_choice``); the tool call's input is
returned as the reply's JSON text. The
tool is strict (``"strict": true``: the API guarantees that its input matches the schema) when
the installed SDK knows the field; strict tools take a subset of JSON schema, so the schema is
sent through the SDK's own ``transform_schema`` (constraints outside the subset, such as
``maxLength`` or ``maximum``, move into the description; the reply is validated against the
full schema either way).
``strict=False`` sends the schema as is, without the flag (for servers that do not know it).
A call is recorded ``constrained`` only under a strict tool (the API's guarantee) whose input
matches the schema: a forced tool without the flag is written freely, and a match by chance
does not count.
``structured="none"`` sends the plain prompt.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from typing import Any, cast

from llmdebate.errors import UserError
from llmdebate.models.http_errors import api_key, map_sdk_error
from llmdebate.models.interface import (
    Backend,
    ChatMessage,
    GenerateConfig,
    ModelOutput,
    TransientError,
    structured_identity,
)
from llmdebate.models.profile import BackendProfile
from llmdebate.models.schema_check import reply_matches
from llmdebate.models.structured import OutputSchema

LOCAL_DUMMY_KEY = "sk-ant-local-no-key"


class AnthropicBackend(Backend):
    """``anthropic/<model>``: text only, no logprobs; temperature is capped at 1."""

    provider = "anthropic"
    profile = BackendProfile(logprobs=False, structured=("tool",), http=True)
    default_concurrency = 8

    def __init__(
        self,
        name: str,
        model_id: str,
        *,
        base_url: str | None = None,
        api_key_env: str | None = None,
        timeout: float = 60.0,  # seconds per request
        send_temperature: bool = True,
        structured: str = "tool",
        strict: bool = True,
    ) -> None:
        from llmdebate.errors import require

        self._sdk: Any = cast(Any, require("anthropic", "anthropic"))
        self.name = name
        self.model_id = model_id
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        self.key_variable = api_key_env or "ANTHROPIC_API_KEY"
        self._secret = api_key(
            self.key_variable, "Anthropic", self.base_url, LOCAL_DUMMY_KEY,
            named=api_key_env is not None,
        )
        self.send_temperature = send_temperature
        if structured not in ("tool", "none"):
            raise UserError(f"{name}: structured must be tool or none (got {structured!r})")
        self.structured = structured
        if structured == "none":
            self.profile = self.profile.without_structured("tool")
        self.sent = 0
        # strict tools: the flag exists in the SDK's tool type, and so does the schema helper
        self.strict = (
            strict
            and "strict" in getattr(self._sdk.types.ToolParam, "__annotations__", {})
            and callable(getattr(self._sdk, "transform_schema", None))
        )
        self._timeout = timeout
        self._client = self._new_client()
        self._clients: dict[asyncio.AbstractEventLoop, Any] = {}
        self._clients_made = 0

    def _new_client(self) -> Any:
        return self._sdk.AsyncAnthropic(
            api_key=self._secret, base_url=self.base_url, max_retries=0, timeout=self._timeout
        )

    def client(self) -> Any:
        """The SDK client of the running event loop (made on its first call there)."""
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            for old in [old for old in self._clients if old.is_closed()]:
                del self._clients[old]
            # the first loop takes the client built with the backend; later ones a new one
            client = self._new_client() if self._clients_made else self._client
            self._clients[loop] = client
            self._clients_made += 1
        return client

    @property
    def identity(self) -> str:
        return f"{self.name}@{self.base_url}" if self.base_url else self.name

    def identity_for(self, config: GenerateConfig) -> str:
        mode = self.structured + (":strict" if self.strict and self.structured == "tool" else "")
        return structured_identity(self.identity, config, mode)

    @property
    def http_requests(self) -> int:
        return self.sent

    @property
    def server_url(self) -> str:
        """The option, else the environment variable, else the SDK's default URL."""
        return str(self._client.base_url).rstrip("/")

    async def generate(
        self, messages: list[ChatMessage], config: GenerateConfig, sample_index: int = 0
    ) -> ModelOutput:
        if config.top_logprobs:
            raise UserError(
                f"{self.name}: Anthropic's API returns no logprobs; "
                "use method='sampling' or method='verbalised'"
            )
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        chat = [
            {"role": m["role"], "content": m["content"]} for m in messages if m["role"] != "system"
        ]
        kwargs: dict[str, Any] = {
            "model": self.model_id,
            "max_tokens": config.max_tokens,
            "messages": chat,
        }
        temperature = min(max(config.temperature, 0.0), 1.0)
        if self.send_temperature and temperature != 1.0:
            kwargs["extra_body"] = {"temperature": temperature}
        if system:
            kwargs["system"] = system
        if config.stop:
            kwargs["stop_sequences"] = config.stop
        schema = config.json_schema if self.structured == "tool" else None
        if schema is not None:
            kwargs["tools"] = [self.tool(schema)]
            kwargs["tool_choice"] = {"type": "tool", "name": schema.name}
        self.sent += 1
        try:
            resp = await self.client().messages.create(**kwargs)
        except Exception as exc:
            raise map_sdk_error(
                exc,
                self._sdk,
                self.name,
                self._secret,
                key_variable=self.key_variable,
                server=self.server_url,
            ) from exc
        try:
            tool = [b for b in resp.content if getattr(b, "type", "") == "tool_use"]
            if schema is not None and tool:
                text = json.dumps(tool[0].input, ensure_ascii=False)
            else:
                text = "".join(b.text for b in resp.content if getattr(b, "type", "") == "text")
            return ModelOutput(
                text=text,
                model=self.name,
                tokens_in=int(resp.usage.input_tokens),
                tokens_out=int(resp.usage.output_tokens),
                constrained=bool(tool)
                and self.strict
                and schema is not None
                and reply_matches(text, schema.schema),
            )
        except (AttributeError, TypeError, ValueError) as exc:
            raise TransientError(f"malformed response: {type(exc).__name__}: {exc}") from exc

    def tool(self, schema: OutputSchema) -> dict[str, Any]:
        """The forced tool that asks for ``schema`` (strict when the SDK supports it)."""
        tool: dict[str, Any] = {
            "name": schema.name,
            "description": f"Reply with the {schema.name} as this tool's input.",
        }
        if self.strict:
            tool["input_schema"] = self._sdk.transform_schema(schema.schema)
            tool["strict"] = True
        else:
            tool["input_schema"] = schema.schema
        return tool

    async def aclose(self) -> None:
        clients = {id(c): c for c in [self._client, *self._clients.values()]}
        self._clients = {}
        for client in clients.values():
            with contextlib.suppress(RuntimeError):  # its event loop is gone
                await client.close()
