"""Whether a server enforces the structured-output field it is sent: established once per
endpoint, by what the server is known to do or by a probe, and kept for the run.

A server may accept a structured-output field and drop it (llama-cpp-python answers 200 to
``json_schema`` and ``response_format`` on ``/v1/completions`` and writes freely; vLLM 0.32
drops ``guided_json``). A free-running reply that happens to match the schema proves nothing,
so a call is recorded ``constrained`` only where enforcement is *established*:

* the server is known to enforce it: OpenAI's own API with ``response_format`` json_schema
  and ``strict: true`` (documented as enforced), or the role option ``enforcement: enforced``;
* the option says the server ignores it (``enforcement: ignored``);
* else a **probe**: one request whose schema admits a single reply, a string property whose
  ``enum`` holds one token derived from the endpoint (``{"probe": "ok-<10 hex digits>"}``),
  which a free-running model would essentially never write. The reply (or, cut short by
  ``max_tokens``, a prefix of it) shows the field is enforced; anything else, that it is
  ignored.

An *endpoint* is base URL, endpoint path, model and structured mode (:func:`endpoint_key`).
The verdicts live in one :class:`Enforcement` registry per process (:data:`ENFORCEMENT`): one
probe per endpoint however many roles or concurrent calls share it. A run starts it afresh
(:meth:`Enforcement.begin`, seeded with the verdicts its run directory recorded, so a resumed
run sends no probe again) and records it in its summary. Probe requests go through the
backend's transport, so they count in ``http_requests``; they are recorded here, never as
calls of a decision.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any, Literal, get_args

from llmdebate.models.schema_check import reply_matches
from llmdebate.models.structured import OutputSchema

EnforcementOption = Literal["probe", "enforced", "ignored"]
ENFORCEMENT_OPTIONS: tuple[str, ...] = get_args(EnforcementOption)
"""The role option ``enforcement``: ``probe`` (find out with one request), or what the server
is known to do (``enforced``, ``ignored``). Unset: the backend's default (no probe where the
server is documented to enforce the field, else ``probe``)."""

PROBE_PROMPT = 'Reply with a JSON object, e.g. {"probe": "yes"}.'
PROBE_MAX_TOKENS = 64
"""Room for the one admitted reply (about 15 tokens) and the whitespace some grammars allow."""


@dataclass
class Verdict:
    """What is known of one endpoint: ``enforced``, and ``how`` it was established
    (``documented``, ``option``, ``probe``, ``refused``: the server refused the field;
    ``recorded``: read from the run directory), with the ``probes`` sent for it."""

    enforced: bool
    how: str
    probes: int = 0


def endpoint_key(server: str, path: str, model: str, mode: str) -> str:
    """``<base URL><path> <model> <mode>``: what one verdict holds for."""
    return f"{server.rstrip('/')}{path} {model} {mode}"


def probe_schema(key: str) -> OutputSchema:
    """The probe's schema for ``key``: one object, one property, one admitted string."""
    token = "ok-" + hashlib.sha256(key.encode()).hexdigest()[:10]
    return OutputSchema.of(
        "probe",
        {
            "type": "object",
            "properties": {"probe": {"type": "string", "enum": [token]}},
            "required": ["probe"],
            "additionalProperties": False,
        },
    )


def probe_enforced(text: str, schema: OutputSchema) -> bool:
    """The probe's reply shows enforcement: it is the one admitted reply, or a prefix of it
    cut short by ``max_tokens`` (whitespace aside), at least its opening ``{"``."""
    if reply_matches(text, schema.schema):
        return True
    written = "".join(text.split())
    token = schema.schema["properties"]["probe"]["enum"][0]
    expected = json.dumps({"probe": token}, separators=(",", ":"))
    return len(written) >= 2 and expected.startswith(written)


class Enforcement:
    """The verdicts of one run, by :func:`endpoint_key`; a probe in flight is shared."""

    def __init__(self) -> None:
        self.verdicts: dict[str, Verdict] = {}
        self._pending: dict[str, asyncio.Task[bool]] = {}
        self._watchers: list[Callable[[dict[str, dict[str, Any]]], None]] = []
        self._said: set[str] = set()

    def first_word(self, key: str) -> bool:
        """True the first time it is asked for ``key`` in a run: a backend that drops the
        field logs its one line only then (roles sharing an endpoint say it once)."""
        if key in self._said:
            return False
        self._said.add(key)
        return True

    def begin(
        self,
        recorded: dict[str, Any] | None = None,
        on_change: Callable[[dict[str, dict[str, Any]]], None] | None = None,
    ) -> None:
        """Start a run: forget the verdicts, take the ``recorded`` ones (a resumed run's),
        and call ``on_change`` with :meth:`snapshot` whenever a verdict is added."""
        self.verdicts = {}
        self._pending = {}
        self._said = set()
        for key, v in (recorded or {}).items():
            if isinstance(v, dict) and isinstance(v.get("enforced"), bool):
                self.verdicts[key] = Verdict(v["enforced"], "recorded", int(v.get("probes", 0)))
        self._watchers = [on_change] if on_change is not None else []

    def overrule(self, key: str, how: str) -> None:
        """The server showed that it does not apply the field of ``key`` (it refused it, or
        wrote what no constraint allows): the verdict is False, whatever was said before
        (an ``enforcement: enforced`` option)."""
        old = self.verdicts.get(key)
        if old is not None and not old.enforced:
            return
        self.verdicts[key] = Verdict(False, how, old.probes if old is not None else 0)
        snap = self.snapshot()
        for watch in self._watchers:
            watch(snap)

    def get(self, key: str) -> bool | None:
        """Whether ``key`` enforces its field (None: not established yet)."""
        verdict = self.verdicts.get(key)
        return None if verdict is None else verdict.enforced

    def set(self, key: str, enforced: bool, how: str, probes: int = 0) -> None:
        """Record a verdict (the first one for ``key`` stands)."""
        if key in self.verdicts:
            return
        self.verdicts[key] = Verdict(enforced, how, probes)
        snap = self.snapshot()
        for watch in self._watchers:
            watch(snap)

    async def establish(self, key: str, probe: Callable[[], Awaitable[Verdict]]) -> bool:
        """The verdict of ``key``, running ``probe`` once however many calls ask at once (a
        probe that fails is not a verdict: its error goes to every caller waiting on it)."""
        known = self.get(key)
        if known is not None:
            return known
        task = self._pending.get(key)
        loop = asyncio.get_running_loop()
        if task is None or task.get_loop() is not loop or task.done():
            task = loop.create_task(self._run(key, probe))
            self._pending[key] = task
        return await asyncio.shield(task)

    async def _run(self, key: str, probe: Callable[[], Awaitable[Verdict]]) -> bool:
        try:
            verdict = await probe()
        finally:
            self._pending.pop(key, None)
        self.set(key, verdict.enforced, verdict.how, verdict.probes)
        return self.verdicts[key].enforced

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """The verdicts as JSON-ready dicts, by key."""
        return {k: asdict(v) for k, v in sorted(self.verdicts.items())}


ENFORCEMENT = Enforcement()
"""The process's registry (the runner starts it afresh for each run)."""
