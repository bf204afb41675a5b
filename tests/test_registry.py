"""The one registry shape every extension point uses (llmdebate.registry)."""

from __future__ import annotations

import pytest

from llmdebate.errors import UserError
from llmdebate.registry import Registry


def test_register_get_and_choices_in_the_error() -> None:
    reg: Registry[type] = Registry("widget")

    @reg.register("a", capabilities={"fast"})
    class A:
        """The first widget."""

    reg.add("b", int)
    assert reg.names() == ("a", "b")
    assert reg.get("a") is A
    assert reg.entry("a").summary == "The first widget."
    assert reg.with_capability("fast") == ("a",)
    assert "a" in reg and "zzz" not in reg
    msg = r"run\.yaml: protocol: unknown widget .c.: choose from a, b"
    with pytest.raises(UserError, match=msg):
        reg.get("c", where="run.yaml: protocol")


def test_duplicate_names_are_refused_unless_replaced() -> None:
    reg: Registry[int] = Registry("number")
    reg.add("one", 1)
    with pytest.raises(ValueError, match="registered already"):
        reg.add("one", 2)
    reg.add("one", 2, replace=True)
    assert reg.get("one") == 2
    reg.remove("one")
    assert reg.names() == ()


def test_builtins_are_imported_on_first_read() -> None:
    reg: Registry[int] = Registry("thing", builtins=("llmdebate.errors",))
    assert reg.names() == ()
    assert reg._loaded


def test_builtin_names_leave_out_plugins_and_later_entries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What the package's own tests range over: not a plugin's entry, not a test's."""
    reg: Registry[int] = Registry("thing", group="thing.plugins")

    class Point:
        name, value = "plugged", "a plugin module"

        def load(self) -> None:
            reg.add("plugged", 3)

    monkeypatch.setattr("llmdebate.registry.entry_points", lambda group: [Point()])
    reg.add("own", 1)  # a built-in module registers on import
    assert reg.names() == ("own", "plugged")
    reg.add("later", 2)
    assert reg.builtin_names() == ("own",)
    assert reg.names() == ("own", "plugged", "later")
