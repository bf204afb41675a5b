"""Other packages' warnings go to the run's warnings.log, not over the progress lines."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import llmdebate.experiment.runner as runner_module
from llmdebate.experiment.warnings_log import WARNINGS_FILE, warnings_to_log

THEIRS = "/x/site-packages/transformers/generation/utils.py"


def test_third_party_warnings_are_logged_once_and_ours_still_show(tmp_path: Path) -> None:
    shown: list[str] = []

    def show(message: Any, *args: Any, **kwargs: Any) -> None:
        shown.append(str(message))

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = show
        with warnings_to_log(tmp_path) as log:
            for _ in range(3):
                warnings.warn_explicit("`past_key_values` is deprecated", FutureWarning,
                                       THEIRS, 12)
            warnings.warn_explicit("ours", UserWarning, runner_module.__file__, 1)
        assert shown == ["ours"]
        assert log == tmp_path / WARNINGS_FILE
        text = log.read_text()
        assert text.count("past_key_values") == 1 and "FutureWarning" in text and THEIRS in text
        warnings.warn_explicit("after", FutureWarning, THEIRS, 13)  # restored after the run
        assert shown == ["ours", "after"]
