"""On-disk response cache: sqlite in WAL mode, reads at once, writes in batches.

The key is a SHA-256 of (model identity, messages, generation parameters, sample index); the
identity is the backend's :meth:`~llmdebate.models.interface.Backend.identity_for` the call, which
names every backend setting that changes the reply (endpoint, chat template, how a schema is
asked for, by the mode in use: one dropped by the backend during the call files its reply under
the mode the reply was made in). A hit keeps the ``constrained`` of the reply it stores;
the value is the :class:`ModelOutput` as JSON. API keys never enter either. Safe for many
coroutines (one connection behind a lock) and for several processes (WAL + busy timeout).

Writes are kept in memory (where :meth:`ResponseCache.get` sees them at once; the models of a
process share one instance per file, :meth:`ResponseCache.in_dir`) and committed
in one transaction per ``FLUSH_EVERY`` entries or ``FLUSH_INTERVAL_S`` seconds, and on
:meth:`~ResponseCache.flush` / :meth:`~ResponseCache.close`: one transaction per call cost
more than the rest of a call's bookkeeping. A process killed meanwhile loses only those
entries (the calls are made again); other processes see an entry once it is committed.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
import weakref
from pathlib import Path
from typing import Any

from llmdebate.models.interface import ChatMessage, GenerateConfig, ModelOutput

CACHE_ENV = "LLMDEBATE_CACHE_DIR"
FLUSH_EVERY = 256  # entries
FLUSH_INTERVAL_S = 0.5


def default_cache_dir() -> Path:
    """``$LLMDEBATE_CACHE_DIR`` if set, else ``~/.cache/llmdebate``."""
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "llmdebate"


def cache_key(
    identity: str, messages: list[ChatMessage], config: GenerateConfig, sample_index: int
) -> str:
    params = dict(vars(config))  # flat fields but the schema: no deep copy needed
    if params.get("logprob_tokens") is None:
        params.pop("logprob_tokens", None)  # keys made before the field existed stay valid
    schema = params.pop("json_schema", None)
    if schema is not None:
        params["json_schema"] = vars(schema)
    payload: dict[str, Any] = {
        "model": identity,
        # a text template's prompt is sent as it is, a message with the same text is not
        "messages": [
            {"role": m["role"], "content": m["content"]}
            | ({"template": m["template"], "stop": m.get("stop")} if m.get("template") else {})
            for m in messages
        ],
        "params": params,
        "sample_index": sample_index,
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


class ResponseCache:
    """A sqlite table ``responses(key TEXT PRIMARY KEY, model TEXT, value TEXT)``."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._pending: dict[str, tuple[str, str]] = {}  # key -> (model, value), not committed
        self._flushed_at = time.monotonic()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(
            str(self.path), timeout=30.0, check_same_thread=False, isolation_level=None
        )
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS responses "
                "(key TEXT PRIMARY KEY, model TEXT NOT NULL, value TEXT NOT NULL)"
            )

    @classmethod
    def in_dir(cls, cache_dir: Path | None = None) -> ResponseCache:
        """The cache of ``cache_dir``: one instance per file in a process, shared by every
        model using it, so each sees the others' writes before they are committed."""
        path = (cache_dir or default_cache_dir()) / "responses.sqlite"
        key = str(path.expanduser().resolve())
        with _SHARED_LOCK:
            cache = _SHARED.get(key)
            if cache is None:
                cache = _SHARED[key] = cls(path)
            return cache

    def get(self, key: str) -> ModelOutput | None:
        with self._lock:
            pending = self._pending.get(key)
            if pending is not None:
                raw = pending[1]
            else:
                row = self._conn.execute(
                    "SELECT value FROM responses WHERE key = ?", (key,)
                ).fetchone()
                if row is None:
                    return None
                raw = row[0]
        try:
            return ModelOutput.from_dict(json.loads(raw))
        except (ValueError, TypeError):
            return None  # a corrupt entry is a miss; the next put overwrites it

    def put(self, key: str, output: ModelOutput) -> None:
        value = json.dumps(_as_dict(output), ensure_ascii=False)
        with self._lock:
            self._pending[key] = (output.model, value)
            due = (
                len(self._pending) >= FLUSH_EVERY
                or time.monotonic() - self._flushed_at >= FLUSH_INTERVAL_S
            )
            if due:
                self._flush_locked()

    def flush(self) -> None:
        """Commit the entries written so far."""
        with self._lock:
            self._flush_locked()

    def _flush_locked(self) -> None:
        self._flushed_at = time.monotonic()
        if not self._pending:
            return
        rows = [(k, model, value) for k, (model, value) in self._pending.items()]
        self._pending.clear()
        self._conn.execute("BEGIN")
        try:
            self._conn.executemany(
                "INSERT OR REPLACE INTO responses (key, model, value) VALUES (?, ?, ?)", rows
            )
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def __len__(self) -> int:
        with self._lock:
            self._flush_locked()
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def clear(self) -> None:
        with self._lock:
            self._pending.clear()
            self._conn.execute("DELETE FROM responses")

    def close(self) -> None:
        with self._lock:
            self._flush_locked()
            self._conn.close()

    def __del__(self) -> None:
        # entries not yet committed are written when the cache is dropped without close()
        try:
            if self._pending:
                self.flush()
        except Exception:  # the connection may be closed or gone already
            pass


_SHARED: weakref.WeakValueDictionary[str, ResponseCache] = weakref.WeakValueDictionary()
_SHARED_LOCK = threading.Lock()


def _as_dict(output: ModelOutput) -> dict[str, Any]:
    """``output.to_dict()`` with ``cached`` False, without dataclasses' recursive deep copy."""
    return {
        "text": output.text,
        "model": output.model,
        "tokens_in": output.tokens_in,
        "tokens_out": output.tokens_out,
        "logprobs": None
        if output.logprobs is None
        else [
            {"token": t.token, "logprob": t.logprob, "top": dict(t.top)} for t in output.logprobs
        ],
        "cached": False,
        "latency_s": output.latency_s,
        "cost": output.cost,
        "constrained": output.constrained,
        "endpoint": output.endpoint,
    }
