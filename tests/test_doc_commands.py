"""Every command line in README.md, docs/*.md and environments/*/README.md runs as written,
with its documented status.

The test reads every fenced block of the docs. Blocks tagged ``bash``, ``sh``, ``shell`` or
``console`` hold commands (one per line, ``\\`` continues a line, ``#`` starts a comment, ``&&``
chains); in an untagged block, only lines starting with ``$ `` are commands (the rest is their
output). An HTML comment on the line before a block's opening fence says how the block is
checked; without one, every command runs as written and must exit 0:

    <!-- commands: run exit=2 -->                 run, expecting exit status 2
    <!-- commands: parse — REASON -->             don't run: check the verb, every flag, and for
                                                  run/compare the config with these flags
                                                  (a scripts/install.sh line: its extras exist;
                                                  a python benchmarks/X.py line: the script's
                                                  --help names every flag)
    <!-- commands: fake-server — REASON -->       run as written with OPENAI_BASE_URL and
                                                  ANTHROPIC_BASE_URL on tests/fixtures' fake
                                                  server and dummy keys (for API models)
    <!-- commands: skip — REASON -->              not run (another program, a GPU server, ...)
    <!-- commands: plugin — REASON -->            the page's files written (below), ``pip
                                                  install`` into a folder of the block's own,
                                                  every llmdebate command in a fresh interpreter
                                                  that finds what pip installed

A block whose opening fence follows ``<!-- file: PATH -->`` is a file: a ``plugin`` block of
the same page runs with every such file written at its PATH (a package the page describes).

An ``inspect`` command runs as Inspect's own command line, with an empty tiktoken cache that
must stay empty (nothing downloaded) and no failed sample in its output; a word with ``*``
expands to the files it matches, as a shell's would. ``exit=N`` may follow any mode that
runs. Every mode but ``run`` states its reason. The
commands of a block run in order in one fresh folder holding links to the repository's
configs/ and datasets/, so a block's later commands see what its earlier ones wrote.
"""

from __future__ import annotations

import glob
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import pytest

from llmdebate.agents.factory import SEAT_ROLES
from llmdebate.cli import cli, main
from llmdebate.protocols.registry import PROTOCOLS

try:
    from tests.fixtures import llm_fixtures
    from tests.fixtures.fake_server import FakeServer
except ImportError:  # pytest run from inside tests/
    sys.path.insert(0, str(Path(__file__).parent))
    from fixtures import llm_fixtures  # type: ignore[no-redef]
    from fixtures.fake_server import FakeServer  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")),
        *sorted((REPO / "environments").glob("*/README.md"))]
SHELL_TAGS = {"bash", "sh", "shell", "console", "zsh"}
FENCE = re.compile(r"^(`{3,}|~{3,})\s*([\w+-]*)")
MARKER = re.compile(r"^<!--\s*commands:\s*(.*?)\s*-->$")
MODE = re.compile(
    r"^(run|parse|fake-server|skip|plugin)(?:\s+exit=(\d+))?\s*(?:[—:-]+\s*(.*))?$"
)
FILE = re.compile(r"^<!--\s*file:\s*(\S+)\s*-->$")
LLMDEBATE = {"llmdebate", ".venv/bin/llmdebate"}


@dataclass(frozen=True)
class Block:
    where: str  # file:line of the opening fence
    mode: str
    status: int
    reason: str
    commands: tuple[tuple[str, ...], ...]


def _commands(lines: list[str], console_only: bool) -> Iterator[tuple[str, ...]]:
    joined: list[str] = []
    current = ""
    for raw in lines:
        line = raw.rstrip()
        if console_only and not current and not line.startswith("$ "):
            continue  # a console transcript's output
        if not current and line.startswith("$ "):
            line = line[2:]
        current = f"{current} {line.strip()}" if current else line.strip()
        if current.endswith("\\"):
            current = current[:-1].rstrip()
            continue
        joined.append(current)
        current = ""
    for text in joined:
        words = shlex.split(text, comments=True)
        part: list[str] = []
        for w in [*words, "&&"]:
            if w == "&&":
                if part:
                    yield tuple(part)
                part = []
            else:
                part.append(w)


