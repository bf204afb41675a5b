"""Write llmdebate/commands/help_table.py: what the verbs' ``--help`` shows that is read from
the config's fields, the registries (their built-in entries) and the formal engine's names,
stored so that ``--help`` imports none of them.

    python scripts/help_table.py          # rewrite the file
    python scripts/help_table.py --check  # exit 1 if the file differs from what is read now

``tests/test_cli_startup.py`` checks that the stored file is what this script writes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PATH = REPO / "llmdebate" / "commands" / "help_table.py"

HEAD = '''"""What the verbs' ``--help`` shows that is read from the config's fields, the
registries' built-in entries and the formal engine's names, stored so that ``--help`` imports
none of them; written by ``python scripts/help_table.py`` (``tests/test_cli_startup.py``
checks it against them). Where a plugin of a registry is installed, help is read from the
registries instead."""

from __future__ import annotations
'''


def literal(value: object, indent: int = 0) -> str:
    """``value`` (tuples, dicts, strings, booleans) as Python source, one item a line, long
    strings cut at spaces into pieces that fit 100 columns."""
    pad = " " * (indent + 4)
    if isinstance(value, str):
        if len(repr(value)) + indent <= 90:
            return repr(value)
        pieces, line = [], ""
        for word in value.split(" "):
            if line and len(line) + len(word) > 80 - indent:
                pieces.append(line + " ")
                line = word
            else:
                line = f"{line} {word}" if line else word
        pieces.append(line)
        return "(\n" + "".join(f"{pad}{p!r}\n" for p in pieces) + " " * indent + ")"
    if isinstance(value, dict):
        items = [f"{pad}{literal(k, indent + 4)}:\n{pad}    {literal(v, indent + 8)},\n"
                 for k, v in value.items()]
        return "{\n" + "".join(items) + " " * indent + "}"
    if isinstance(value, tuple):
        if not value:
            return "()"
        items = [f"{pad}{literal(v, indent + 4)},\n" for v in value]
        return "(\n" + "".join(items) + " " * indent + ")"
    return repr(value)


def text() -> str:
    """The file's text, read from the config and the registries now."""
    sys.path.insert(0, str(REPO))
    from llmdebate.commands.config_flags import flag_rows
    from llmdebate.commands.run import executor_help
    from llmdebate.core.schemas import VARIANTS
    from llmdebate.export import FORMATS, players
    from llmdebate.export.writers import KINDS
    from llmdebate.formal.attack import ANSWERS, TARGETS
    from llmdebate.models.backends import model_strings_help

    tables = [
        ("CONFIG_FLAGS: tuple[tuple[str, str, bool, str, str, tuple[str, ...]], ...]",
         flag_rows()),
        ("EXECUTOR_HELP: dict[str, str]", executor_help()),
        ("FORMATS: tuple[str, ...]", FORMATS.builtin_names()),
        ("PLAYERS: tuple[str, ...]", tuple(players())),
        ("EXPORT_KINDS: tuple[str, ...]", tuple(KINDS)),
        ("MODEL_STRINGS: str", model_strings_help()),
        ("VARIANTS: tuple[str, ...]", tuple(VARIANTS)),
        ("ATTACK_TARGETS: tuple[str, ...]", tuple(TARGETS)),
        ("ATTACK_ANSWERS: tuple[str, ...]", tuple(ANSWERS)),
    ]
    return HEAD + "".join(f"\n{name} = {literal(value)}\n" for name, value in tables)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="Exit 1 if the file is stale.")
    args = parser.parse_args()
    new = text()
    if args.check:
        return 0 if PATH.read_text(encoding="utf-8") == new else 1
    PATH.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
