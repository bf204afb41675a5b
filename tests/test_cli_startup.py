"""``llmdebate --help`` imports no verb: the built-ins are listed from their summaries, each
verb's module is imported when that verb runs, and a plugin's verb is listed and runs. A
verb's ``--help`` imports neither the config nor the protocols: what it reads from them is
stored, and checked here against them."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import click
import pytest

from llmdebate.cli import cli
from llmdebate.commands import choices, config_flags
from llmdebate.commands.verbs import SUMMARIES
from llmdebate.experiment import loading

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("numpy", "pydantic", "torch", "transformers", "yaml", "jinja2")


def _python(code: str, path: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(p) for p in (path, REPO) if p is not None])}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, check=False, env=env, timeout=300)


def test_each_summary_is_the_first_line_of_its_verbs_help() -> None:
    ctx = click.Context(cli)
    for name, summary in SUMMARIES.items():
        command = cli.get_command(ctx, name)
        assert command is not None, name
        assert command.get_short_help_str(1000) == summary, name


def test_the_help_imports_no_verb_and_nothing_heavy() -> None:
    res = _python(f"""
        import sys
        from llmdebate.cli import main
        try:
            main(["--help"])
        except SystemExit:
            pass
        loaded = [m for m in sys.modules if m.startswith("llmdebate.commands.")
                  and m != "llmdebate.commands.verbs"]
        heavy = [m for m in {HEAVY!r} if m in sys.modules]
        print("LOADED", loaded, heavy)
    """)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "LOADED [] []" in res.stdout, res.stdout[-2000:]
    for name in SUMMARIES:
        assert f"\n  {name} " in res.stdout, name


LIGHT_VERBS = ("run", "compare", "export", "fork", "score", "report", "train", "answer",
               "formal", "attack", "assign", "serve", "judge")


def test_the_verbs_help_imports_nothing_heavy() -> None:
    res = _python(f"""
        import sys
        from llmdebate.cli import main
        for verb in {LIGHT_VERBS!r}:
            try:
                main([verb, "--help"])
            except SystemExit:
                pass
        heavy = [m for m in {HEAVY!r} if m in sys.modules]
        protocols = [m for m in sys.modules if m.startswith("llmdebate.protocols")]
        print("LOADED", heavy, protocols)
    """)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "LOADED [] []" in res.stdout, res.stdout[-2000:]
    for verb in LIGHT_VERBS:
        assert f"Usage: llmdebate {verb} [OPTIONS]" in res.stdout, verb
    assert "--debate-depth" in res.stdout and "trl-prompt-completion" in res.stdout


def test_the_stored_help_is_what_the_config_and_the_registries_give() -> None:
    spec = importlib.util.spec_from_file_location("help_table_script",
                                                  REPO / "scripts" / "help_table.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    stored = (REPO / "llmdebate" / "commands" / "help_table.py").read_text(encoding="utf-8")
    assert stored == script.text(), "stale: run python scripts/help_table.py"
    from llmdebate.commands.help_table import CONFIG_FLAGS, FORMATS, MODEL_STRINGS
    from llmdebate.export import FORMATS as REGISTRY

    assert REGISTRY.builtin_names() == FORMATS
    assert "Backends: openai/<model>" in MODEL_STRINGS
    for dotted, *_ in CONFIG_FLAGS:
        assert config_flags.flag_name(dotted) == loading.flag_name(dotted)


def test_help_is_read_from_the_registries_where_a_plugin_could_add_to_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(choices, "plugin_groups", lambda: frozenset({"llmdebate.formats"}))
    assert choices.live(("llmdebate.formats",), "no.such.module")
    assert not choices.live(("llmdebate.protocols",), "no.such.module")
    assert choices.live((), "llmdebate.commands.choices")  # imported: what it holds now
    stored = choices.StoredChoice(("a",), "llmdebate.protocols", "no.such.module:X")
    assert tuple(stored.choices) == ("a",)


def test_a_verb_imports_its_own_module_alone() -> None:
    res = _python("""
        import sys
        from llmdebate.cli import main
        try:
            main(["report", "--help"])
        except SystemExit:
            pass
        print("LOADED", sorted(m for m in sys.modules if m.startswith("llmdebate.commands.")))
    """)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "LOADED ['llmdebate.commands.report', 'llmdebate.commands.verbs']" in res.stdout


PLUGIN = '''
import click
from llmdebate.commands.verbs import VERBS


@VERBS.register("hello")
@click.command("hello")
@click.option("--name", default="world")
def hello(name: str) -> None:
    """Say hello from a plugin."""
    click.echo(f"hello, {name}")
'''


def test_a_plugins_verb_is_listed_and_runs(tmp_path: Path) -> None:
    (tmp_path / "hello_verb.py").write_text(PLUGIN, encoding="utf-8")
    dist = tmp_path / "hello_verb-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: hello-verb\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[llmdebate.commands]\nhello = hello_verb\n")
    res = _python("""
        import sys
        from llmdebate.cli import main
        for args in (["--help"], ["hello", "--name", "you"], ["run", "--help"]):
            try:
                code = main(args)
            except SystemExit as exc:
                code = exc.code
            print("EXIT", code)
    """, tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "  hello      Say hello from a plugin." in res.stdout, res.stdout[-3000:]
    assert "  run        Run the debates" in res.stdout
    assert "hello, you" in res.stdout
    assert "Usage: llmdebate run [OPTIONS]" in res.stdout
    assert res.stdout.count("EXIT 0") == 3, res.stdout[-3000:]