def _block(where: str, marker: str | None, tag: str, body: list[str]) -> Block | None:
    console_only = tag not in SHELL_TAGS
    commands = tuple(_commands(body, console_only))
    if not commands:
        return None
    mode, status, reason = "run", 0, ""
    if marker is not None:
        found = MODE.match(marker)
        if not found:
            raise AssertionError(f"{where}: cannot read the marker {marker!r}")
        mode, status, reason = found.group(1), int(found.group(2) or 0), found.group(3) or ""
        if mode != "run" and not reason.strip():
            raise AssertionError(f"{where}: a {mode!r} marker states its reason")
    return Block(where, mode, status, reason, commands)


def doc_blocks(path: Path, root: Path = REPO) -> list[Block]:
    """The command blocks of one Markdown file (named relative to ``root``)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        found = FENCE.match(lines[i])
        if not found:
            i += 1
            continue
        fence, tag, start = found.group(1), found.group(2).lower(), i
        j = i + 1
        while j < len(lines) and not lines[j].startswith(fence):
            j += 1
        prev = next((lines[k].strip() for k in range(start - 1, -1, -1) if lines[k].strip()), "")
        marked = MARKER.match(prev)
        where = f"{path.relative_to(root)}:{start + 1}"
        block = _block(where, marked.group(1) if marked else None, tag, lines[start + 1 : j])
        if block is not None:
            out.append(block)
        i = j + 1
    return out


def doc_files(path: Path) -> dict[str, str]:
    """The files of one Markdown page: every block whose fence follows ``<!-- file: PATH -->``,
    by PATH."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out: dict[str, str] = {}
    for i, line in enumerate(lines):
        marked = FILE.match(line.strip())
        if not marked or i + 1 >= len(lines):
            continue
        found = FENCE.match(lines[i + 1])
        assert found, f"{path.name}:{i + 1}: a file marker stands right above its block"
        j = i + 2
        while j < len(lines) and not lines[j].startswith(found.group(1)):
            j += 1
        out[marked.group(1)] = "\n".join(lines[i + 2 : j]) + "\n"
    return out


def write_files(files: dict[str, str], folder: Path) -> None:
    for rel, text in files.items():
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


PROGRAM = "import sys; from llmdebate.cli import main; sys.exit(main(sys.argv[1:]))"


def installed(folder: Path) -> dict[str, str]:
    """The environment of a command that finds what ``pip install`` put in ``folder/site``."""
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(folder / "site"), str(REPO)]),
        "LLMDEBATE_CACHE_DIR": str(folder / "cache"),
    }


def command_line(args: tuple[str, ...], folder: Path) -> list[str]:
    """A documented command as it runs here: ``pip install`` into ``folder/site`` (offline:
    no build isolation, no dependencies), llmdebate in a fresh interpreter."""
    if args[:2] == ("pip", "install"):
        return [sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                "--no-build-isolation", "--target", str(folder / "site"), *args[2:]]
    assert args[0] in LLMDEBATE, f"cannot run {args[0]!r} in a plugin block"
    return [sys.executable, "-c", PROGRAM, *args[1:]]


def _run_plugin_block(block: Block, folder: Path) -> None:
    write_files(doc_files(REPO / block.where.rsplit(":", 1)[0]), folder)
    for name in ("configs", "datasets"):
        (folder / name).symlink_to(REPO / name)
    for args in block.commands:
        res = subprocess.run(
            command_line(args, folder), cwd=folder, env=installed(folder), capture_output=True,
            text=True, timeout=600,
        )
        assert res.returncode == block.status, (
            f"{block.where}: {shlex.join(args)} exited {res.returncode}: {res.stderr[-3000:]}"
        )


BLOCKS = [b for path in DOCS for b in doc_blocks(path)]
CHECKED = [b for b in BLOCKS if b.mode != "skip"]  # a skip block only states its reason


