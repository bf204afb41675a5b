"""The CLI starts with only the core dependencies: no verb imports an optional extra's
package at import time (``scripts/install.sh local`` has none of the judge, ray, train,
tournament or inspect extras)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

EXTRAS = ("sqlalchemy", "starlette", "uvicorn", "multipart", "rich", "ray", "openskill",
          "inspect_ai", "trl", "datasets", "pyarrow", "psycopg")


def test_every_verb_registers_without_the_optional_extras() -> None:
    code = textwrap.dedent(f"""
        import importlib.abc, sys
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {EXTRAS!r}:
                    raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
                return None
        sys.meta_path.insert(0, Block())
        import click
        from llmdebate.cli import cli
        from llmdebate.commands.verbs import VERBS
        ctx = click.Context(cli)
        names = [n for n in cli.list_commands(ctx) if cli.get_command(ctx, n) is not None]
        print(sorted(names), len(VERBS.names()))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    names, count = out.stdout.rsplit(" ", 1)
    assert "'answer'" in names and "'run'" in names and "'judge'" in names
    assert names.count("'") // 2 == int(count)
