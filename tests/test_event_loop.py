"""The event loop a run uses (``--loop``): uvloop and asyncio give the same transcripts, the
summary says which one ran, and a bad choice is one clear line with exit 2."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from llmdebate.cli import main as cli_main
from llmdebate.errors import MissingExtraError, UserError
from llmdebate.experiment.executors import ExecutorOptions
from llmdebate.experiment.loading import validate
from llmdebate.experiment.loop import loop_kind, run_coroutine
from llmdebate.experiment.runner import run

try:
    from tests.fixtures.fake_server import FakeServer
    from tests.test_process_executor import config, server, transcripts
except ImportError:  # pytest run from inside tests/
    from fixtures.fake_server import FakeServer  # type: ignore[no-redef]
    from test_process_executor import (  # type: ignore[no-redef]  # noqa: F401
        config,
        server,
        transcripts,
    )


async def _loop_module() -> str:
    import asyncio

    return type(asyncio.get_running_loop()).__module__


def test_the_loops_are_what_they_say() -> None:
    assert run_coroutine(_loop_module(), "asyncio").startswith("asyncio")
    assert run_coroutine(_loop_module(), "uvloop").startswith("uvloop")
    assert loop_kind("auto") == "uvloop"  # installed with the fast extra


def test_uvloop_and_asyncio_runs_give_the_same_transcripts(
    server: FakeServer, tmp_path: Path
) -> None:
    cfg = config(server, tmp_path)
    got = {}
    for loop in ("asyncio", "uvloop"):
        res = run(
            validate(cfg), tmp_path / loop, progress=False, executor=ExecutorOptions(loop=loop)
        )
        assert res.summary["last_invocation"]["event_loop"] == loop
        got[loop] = transcripts(tmp_path / loop)
    assert got["asyncio"] == got["uvloop"] and len(got["asyncio"]) == 16


def test_a_bad_loop_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(UserError, match="--loop must be one of auto, asyncio, uvloop"):
        ExecutorOptions(loop="trio")
    code = cli_main(["run", "--config", "configs/local-divisors.yaml", "--loop", "trio"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].endswith("--loop must be one of auto, asyncio, uvloop (got 'trio')")


def test_uvloop_asked_for_but_missing_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import uvloop now fails
    with pytest.raises(MissingExtraError, match="fast"):
        loop_kind("uvloop")
    coro = _loop_module()
    with pytest.raises(MissingExtraError):
        run_coroutine(coro, "uvloop")
    assert coro.cr_frame is None  # closed, not left unawaited
