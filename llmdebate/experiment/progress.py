"""What a run shows while its debates run: debates finished and, where they run in this
process, the model calls and tokens done so far with their rate, which move with every call,
not only when a debate ends.

On a terminal it is one bar (``debates: 3/12 … calls=41, tokens=5.2k, calls/s=0.71``), redrawn
every second; where standard error is not a terminal (a log file, a pipe, a CI job) it is a
plain line at most every :data:`PLAIN_EVERY_S` seconds and one at the end
(``debates 3/12 (0 failed), 41 model calls, 5,210 tokens, 0.71 calls/s, 58 s``); with
``progress`` off (``--quiet``) nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING, Any, TextIO

from tqdm import tqdm

if TYPE_CHECKING:
    from llmdebate.experiment.debate import Finished
    from llmdebate.models import Model

PLAIN_EVERY_S = 30.0
"""The least time between two plain progress lines."""
TICK_S = 1.0
"""How often the calls and tokens are read while debates run."""


class Progress:
    """Debates finished, failed, and the model calls and tokens of ``models`` so far."""

    def __init__(
        self,
        total: int,
        initial: int,
        enabled: bool,
        models: Iterable[Model] = (),
        stream: TextIO | None = None,
    ) -> None:
        self.finished = 0
        self.failed = 0
        self.calls = 0
        """Model calls of the finished debates (what each debate reported)."""
        self.initial = initial
        self.stream = stream if stream is not None else sys.stderr
        self.tty = enabled and _isatty(self.stream)
        self.plain = enabled and not self.tty
        self.models = list({id(m): m for m in models}.values())
        self._base = self._usage()
        self._began = time.monotonic()
        self._last_line = self._began
        self._said: tuple[int, int] | None = None
        self.bar = tqdm(
            total=total,
            initial=initial,
            desc="debates",
            unit="debate",
            file=self.stream,
            disable=not self.tty,
            dynamic_ncols=True,
        )

    # -- what is counted ------------------------------------------------------------------
    def _usage(self) -> tuple[int, int]:
        calls = sum(m.usage.calls for m in self.models)
        tokens = sum(m.usage.tokens_in + m.usage.tokens_out for m in self.models)
        return calls, tokens

    def live(self) -> tuple[int, int, float]:
        """Model calls and tokens of this invocation so far, and calls per second."""
        calls, tokens = self._usage()
        calls, tokens = calls - self._base[0], tokens - self._base[1]
        elapsed = max(time.monotonic() - self._began, 1e-9)
        return calls, tokens, calls / elapsed

    def line(self) -> str:
        """The plain progress line."""
        total = self.bar.total
        done = self.initial + self.finished
        parts = [f"debates {done}/{total}" + (f" ({self.failed} failed)" if self.failed else "")]
        calls, tokens, rate = self.live()
        if calls or not self.models:
            calls = calls or self.calls
            parts.append(f"{calls:,} model calls")
            if tokens:
                parts.append(f"{tokens:,} tokens")
            parts.append(f"{rate:.2f} calls/s")
        parts.append(f"{time.monotonic() - self._began:.0f} s")
        return ", ".join(parts)

    # -- showing it -----------------------------------------------------------------------
    def tick(self, force: bool = False) -> None:
        """Show the calls and tokens so far: the bar's figures, or a plain line when
        :data:`PLAIN_EVERY_S` has passed since the last (``force``: now, if anything moved)."""
        if self.tty:
            calls, tokens, rate = self.live()
            figures: dict[str, Any] = {"failed": self.failed, "calls": calls or self.calls}
            if tokens:
                figures["tokens"] = _short(tokens)
            figures["calls/s"] = f"{rate:.2f}"
            self.bar.set_postfix(figures, refresh=True)
        elif self.plain:
            now = time.monotonic()
            state = (self.finished, self.live()[0])
            if state == self._said or not (force or now - self._last_line >= PLAIN_EVERY_S):
                return
            self._said, self._last_line = state, now
            print(self.line(), file=self.stream, flush=True)

    def __call__(self, f: Finished) -> None:
        self.finished += 1
        self.failed += f.status == "failed"
        self.calls += f.calls
        self.bar.update(1)
        self.tick()

    @contextlib.asynccontextmanager
    async def ticking(self) -> AsyncIterator[None]:
        """While the block runs, :meth:`tick` every :data:`TICK_S` seconds."""
        task = asyncio.create_task(self._ticks()) if self.tty or self.plain else None
        try:
            yield
        finally:
            if task is not None:
                task.cancel()

    async def _ticks(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            self.tick()

    def close(self) -> None:
        self.tick(force=True)
        self.bar.close()


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream
        return False


def _short(n: int) -> str:
    """``950``, ``5.2k``, ``1.3M``."""
    if n < 1000:
        return str(n)
    return f"{n / 1000:.1f}k" if n < 1_000_000 else f"{n / 1_000_000:.1f}M"


class Steps:
    """Steps of one long loop done of its total, with their rate: training steps, instances
    searched. The same three forms as :class:`Progress`: a bar on a terminal
    (``expert: 3/10 [00:06<00:14, 0.50step/s, loss 0.4120]``), plain lines elsewhere
    (``expert: step 3/10, 0.50 steps/s, 6 s, loss 0.4120``) at most every ``every_s``
    seconds and one at the end, nothing when not ``enabled``. ``initial`` steps were done
    before; ``elapsed`` seconds were spent since then (the rate counts them)."""

    def __init__(
        self,
        label: str,
        total: int,
        enabled: bool,
        *,
        unit: str = "step",
        initial: int = 0,
        elapsed: float = 0.0,
        every_s: float | None = None,
        stream: TextIO | None = None,
    ) -> None:
        self.label, self.total, self.unit = label, total, unit
        self.initial = self.done = initial
        self.note = ""
        self.stream = stream if stream is not None else sys.stderr
        self.tty = enabled and _isatty(self.stream)
        self.plain = enabled and not self.tty
        self.every_s = PLAIN_EVERY_S if every_s is None else every_s
        self._began = time.monotonic() - elapsed
        self._last_line: float | None = None
        self._said = initial
        self.bar = tqdm(total=total, initial=initial, desc=label, unit=unit, file=self.stream,
                        disable=not self.tty, dynamic_ncols=True)

    def line(self) -> str:
        """The plain progress line."""
        elapsed = time.monotonic() - self._began
        rate = (self.done - self.initial) / max(elapsed, 1e-9)
        return (f"{self.label}: {self.unit} {self.done}/{self.total}, {rate:.2f} {self.unit}s/s, "
                f"{elapsed:.0f} s" + (f", {self.note}" if self.note else ""))

    def update(self, done: int, *, total: int | None = None, note: str = "") -> None:
        """``done`` steps of ``total`` (the total so far unless given), with a note (a loss)."""
        if total is not None and total != self.total:
            self.total = self.bar.total = total
        self.bar.update(done - self.done)
        self.done, self.note = done, note
        if self.tty:
            if note:
                self.bar.set_postfix_str(note, refresh=True)
        elif self.plain:
            now = time.monotonic()
            spaced = self._last_line is None or now - self._last_line >= self.every_s
            if spaced or done >= self.total:
                self._say(now)

    def _say(self, now: float) -> None:
        if self.done == self._said:
            return
        self._said, self._last_line = self.done, now
        print(self.line(), file=self.stream, flush=True)

    def close(self) -> None:
        if self.plain:
            self._say(time.monotonic())
        self.bar.close()
