"""The terminal judge as a real terminal draws it: ``llmdebate judge`` inside a tmux session,
its screens read back with ``tmux capture-pane``. Items whose question, answers and passage
carry an escape sequence, joiners, a byte-order mark, a right-to-left override, a tab and
emoji: no control or format character reaches the screen, every box's right border is in
the column of its corner, and a claim that copies the (hidden) passage carries no
quote-check marker."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest
from judging_study import FIXTURE, REPO, SCRIPTED, assign, make_run, write_judges

COLUMNS, LINES = 120, 50
CODE = "import sys; from llmdebate.cli import main; sys.exit(main(sys.argv[1:]))"
HOSTILE = "\x1b[31mred\x1b[0m zero\u200bwidth\u200djoined \ufeffmarked \u202eover\ttab ❤️ 👍🏽 漢字"
CORNERS = {"╭": "╮", "│": "│", "╰": "╯"}
ANSWERS = {
    "Is the claim true?": "t",
    "Probability that it is true": "70",
    "Reason (optional)": "",
    "answer 1 is correct": "60",
    "Explain your answer": "a reason",
}
"""A reply to each of the judge's prompts (the last line of the screen)."""
DONE = ("All items done", "Traceback", "error:")


def _dataset(tmp: Path, n: int = 3) -> Path:
    """Items whose every field carries :data:`HOSTILE`, and whose passage holds the question
    word for word (so a claim naming the question copies the hidden passage)."""
    rows = []
    for i in range(n):
        question = f"Does the ledger of harbour number {i} balance {HOSTILE}?"
        rows.append(
            {
                "id": f"h{i}",
                "question": question,
                "choices": [f"yes {HOSTILE}", "no"],
                "answer": f"yes {HOSTILE}",
                "context": f"The clerk asked: {question} Nobody knew. {HOSTILE}",
            }
        )
    path = tmp / "hostile.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


EVIDENCE = (
    "The clerk wrote <quote>Nobody knew.</quote> but not <quote>the ledger burnt down</quote>;"
    f" {HOSTILE}."
)
"""The prover's evidence: one quote of the passage, one not in it, and :data:`HOSTILE`."""
RESPONDER = f"""
import importlib.util

_spec = importlib.util.spec_from_file_location("scripted_players", {FIXTURE!r})
_base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_base)
probabilities = _base.probabilities


def responder(messages):
    if "evidence" in messages[0]["content"]:
        return {EVIDENCE!r}
    return _base.responder(messages)
"""


def _tmux(socket: str, *args: str) -> str:
    res = subprocess.run(
        ["tmux", "-L", socket, *args], capture_output=True, text=True, check=True, timeout=30
    )
    return res.stdout


def _drawn(socket: str) -> str:
    """Everything the pane has drawn, its history included."""
    return _tmux(socket, "capture-pane", "-p", "-S", "-", "-t", "judge").rstrip("\n")


def _next_prompt(socket: str, before: int, timeout: float = 60.0) -> str:
    """What the pane has drawn, once it has more lines than ``before`` and ends on a prompt
    of :data:`ANSWERS` or a line of :data:`DONE`."""
    deadline = time.monotonic() + timeout
    while True:
        drawn = _drawn(socket)
        lines = drawn.splitlines()
        last = lines[-1] if lines else ""
        if len(lines) > before and (
            any(p in last for p in ANSWERS) or any(d in drawn for d in DONE)
        ):
            time.sleep(0.2)  # nothing more comes after a prompt until it is answered
            if _drawn(socket) == drawn:
                return drawn
        if time.monotonic() > deadline:
            raise AssertionError("no prompt on the screen:\n" + drawn)
        time.sleep(0.1)


def _cells(ch: str) -> int:
    """Columns a terminal gives ``ch`` (East Asian wide and full-width: 2; combining: 0)."""
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


@pytest.fixture(scope="module")
def screens(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    assert shutil.which("tmux"), "tmux is needed to draw the terminal judge"
    tmp = tmp_path_factory.mktemp("tmux")
    (tmp / "players.py").write_text(RESPONDER)
    players = {
        "responder": f"{tmp / 'players.py'}:responder",
        "probabilities": f"{tmp / 'players.py'}:probabilities",
    }
    run_dir = make_run(
        tmp,
        ["prover-estimator", "two-sided"],
        dataset=_dataset(tmp),
        depth=1,
        judge={"kind": "human", "passage": "hidden"},
        prover={**SCRIPTED, "options": players, "decomposer": "formal"},
    )
    assign(run_dir, write_judges(tmp / "j.yaml", ["a", "b", "c", "d"]), 1)
    socket = f"llmdebate-test-{os.getpid()}"
    env = f"-u COLUMNS -u LINES PYTHONPATH={REPO} TERM=xterm-256color"  # the pane's size
    command = f"env {env} {sys.executable} -c '{CODE}' judge {run_dir} --judge-id a; sleep 60"
    _tmux(
        socket,
        "-f",
        "/dev/null",
        "new-session",
        "-d",
        "-x",
        str(COLUMNS),
        "-y",
        str(LINES),
        "-s",
        "judge",
        command,
    )
    drawn = ""
    try:
        for _ in range(40):  # 3 items, at most 3 prompts each, and one retry each
            drawn = _next_prompt(socket, len(drawn.splitlines()))
            if any(d in drawn for d in DONE):
                break
            last = drawn.splitlines()[-1]
            reply = next(r for p, r in ANSWERS.items() if p in last)
            if reply:
                _tmux(socket, "send-keys", "-t", "judge", "-l", reply)
            _tmux(socket, "send-keys", "-t", "judge", "Enter")
        yield [drawn]
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)


def test_the_judge_ran_through_every_item(screens: list[str]) -> None:
    drawn = "\n".join(screens)
    assert "Traceback" not in drawn and "error:" not in drawn, drawn
    assert "All items done" in screens[-1], screens[-1]
    assert "Claim" in drawn and "Evidence" in drawn and "Answer 1" in drawn


def test_no_control_or_format_character_reaches_the_screen(screens: list[str]) -> None:
    for screen in screens:
        drawn = [
            (hex(ord(ch)), unicodedata.name(ch, "?"))
            for ch in screen
            if ch != "\n" and unicodedata.category(ch) in ("Cc", "Cf")
        ]
        assert drawn == [], screen
        assert "[31m" in screen  # the escape sequence's text is shown, not acted on


def test_every_box_border_is_in_its_corners_column(screens: list[str]) -> None:
    boxes = 0
    for screen in screens:
        for line in screen.splitlines():
            line = line.rstrip()
            if line[:1] not in CORNERS:
                continue
            boxes += line[0] == "╭"
            assert line[-1] == CORNERS[line[0]], line
            assert sum(_cells(ch) for ch in line) == COLUMNS, line
    assert boxes >= 6


def test_a_claim_carries_no_quote_check_marker(screens: list[str]) -> None:
    claims = 0
    for screen in screens:
        lines = screen.splitlines()
        for i, line in enumerate(lines):
            if line.startswith("╭") and " Claim " in line:
                claims += 1
                body = []
                for below in lines[i + 1 :]:
                    if below.startswith("╰"):
                        break
                    body.append(below.strip("│ "))
                text = " ".join(body)
                assert "Does the ledger of harbour number" in text, text
                assert "✓" not in text and "not in the passage" not in text, text
    assert claims >= 1


def test_the_evidence_shows_its_quotes_checked(screens: list[str]) -> None:
    drawn = "\n".join(screens)
    assert "✓“Nobody knew.”" in drawn, drawn
    assert "not in the passage" in drawn and "“the ledger burnt down”" in drawn, drawn
