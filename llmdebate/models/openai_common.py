"""What the two OpenAI-compatible backends share: key, base URL, transport, errors, and
structured outputs checked against what the server does.

The key comes from ``$OPENAI_API_KEY`` (or the variable named by ``api_key_env``). A base URL
on this machine (localhost / 127.x: vLLM, llama.cpp, Ollama) needs no key: a dummy one is sent
if none is set. The base URL comes from ``base_url`` or ``$OPENAI_BASE_URL``, else OpenAI's.
Requests go through one :class:`~llmdebate.models.transport.Transport` (raw HTTP/1.1 for
``http://``, ``httpx`` for ``https://``); retries are the wrapper's.

Structured outputs (``structured``: :data:`~llmdebate.models.structured.STRUCTURED_MODES`):
the server shows whether it applies the field. A 400 or a 5xx naming it (it does not know
the field, or fails on it: retrying would fail again),
or a reply that no JSON constraint could have written (it ignored the field:
llama-cpp-python answers 200 and drops ``response_format`` and ``json_schema``), removes
the mode from the backend's profile: later calls send the plain prompt (the reply is
parsed and validated either way), and one log line says so.

A call is recorded ``constrained`` only where enforcement is established for its endpoint
(:mod:`llmdebate.models.enforcement`): OpenAI's own API with strict ``response_format`` is
documented to enforce it, the ``enforcement`` option may say what the server does, and
otherwise the first structured call of an endpoint sends a probe first. A probe that shows
the field ignored drops the mode (one log line) and later calls send the plain prompt.
"""

from __future__ import annotations

import hashlib
import logging
import os
from typing import Any
from urllib.parse import urlsplit

from llmdebate.errors import InvalidOutputError, RequestRejectedError, UserError
from llmdebate.models.enforcement import (
    ENFORCEMENT,
    ENFORCEMENT_OPTIONS,
    PROBE_MAX_TOKENS,
    PROBE_PROMPT,
    Verdict,
    endpoint_key,
    probe_enforced,
    probe_schema,
)
from llmdebate.models.http1 import Reply
from llmdebate.models.http_errors import api_key, failure_error, reply_error
from llmdebate.models.interface import (
    Backend,
    GenerateConfig,
    ModelOutput,
    TransientError,
    structured_identity,
)
from llmdebate.models.schema_check import looks_unconstrained, reply_matches
from llmdebate.models.structured import STRUCTURED_MODES, OutputSchema, server_fields
from llmdebate.models.transport import loads, open_transport

LOCAL_DUMMY_KEY = "sk-local-no-key"
OPENAI_URL = "https://api.openai.com/v1"
USER_AGENT = "llmdebate (openai-compatible client)"
# words in a 400 reply that mean the server does not know the structured-output field
_STRUCTURED_WORDS = ("response_format", "json_schema", "guided", "structured", "grammar", "schema")

log = logging.getLogger("llmdebate.models")


