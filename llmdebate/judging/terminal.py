"""The terminal judge: the same queue, views and submission as the web app, in a shell (rich).

Meant for a person at the machine that holds the run directory (or for piloting): it asks for
the judge id, not a token, since whoever can read the run directory can read its debates.

An interactive debate (``judge.interactive``, :mod:`.asking`) offers, after the speeches
heard so far, "a" (ask the debaters: the question is stored as on the web page, and
``llmdebate answer`` runs their next round) or "e" (end and decide); an item whose question
waits for the debaters' answer is skipped until it is answered.
"""

from __future__ import annotations

import time
import unicodedata
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.prompt import Prompt

from llmdebate.errors import UserError
from llmdebate.judging.asking import ask_state, questions_of, shown_debate
from llmdebate.judging.bidi import plain
from llmdebate.judging.complete import (
    Conflict,
    Invalid,
    Submission,
    ask,
    reveal_next,
    study_settings,
    submit,
    sync,
    view_for,
    waiting_by_id,
)
from llmdebate.judging.db import Assignment, Judge, connect, queue, utcnow

NEXT = "next"  # what _ask returns when the judge asks for the next turn


DRAWN_CONTROLS = frozenset("\n\t")
"""The only control characters a model- or dataset-written string keeps on the terminal."""


def _drawable(ch: str) -> bool:
    """Whether ``ch`` is drawn as rich counts it: not a control or format character (an
    escape sequence, a zero-width joiner, a byte-order mark: the terminal acts on them or
    draws them at another width than rich counts), a variation selector or an emoji's skin
    tone (which terminals join to the character before them, or not)."""
    if ch in DRAWN_CONTROLS:
        return True
    if unicodedata.category(ch) in ("Cc", "Cf", "Cs"):
        return False
    code = ord(ch)
    return not (0xFE00 <= code <= 0xFE0F or 0x1F3FB <= code <= 0x1F3FF or code >= 0xE0100)


def _text(value: object) -> str:
    """A model- or dataset-written string for rich: markup escaped, its bidirectional
    controls (:func:`plain`) and every other character a terminal would not draw as rich
    counts it (:func:`_drawable`) dropped, so no box's border is pushed out of line."""
    return escape("".join(ch for ch in plain(value) if _drawable(ch)))


def _said(segments: list[dict[str, Any]] | None, text: object) -> str:
    """A speaker's text with its quotes styled: verified green with a tick, unverified red
    and struck through with a flag, quotes past the budget dim."""
    if not segments:
        return _text(text)
    out: list[str] = []
    for seg in segments:
        body = _text(seg.get("text", ""))
        status = seg.get("status")
        if seg.get("kind") != "quote":
            out.append(body)
        elif status == "verified":
            out.append(f"[bold green]✓“{body}”[/bold green]")
        elif status == "over_budget":
            out.append(f"[dim]{body}[/dim]")
        else:
            flag = "[reverse] not in the passage [/reverse]"
            out.append(f"[red]{flag} [strike]“{body}”[/strike][/red]")
    return "".join(out)


LEGEND = (
    "[dim]You have not read the passage. Quotes: [bold green]✓“verified”[/bold green] is in "
    "the passage word for word; [red][strike]“unverified”[/strike][/red] is not.[/dim]"
)


def _turn(console: Console, t: dict[str, Any]) -> None:
    if t.get("judge"):
        console.print(Panel(_text(t["text"]), title=f"Your question, after round {t['round']}"))
        return
    head = f"{t['speaker']}, round {t['round']}"
    if t.get("position"):
        head += f" — arguing for “{_text(t['position'])}”"
    console.print(Panel(_said(t.get("segments"), t["text"]), title=head))


def _more(view: dict[str, Any]) -> str:
    shown, total = len(view["turns"]), view["turns_total"]
    return f"{shown} of {total} turns shown; each further turn costs {view['turn_cost']:g}"


def _show(console: Console, view: dict[str, Any], n: int, total: int) -> None:
    console.rule(f"Item {n} of {total}")
    if view.get("protocol"):
        console.print(f"[dim]Protocol:[/dim] {_text(str(view['protocol']))}")
    if view["kind"] == "leaf":
        for step in view.get("path") or []:
            console.print(f"[dim]reached from:[/dim] {_text(step['claim'])}")
        if view.get("passage"):
            console.print(Panel(_text(str(view["passage"])), title="Passage"))
        elif view.get("passage_setting") == "hidden":
            console.print(LEGEND)
        console.print(Panel(_text(view["claim"]), title="Claim"))
        console.print(
            Panel(_said(view.get("evidence_segments"), view["evidence"]), title="Evidence")
        )
        return
    console.print(Panel(_text(str(view["question"])), title="Question"))
    if view.get("passage"):
        console.print(Panel(_text(str(view["passage"])), title="Passage"))
    elif view.get("passage_setting") == "hidden" and view["turns"]:
        console.print(LEGEND)
    for i, a in enumerate(view["answers"], start=1):
        console.print(f"[bold]Answer {i}:[/bold] {_text(str(a))}")
    for t in view["turns"]:
        _turn(console, t)
    if view.get("stepped"):
        console.print(f"[dim]{_more(view)}.[/dim]")


def _percent(raw: str) -> float | None:
    raw = raw.strip().rstrip("%").strip()
    if not raw:
        return None
    try:
        return float(raw) / 100.0
    except ValueError:
        raise Invalid(f"{raw!r} is not a number from 1 to 99") from None


