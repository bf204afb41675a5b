"""On-disk response cache: sqlite in WAL mode, one short transaction per read or write.

The key is a SHA-256 of (model identity, messages, generation parameters, sample index);
the value is the :class:`ModelOutput` as JSON. API keys never enter either. Safe for many
coroutines (one connection behind a lock) and for several processes (WAL + busy timeout).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Any

from llmdebate.models.base import ChatMessage, GenerateConfig, ModelOutput

CACHE_ENV = "LLMDEBATE_CACHE_DIR"


def default_cache_dir() -> Path:
    """``$LLMDEBATE_CACHE_DIR`` if set, else ``~/.cache/llmdebate``."""
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "llmdebate"


def cache_key(
    identity: str, messages: list[ChatMessage], config: GenerateConfig, sample_index: int
) -> str:
    params = asdict(config)
    if params.get("logprob_tokens") is None:
        params.pop("logprob_tokens", None)  # keys made before the field existed stay valid
    if params.get("json_schema") is None:
        params.pop("json_schema", None)
    payload: dict[str, Any] = {
        "model": identity,
        "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
        "params": params,
        "sample_index": sample_index,
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


class ResponseCache:
    """A sqlite table ``responses(key TEXT PRIMARY KEY, model TEXT, value TEXT)``."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
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
        return cls((cache_dir or default_cache_dir()) / "responses.sqlite")

    def get(self, key: str) -> ModelOutput | None:
        with self._lock:
            row = self._conn.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            return ModelOutput.from_dict(json.loads(row[0]))
        except (ValueError, TypeError):
            return None  # a corrupt entry is a miss; the next put overwrites it

    def put(self, key: str, output: ModelOutput) -> None:
        data = output.to_dict()
        data["cached"] = False
        value = json.dumps(data, ensure_ascii=False)
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO responses (key, model, value) VALUES (?, ?, ?)",
                (key, output.model, value),
            )

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def clear(self) -> None:
        with self._lock:
            self._conn.execute("DELETE FROM responses")

    def close(self) -> None:
        with self._lock:
            self._conn.close()
