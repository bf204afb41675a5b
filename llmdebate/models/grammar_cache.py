"""xgrammar's compiled JSON-schema grammars for the local backend, compiled once and saved."""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from importlib.metadata import version as _version
from pathlib import Path
from typing import Any

from llmdebate.models.heap import trim_heap

log = logging.getLogger(__name__)


class GrammarCache:
    """xgrammar's tokenizer info and compiled JSON-schema grammars, built once per backend.

    A compiled grammar is also saved under ``folder`` (keyed by the tokenizer, the xgrammar
    version and the schema): compiling the decomposition schema against Gemma's vocabulary
    takes 10-30 s on 2 cores, loading it back about 3 s.
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
                vocab = int(model.get_output_embeddings().weight.shape[0])
                self._info = xgr.TokenizerInfo.from_huggingface(
                    tok, vocab_size=vocab, stop_token_ids=sorted(eos)
                )
                self._compiler = xgr.GrammarCompiler(self._info, max_threads=1)
            compiled = self._compiled.get(schema_json)
            if compiled is None:
                start = time.perf_counter()
                compiled = self._load_or_compile(xgr, tok, schema_json)
                self._compiled[schema_json] = compiled
                self.compile_s[schema_json] = time.perf_counter() - start
                trim_heap()  # the tokenizer info's and the grammar's transient copies: 0.2 GB
            return xgr.GrammarMatcher(compiled)

    def _load_or_compile(self, xgr: Any, tok: Any, schema_json: str) -> Any:
        parts = [_version("xgrammar"), str(tok.name_or_path), str(len(tok)), schema_json]
        key = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]
        path = self.folder / f"{key}.json" if self.folder is not None else None
        if path is not None and path.is_file():
            try:
                return xgr.CompiledGrammar.deserialize_json(path.read_text(), self._info)
            except Exception as exc:  # a stale or truncated file: compile again
                log.info("recompiling grammar %s: %s", path.name, exc)
        compiled = self._compiler.compile_json_schema(
            schema_json, any_whitespace=False, strict_mode=True
        )
        if path is not None:
            tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp.write_text(compiled.serialize_json())
                os.replace(tmp, path)
            except OSError:
                tmp.unlink(missing_ok=True)  # a read-only cache: compile next time too
        return compiled

    def mask(self, matcher: Any, logits: Any) -> Any:
        """``logits`` (one row) with the tokens the grammar forbids set to -inf."""
        import xgrammar as xgr

        bitmask = xgr.allocate_token_bitmask(1, self._info.vocab_size)
        matcher.fill_next_token_bitmask(bitmask)
        row = logits.clone()[None, :]
        xgr.apply_token_bitmask_inplace(row, bitmask)
        return row[0]
