"""Local backends are shared by model strings with the same settings, and only within one
cache folder: a backend made while ``$LLMDEBATE_CACHE_DIR`` named another folder holds that
folder's weights and is not handed out after the variable changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmdebate.models.cache import CACHE_ENV
from llmdebate.models.get_model import get_model


def test_a_shared_local_backend_belongs_to_its_cache_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "a"))
    first = get_model("local").backend
    again = get_model("local").backend
    assert again is first
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "b"))
    other = get_model("local").backend
    assert other is not first
    assert other.weights_dir is not None and first.weights_dir is not None
    assert tmp_path / "b" in other.weights_dir.parents
    assert tmp_path / "a" in first.weights_dir.parents