def _ask(console: Console, view: dict[str, Any]) -> Submission | str | None:
    """One submission read from the terminal, :data:`NEXT` for the next turn (stepped reveal),
    or None when the judge quits."""
    if view["kind"] == "leaf":
        first, second = ("f", "t") if view["flipped"] else ("t", "f")
        v = Prompt.ask(
            f"Is the claim true? ({first} or {second}; q quits)",
            choices=[first, second, "q"],
            show_choices=False,
            console=console,
        )
        if v == "q":
            return None
        p = _percent(
            Prompt.ask(
                "Probability that it is true, 1-99 (Enter: none)",
                default="",
                show_default=False,
                console=console,
            )
        )
        expl = Prompt.ask("Reason (optional)", default="", show_default=False, console=console)
        return Submission(verdict=int(v == "t"), probability=p, explanation=expl)
    more = view.get("stepped") and len(view["turns"]) < view["turns_total"]
    hint = f"n: next turn, costs {view['turn_cost']:g}; q quits" if more else "q quits"
    raw = Prompt.ask(f"Probability that answer 1 is correct, 1-99 ({hint})", console=console)
    if raw.strip() == "q":
        return None
    if more and raw.strip() == "n":
        return NEXT
    p = _percent(raw)
    expl = Prompt.ask("Explain your answer", default="", show_default=False, console=console)
    return Submission(p_shown_first=p, explanation=expl)


def _ask_or_end(
    console: Console, asking: dict[str, Any], put: Any
) -> str:
    """An interactive debate's choice: ``decide`` (go on to the verdict), ``asked`` (a
    question was stored: ``put(text)``), ``waiting`` (one waits for an answer) or ``quit``."""
    if asking["pending"]:
        console.print(
            "[yellow]Your question waits for the debaters' answer "
            "(llmdebate answer RUN_DIR); this item comes back then.[/yellow]"
        )
        return "waiting"
    if not asking["can_ask"]:
        return "decide"
    cost = asking["turn_cost"]
    while True:
        c = Prompt.ask(
            f"a: ask the debaters (costs {cost:g}), e: end and decide, q quits",
            choices=["a", "e", "q"], show_choices=False, console=console,
        )
        if c != "a":
            return {"e": "decide", "q": "quit"}[c]
        text = Prompt.ask("Your question to the debaters", console=console)
        try:
            put(text)
        except Invalid as exc:
            console.print(f"[red]{escape(str(exc))}[/red]")
            continue
        console.print("[green]Asked.[/green] The debaters answer when `llmdebate answer` runs.")
        return "asked"


def _interactive(
    console: Console, sessions: Any, run_dir: Path, waiting: dict[str, Any], judge_id: str,
    a: Assignment,
) -> str:
    """:func:`_ask_or_end` for assignment ``a`` (``decide`` where the debate takes no
    questions)."""
    with sessions() as s:
        asking = ask_state(shown_debate(run_dir, waiting[a.debate_id], a.id),
                           questions_of(s, a.id))
    if asking is None:
        return "decide"

    def put(text: str) -> None:
        ask(sessions, run_dir, waiting, judge_id, a.id, text)

    return _ask_or_end(console, asking, put)


def run_terminal(
    run_dir: Path, judge_id: str, db_url: str | None = None, console: Console | None = None
) -> int:
    """Work through ``judge_id``'s open assignments; returns how many were judged."""
    console = console or Console()
    sessions = connect(run_dir, db_url)
    waiting = waiting_by_id(run_dir)
    sync(sessions, run_dir, waiting)
    with sessions() as s:
        judge = s.get(Judge, judge_id)
        if judge is None or judge.is_lead:
            raise UserError(f"--judge-id {judge_id!r}: no such judge in this study")
        mine = queue(s, judge_id)
    judged = 0
    console.print(f"{sum(d for _, d in mine)} of {len(mine)} items done.")
    for n, (a, done) in enumerate(mine, start=1):
        if done:
            continue
        with sessions.begin() as s:
            row = s.get(Assignment, a.id)
            if row is not None and row.started_at is None:
                row.started_at = utcnow()
        with sessions() as s:
            row = s.get(Assignment, a.id)
            assert row is not None
            study = study_settings(s)
            view = view_for(shown_debate(run_dir, waiting[a.debate_id], a.id), row, study)
        _show(console, view, n, len(mine))
        start = time.monotonic()
        choice = _interactive(console, sessions, run_dir, waiting, judge_id, a)
        if choice == "quit":
            console.print(f"Stopped; {judged} judged in this session.")
            return judged
        if choice != "decide":
            continue
        while True:
            try:
                sub = _ask(console, view)
                if sub is None:
                    console.print(f"Stopped; {judged} judged in this session.")
                    return judged
                if sub == NEXT:
                    shown = len(view["turns"])
                    reveal_next(sessions, waiting, judge_id, a.id, shown)
                    with sessions() as s:
                        row = s.get(Assignment, a.id)
                        assert row is not None
                        view = view_for(waiting[a.debate_id], row, study)
                    for t in view["turns"][shown:]:
                        _turn(console, t)
                    console.print(f"[dim]{_more(view)}.[/dim]")
                    continue
                assert isinstance(sub, Submission)
                sub.active_s = round(time.monotonic() - start, 1)
                sub.interface = "terminal"
                submit(sessions, run_dir, waiting, judge_id, a.id, sub)
                judged += 1
                console.print("[green]Recorded.[/green]")
                break
            except Invalid as exc:
                console.print(f"[red]{escape(str(exc))}[/red]")
            except Conflict:
                console.print("[yellow]Already recorded; your first answer counts.[/yellow]")
                break
    console.print(f"All items done. {judged} judged in this session.")
    return judged