class OpenAIServer(Backend):
    """An OpenAI-compatible server (the base of the chat and completions backends)."""

    provider = "openai"
    default_concurrency = 8
    endpoint = ""

    def __init__(
        self,
        name: str,
        model_id: str,
        *,
        base_url: str | None = None,
        api_key_env: str | None = None,
        timeout: float = 60.0,  # seconds per request
        structured: str = "response_format",
        grammars: dict[str, str] | None = None,
        enforcement: str | None = None,
    ) -> None:
        self.name = name
        self.model_id = model_id
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.key_variable = api_key_env or "OPENAI_API_KEY"
        self._secret = api_key(
            self.key_variable, "OpenAI", self.base_url, LOCAL_DUMMY_KEY,
            named=api_key_env is not None,
        )
        if structured not in STRUCTURED_MODES:
            raise UserError(
                f"{name}: structured must be one of {', '.join(STRUCTURED_MODES)} "
                f"(got {structured!r})"
            )
        if enforcement is not None and enforcement not in ENFORCEMENT_OPTIONS:
            raise UserError(
                f"{name}: enforcement must be one of {', '.join(ENFORCEMENT_OPTIONS)} "
                f"(got {enforcement!r})"
            )
        self.structured = structured
        self.enforcement = enforcement
        self.grammars = dict(grammars or {})
        headers = {
            "authorization": f"Bearer {self._secret}",
            "content-type": "application/json",
            "accept": "application/json",
            "user-agent": USER_AGENT,
        }
        self.transport = open_transport(self.base_url or OPENAI_URL, headers, timeout)

    # -- what the server is and does
    @property
    def identity(self) -> str:
        return f"{self.name}@{self.base_url}" if self.base_url else self.name

    def identity_for(self, config: GenerateConfig) -> str:
        # the mode in use: a dropped one sends the plain prompt, as ``none`` does
        if config.json_schema is not None:
            self.known_enforcement()
        mode = self.structured if self.structured in self.profile.structured else "none"
        schema = config.json_schema
        grammar = self.grammars.get(schema.name) if schema is not None else None
        if grammar is not None and "grammar" in mode:
            mode += ":" + hashlib.sha256(grammar.encode()).hexdigest()[:16]
        return structured_identity(self.identity, config, mode)

    @property
    def server_url(self) -> str:
        """The option, else the environment variable, else OpenAI's URL."""
        return self.transport.base_url

    @property
    def http_requests(self) -> int:
        """HTTP requests sent (a list of prompts is one; a re-sent call another)."""
        return self.transport.sent

    # -- structured outputs
    def structured_fields(self, schema: OutputSchema | None) -> dict[str, Any] | None:
        """The request fields asking for ``schema`` (None: send the plain prompt)."""
        if schema is None or self.structured not in self.profile.structured:
            return None
        return server_fields(self.structured, schema, self.grammars)

    @property
    def path(self) -> str:
        """The endpoint's path under the base URL."""
        return "/completions" if self.endpoint == "completions" else "/chat/completions"

    @property
    def enforcement_key(self) -> str:
        """The endpoint whose enforcement this backend's structured mode relies on."""
        return endpoint_key(self.server_url, self.path, self.model_id, self.structured)

    def known_enforcement(self) -> bool | None:
        """Whether the server enforces the structured field, where that is known without a
        request: the ``enforcement`` option, the documented behaviour, else this run's
        verdict for the endpoint. A field known to be ignored is dropped here."""
        if self.structured not in self.profile.structured:
            return False
        key = self.enforcement_key
        known: bool | None
        if self.enforcement in ("enforced", "ignored"):
            known = self.enforcement == "enforced"
            ENFORCEMENT.set(key, known, "option")
        elif self.enforcement is None and self.documented_enforced():
            known = True
            ENFORCEMENT.set(key, known, "documented")
        else:
            known = ENFORCEMENT.get(key)
        if known is False:
            self.ignore_structured()
        return known

    def documented_enforced(self) -> bool:
        """OpenAI's own chat API enforces a strict ``response_format`` json_schema."""
        return (
            self.endpoint == "chat"
            and self.structured == "response_format"
            and self.server_url.rstrip("/") == OPENAI_URL
        )

    async def ensure_enforcement(self, schema: OutputSchema | None) -> None:
        """Before a structured call: establish whether the server enforces the field (one
        probe per endpoint, :mod:`llmdebate.models.enforcement`)."""
        if schema is None or self.known_enforcement() is not None:
            return
        await ENFORCEMENT.establish(self.enforcement_key, self._probe)
        self.known_enforcement()

    async def _probe(self) -> Verdict:
        schema = probe_schema(self.enforcement_key)
        fields = server_fields(self.structured, schema, {})
        config = GenerateConfig(max_tokens=PROBE_MAX_TOKENS, json_schema=schema)
        try:
            text = await self.probe_text(PROBE_PROMPT, config, fields)
        except (RequestRejectedError, TransientError) as exc:
            if not self.refuses(exc, fields):
                raise
            return Verdict(False, "refused", 1)
        return Verdict(probe_enforced(text, schema), "probe", 1)

    async def probe_text(
        self, prompt: str, config: GenerateConfig, fields: dict[str, Any] | None
    ) -> str:
        """The reply to one probe request (each endpoint sends it its own way: the chat and the
        completions backends override this)."""
        raise NotImplementedError(f"{type(self).__name__}.probe_text: how this endpoint is probed")

    def ignore_structured(self) -> None:
        """The server was shown to ignore the field: send it no more, saying so once."""
        if self.structured not in self.profile.structured:
            return
        self.profile = self.profile.without_structured(self.structured)
        if not ENFORCEMENT.first_word(self.enforcement_key):
            return  # another backend on this endpoint said it
        log.warning(
            "%s ignores %s on %s: replies are parsed, not constrained (%s; set structured "
            "to a field the server applies, e.g. grammar for llama.cpp)",
            self.server_url,
            self.structured,
            urlsplit(self.server_url).path.rstrip("/") + self.path,
            self.name,
        )

    def refuses(self, exc: Exception, fields: dict[str, Any] | None) -> bool:
        """``exc`` is the server refusing the structured field (then the mode is dropped): a
        400 naming it, or a 5xx naming it (llama-cpp-python's chat endpoint answers HTTP 500
        to ``response_format: json_schema``), which would fail the same way on every retry."""
        if not fields:
            return False
        status = exc.status if isinstance(exc, TransientError) else None
        crashed = status is not None and status >= 500
        if not (crashed or isinstance(exc, RequestRejectedError)):
            return False
        low = str(exc).lower()
        if not any(word in low for word in _STRUCTURED_WORDS):
            return False
        self.drop_structured(f"fails (HTTP {status}) on" if crashed else "rejects")
        return True

    def drop_structured(self, how: str) -> None:
        """Send no structured field from now on, saying so once; the endpoint's verdict is
        that it does not enforce the field, whatever the ``enforcement`` option said."""
        ENFORCEMENT.overrule(self.enforcement_key, "ignored" if how == "ignores" else "refused")
        if self.structured not in self.profile.structured:
            return
        self.profile = self.profile.without_structured(self.structured)
        if not ENFORCEMENT.first_word(self.enforcement_key):
            return  # another backend on this endpoint said it
        log.warning(
            "%s: the server at %s %s structured: %s; replies are prompted and parsed from "
            "now on (set structured to one the server applies, e.g. grammar for llama.cpp)",
            self.name,
            self.server_url,
            how,
            self.structured,
        )

    def check_constrained(
        self, out: ModelOutput, schema: OutputSchema | None, fields: dict[str, Any] | None
    ) -> None:
        """Set ``out.constrained``: the field was sent, the server is known to enforce it,
        and the reply matches the schema. A reply that no JSON constraint could have written
        means the server ignores the field."""
        if schema is None or not fields:
            out.constrained = False
            return
        enforced = self.known_enforcement() is True
        out.constrained = enforced and reply_matches(out.text, schema.schema)
        if not out.constrained and looks_unconstrained(out.text):
            self.drop_structured("ignores")

    # -- replies
    def reply_json(self, reply: Reply | BaseException) -> Any:
        """The JSON body of a reply; the mapped exception for a failure or a status >= 400."""
        if isinstance(reply, BaseException):
            raise failure_error(
                reply, self.name, self._secret, key_variable=self.key_variable
            ) from reply
        if reply.status >= 400:
            raise reply_error(
                reply.status,
                reply.headers,
                reply.body,
                self.name,
                self._secret,
                key_variable=self.key_variable,
                server=self.server_url,
            )
        try:
            return loads(reply.body)
        except ValueError as exc:
            raise TransientError(f"malformed response: the reply is not JSON: {exc}") from exc

    def no_logprobs(self) -> InvalidOutputError:
        return InvalidOutputError(f"{self.name}: the server returned no logprobs")

    async def aclose(self) -> None:
        await self.transport.aclose()


def share(total: int, n: int, i: int) -> int:
    """Item ``i`` of ``total`` split into ``n`` near-equal integer parts."""
    return total // n + (1 if i < total % n else 0)


def usage_of(resp: Any) -> tuple[int, int]:
    """(prompt tokens, completion tokens) of a reply's ``usage``."""
    usage = resp.get("usage")
    if not usage:
        return 0, 0
    return int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