# -- parse mode: the verb, its flags and its config, without running
def _parse_llmdebate(args: tuple[str, ...]) -> None:
    from llmdebate.commands.config_flags import PREFIX, config_from

    verb, rest = args[0], list(args[1:])
    command = cli.get_command(click.Context(cli), verb)
    assert command is not None, f"unknown verb {verb!r}"
    flags = {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
    unknown = [w for w in rest if w.startswith("-") and w[1:2] not in "0123456789."
               and w.split("=")[0] not in flags]
    assert not unknown, f"{verb}: unknown flags {unknown}"
    if verb == "export":  # --role is required except for a whole-run format
        from llmdebate.export import FORMATS
        from llmdebate.export.format_registry import WHOLE_RUN

        fmt = rest[rest.index("--format") + 1] if "--format" in rest else "trl-prompt-completion"
        assert "--role" in rest or FORMATS.entry(fmt).can(WHOLE_RUN), (
            f"export --format {fmt}: --role is required")
    if verb in ("run", "compare"):
        ctx = command.make_context(verb, rest)
        fields = {k: v for k, v in ctx.params.items() if k.startswith(PREFIX)}
        extra = {"dataset.limit": ctx.params["limit"]} if ctx.params.get("limit") else {}
        config_from(ctx.params["config_path"], fields, extra)


def _parse_install(args: tuple[str, ...]) -> None:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib

    extras = set(tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"])
    asked = set((args[1] if len(args) > 1 else "local").split(","))
    assert asked <= extras, f"scripts/install.sh: no extras {sorted(asked - extras)}"


PYTHONS = {"python", "python3", ".venv/bin/python"}


def _parse_script(args: tuple[str, ...]) -> None:
    """A ``python benchmarks/X.py FLAGS`` line: the script exists and its own ``--help``
    names every flag (and ``nice -n N`` or ``PYTHONPATH=.`` before it is allowed)."""
    script = args[1] if len(args) > 1 else ""
    assert script.startswith("benchmarks/") and (REPO / script).is_file(), (
        f"no script {script!r}")
    res = subprocess.run(
        [sys.executable, script, "--help"], cwd=REPO, capture_output=True, text=True,
        timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert res.returncode == 0, f"{script} --help exited {res.returncode}: {res.stderr[-2000:]}"
    named = set(re.findall(r"--[\w-]+", res.stdout))
    unknown = [w.split("=")[0] for w in args[2:] if w.startswith("--")
               and w.split("=")[0] not in named]
    assert not unknown, f"{script}: unknown flags {unknown}"


def _unwrapped(args: tuple[str, ...]) -> tuple[str, ...]:
    """The command without ``nice -n N`` or leading ``NAME=value`` settings."""
    while args and (("=" in args[0] and not args[0].startswith("-")) or args[0] == "nice"):
        args = args[3:] if args[0] == "nice" and args[1:2] == ("-n",) else args[1:]
    return args


def parse_check(args: tuple[str, ...]) -> None:
    args = _unwrapped(args)
    if args and args[0] in PYTHONS:
        _parse_script(args)
    elif args[0] in LLMDEBATE:
        _parse_llmdebate(args[1:])
    elif args[0] == "scripts/install.sh":
        _parse_install(args)
    elif args[0] == ".venv/bin/pytest":
        assert (REPO / "tests").is_dir()
    else:
        raise AssertionError(f"cannot check {args[0]!r}: mark the block skip, with its reason")


# -- running a block
def _responder(body: dict[str, Any]) -> str:
    """Plays every act of a debate on the fake server: the prover's generative acts (the
    scripted fixtures' replies), and a verbalised probability where one is asked for."""
    messages = [
        {"role": m.get("role", "user"), "content": _text(m.get("content"))}
        for m in body.get("messages", [])
    ]
    if body.get("system"):
        messages.insert(0, {"role": "system", "content": _text(body["system"])})
    if not messages:
        return "True"
    asked = messages[-1]["content"].lower()
    if "probability" in asked and "break a claim" not in messages[0]["content"]:
        return '{"probability": 0.7}' if "json" in asked else "0.7"
    return llm_fixtures.responder(messages)


def _text(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return str(content or "")


def _globbed(args: tuple[str, ...], folder: Path) -> tuple[str, ...]:
    """The words as a shell gives them: a pattern that matches files in ``folder`` becomes
    their names, in order."""
    out: list[str] = []
    for word in args:
        found = sorted(glob.glob(word, root_dir=folder)) if glob.has_magic(word) else []
        out.extend(found or [word])
    return tuple(out)


def _inspect(args: tuple[str, ...], folder: Path) -> int:
    """Inspect's own command line, in ``folder``, with an empty tiktoken cache that must stay
    empty (nothing is downloaded) and no network configured."""
    program = Path(sys.executable).parent / "inspect"
    cache = folder / "tiktoken-cache"
    env = {k: v for k, v in os.environ.items() if not k.startswith("INSPECT_")}
    env.update(TIKTOKEN_CACHE_DIR=str(cache), NO_COLOR="1")
    res = subprocess.run([str(program), *args[1:]], cwd=folder, env=env, capture_output=True,
                         text=True, timeout=600)
    assert not cache.exists(), "Inspect fetched tiktoken's encoding"
    assert res.returncode == 0 or not res.stderr, res.stderr[-3000:]
    tail = (res.stdout + res.stderr)[-3000:]
    assert "no samples completed" not in tail and "Error" not in tail, tail
    return res.returncode


def _run_block(block: Block, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("configs", "datasets"):
        (folder / name).symlink_to(REPO / name)
    monkeypatch.chdir(folder)
    monkeypatch.setenv("LLMDEBATE_CACHE_DIR", str(folder / "cache"))
    protocols, seats = set(PROTOCOLS.names()), dict(SEAT_ROLES)
    try:
        for args in block.commands:
            args = _globbed(args, folder)
            if args[0] == "inspect":
                code = _inspect(args, folder)
                assert code == block.status, f"{block.where}: {shlex.join(args)} exited {code}"
                continue
            assert args[0] in LLMDEBATE, (
                f"{block.where}: cannot run {args[0]!r} here: mark the block (parse, "
                "fake-server or skip) with its reason"
            )
            code = main(list(args[1:]))
            assert code == block.status, f"{block.where}: {shlex.join(args)} exited {code}"
    finally:  # a config's topologies register protocols and seats: none outlives the block
        for name in set(PROTOCOLS.names()) - protocols:
            PROTOCOLS.remove(name)
        SEAT_ROLES.clear()
        SEAT_ROLES.update(seats)


@pytest.mark.parametrize("block", CHECKED, ids=[b.where for b in CHECKED])
def test_documented_commands(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if block.mode == "parse":
        for args in block.commands:
            parse_check(args)
        return
    if block.mode == "plugin":
        _run_plugin_block(block, tmp_path)
        return
    if block.mode == "fake-server":
        with FakeServer() as server:
            server.responder = _responder
            server.top_logprobs = {"True": -0.3, "False": -1.4}
            for env, value in (
                ("OPENAI_BASE_URL", server.url),
                ("ANTHROPIC_BASE_URL", server.root),
                ("OPENAI_API_KEY", "sk-docs"),
                ("ANTHROPIC_API_KEY", "sk-ant-docs"),
            ):
                monkeypatch.setenv(env, value)
            _run_block(block, tmp_path, monkeypatch)
            assert server.requests > 0, f"{block.where}: no request reached the fake server"
        return
    _run_block(block, tmp_path, monkeypatch)


def test_the_docs_hold_commands_and_the_reader_sees_them() -> None:
    modes = {b.mode for b in BLOCKS}
    assert {"run", "parse", "fake-server"} <= modes, modes
    readme = [b for b in BLOCKS if b.where.startswith("README.md")]
    assert any(a[0] in LLMDEBATE and "openai/gpt-4o-mini" in a for b in readme for a in b.commands)


def test_a_marker_without_reason_is_refused(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text("<!-- commands: skip -->\n```bash\nllmdebate run\n```\n")
    with pytest.raises(AssertionError, match="states its reason"):
        doc_blocks(doc, tmp_path)
    doc.write_text("text\n```\n$ llmdebate report a \\\n   b  # two runs\nerror: x\n```\n")
    (block,) = doc_blocks(doc, tmp_path)
    assert block.commands == (("llmdebate", "report", "a", "b"),)



@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("llmdebate", "run", "--config", "configs/local-divisors.yaml", "--prover-modle", "x"),
         "unknown flags"),
        (("llmdebate", "rn", "--config", "c.yaml"), "unknown verb"),
        (("llmdebate", "run", "--config", "configs/local-divisors.yaml", "-x"),
         "unknown flags"),
        (("llmdebate", "export", "runs/r", "--format", "trl-prompt-only", "-o", "rows.jsonl"),
         "--role is required"),
        (("scripts/install.sh", "local,gpu"), "no extras"),
        (("vllm", "serve"), "mark the block skip"),
        (("nice", "-n", "10", "python", "benchmarks/bench_self_play.py", "--stepz", "2"),
         r"unknown flags \['--stepz'\]"),
        (("python", "benchmarks/no_such_bench.py"), "no script"),
    ],
)
def test_parse_check_catches_what_a_reader_would_hit(
    args: tuple[str, ...], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    with pytest.raises(AssertionError, match=message):
        parse_check(args)


def test_parse_check_reads_the_config_with_its_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    from llmdebate.errors import ConfigError

    monkeypatch.chdir(REPO)
    with pytest.raises(ConfigError, match="--debate-epsilon"):
        parse_check(("llmdebate", "run", "--config", "configs/local-divisors.yaml",
                     "--debate-epsilon", "0.7"))
