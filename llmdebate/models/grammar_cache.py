"""xgrammar's compiled JSON-schema grammars for the local backend, compiled once and saved."""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable
from importlib.metadata import version as _version
from pathlib import Path
from typing import Any

from llmdebate.models.heap import trim_heap

log = logging.getLogger(__name__)


class GrammarCache:
    """xgrammar's tokenizer info and compiled JSON-schema grammars, built once per backend.

    A compiled grammar is also saved under ``folder`` (keyed by the tokenizer, the xgrammar
    version and the schema): compiling the decomposition schema against Gemma's vocabulary
    takes 10-30 s on 2 cores, loading it back about 3 s. So is the tokenizer info: built from
    Gemma's tokenizer it takes about 2 s of CPU, most of it in calls that hold the GIL for a
    second or more (no other thread of the process runs then, not even the main thread's
    signal handler: Ctrl-C waits for them); read back, 0.3 s with no hold over 0.05 s.
    """

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder
        self._lock = threading.Lock()
        self._info: Any = None
        self._compiler: Any = None
        self._compiled: dict[str, Any] = {}
        self.available: bool | None = None
        self.compile_s: dict[str, float] = {}

    def matcher(self, tok: Any, model: Any, eos: set[int], schema_json: str) -> Any:
        """A fresh grammar matcher for ``schema_json``, or None without xgrammar."""
        with self._lock:
            if self.available is None:
                try:
                    import xgrammar  # noqa: F401
                except ImportError:
                    log.warning("xgrammar is not installed: structured replies are unconstrained")
                    self.available = False
                else:
                    self.available = True
            if not self.available:
                return None
            import xgrammar as xgr

            if self._info is None:
                self._info = self._tokenizer_info(xgr, tok, model, eos)
                self._compiler = xgr.GrammarCompiler(self._info, max_threads=1)
            compiled = self._compiled.get(schema_json)
            if compiled is None:
                start = time.perf_counter()
                compiled = self._load_or_compile(xgr, tok, schema_json)
                self._compiled[schema_json] = compiled
                self.compile_s[schema_json] = time.perf_counter() - start
                trim_heap()  # the tokenizer info's and the grammar's transient copies: 0.2 GB
            return xgr.GrammarMatcher(compiled)

    def _tokenizer_info(self, xgr: Any, tok: Any, model: Any, eos: set[int]) -> Any:
        """xgrammar's tokenizer info of ``tok`` (its rows as many as the model's output
        projection, ``eos`` its stop tokens): read back from ``folder``, else built and saved."""
        vocab = int(model.get_output_embeddings().weight.shape[0])
        stops = sorted(eos)
        parts = ["tokenizer-info", str(tok.name_or_path), str(len(tok)), str(vocab), str(stops)]
        path = self._path(parts)
        if path is not None and path.is_file():
            try:
                return xgr.TokenizerInfo.deserialize_json(path.read_text())
            except Exception as exc:  # a stale or truncated file: build it again
                log.info("rebuilding tokenizer info %s: %s", path.name, exc)
        info = xgr.TokenizerInfo.from_huggingface(tok, vocab_size=vocab, stop_token_ids=stops)
        _save(path, info.serialize_json)
        return info

    def _path(self, parts: list[str]) -> Path | None:
        """The file under ``folder`` that keeps what ``parts`` (and xgrammar's version) name."""
        if self.folder is None:
            return None
        key = hashlib.sha256("\n".join([_version("xgrammar"), *parts]).encode()).hexdigest()
        return self.folder / f"{key[:24]}.json"

    def _load_or_compile(self, xgr: Any, tok: Any, schema_json: str) -> Any:
        path = self._path([str(tok.name_or_path), str(len(tok)), schema_json])
        if path is not None and path.is_file():
            try:
                return xgr.CompiledGrammar.deserialize_json(path.read_text(), self._info)
            except Exception as exc:  # a stale or truncated file: compile again
                log.info("recompiling grammar %s: %s", path.name, exc)
        compiled = self._compiler.compile_json_schema(
            schema_json, any_whitespace=False, strict_mode=True
        )
        _save(path, compiled.serialize_json)
        return compiled

    def mask(self, matcher: Any, logits: Any) -> Any:
        """``logits`` (one row) with the tokens the grammar forbids set to -inf."""
        import xgrammar as xgr

        bitmask = xgr.allocate_token_bitmask(1, self._info.vocab_size)
        matcher.fill_next_token_bitmask(bitmask)
        row = logits.clone()[None, :]
        xgr.apply_token_bitmask_inplace(row, bitmask)
        return row[0]


def _save(path: Path | None, text: Callable[[], str]) -> None:
    """Write ``text()`` to ``path`` atomically (None, or a read-only cache: nothing)."""
    if path is None:
        return
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text())
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)  # built again next time
