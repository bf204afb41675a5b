"""A policy's answers, checked, as the items of a labelling run.

A labelling run asks whether a proposed answer is correct: every protocol of the run labels
it, and the labels are scored against a checker (``docs/labelling.md``). Its dataset is a
JSONL file of answers, one object a line:

=============  ==========================================================================
``id``         unique within the file
``question``   the question the policy answered
``answer``     the policy's answer
``checker``    the name of the checker that says whether it is correct (:data:`CHECKERS`)
``reference``  what the checker compares with (``exact``, ``numeric``), or null
``choices``    the question's options, or null
``question_id`` the question's id where several answers share it (the unit of every
               interval), or null: the line's own ``id``
``meta``       anything else; the ``problem`` checker reads the problem there
=============  ==========================================================================

Each line becomes an :class:`~llmdebate.data.loader.Item` whose question is the question with
the proposed answer, whose choices are ``correct`` and ``incorrect`` and whose gold answer is
the checker's verdict; ``meta.labelling`` records the line. The two claims a recursive
protocol debates ("the answer is correct", "the answer is incorrect") are the problem's own
statements of the proposed answer and of the other option where the question has two options
and states them (``meta.claims``, as the bundled formal problems do), so every subclaim's
truth stays computable; else a sentence about the proposed answer.

A checker is one function of the line (:class:`AnswerLine`) to True / False, registered in
:data:`CHECKERS` (entry-point group ``llmdebate.checkers``); one that cannot decide raises
:class:`ValueError` with the reason, reported as ``file:line: reason``.

``python -m llmdebate.data.labelling`` writes the bundled samples in ``datasets/answers/``:
answers of a simulated policy, right with a stated probability, to bundled questions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from llmdebate.data.loader import Item, build_items, item_key
from llmdebate.data.problems import claim_truth
from llmdebate.errors import DatasetError
from llmdebate.records.jsonl import first_error, iter_json_lines
from llmdebate.registry import Registry

CORRECT = "correct"
INCORRECT = "incorrect"
LABELS = (CORRECT, INCORRECT)
"""The options of a labelling item, in this order: label 1 and label 0."""


class AnswerLine(BaseModel):
    """One line of an answers file (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    question: str
    answer: str
    checker: str
    reference: str | None = None
    choices: list[str] | None = None
    question_id: str | None = None
    meta: dict[str, Any] = Field(default_factory=dict)


Checker = Callable[[AnswerLine], bool]

CHECKERS: Registry[Checker] = Registry(
    "checker", group="llmdebate.checkers", builtins=("llmdebate.data.labelling",)
)


def _needs_reference(line: AnswerLine) -> str:
    if line.reference is None:
        raise ValueError(f"checker {line.checker!r} needs a reference")
    return line.reference


@CHECKERS.register("exact")
def exact(line: AnswerLine) -> bool:
    """The answer equals the reference (case and surrounding spaces ignored)."""
    return line.answer.strip().casefold() == _needs_reference(line).strip().casefold()


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def number_of(text: str) -> float | None:
    """The last number written in ``text`` (thousands' commas and a currency sign allowed),
    or None."""
    found = _NUMBER.findall(text.replace(",", ""))
    return float(found[-1]) if found else None


@CHECKERS.register("numeric")
def numeric(line: AnswerLine) -> bool:
    """The last number in the answer equals the reference's (to 1e-6, relative)."""
    ref = number_of(_needs_reference(line))
    if ref is None:
        raise ValueError(f"reference {line.reference!r} holds no number")
    got = number_of(line.answer)
    return got is not None and abs(got - ref) <= 1e-6 * max(1.0, abs(ref))


@CHECKERS.register("problem")
def problem(line: AnswerLine) -> bool:
    """The truth of the answer's statement in the item's formal problem (``meta.claims`` and
    ``meta.problem``: the bundled divisors and circuits), computed exactly."""
    claims = line.meta.get("claims")
    text = claims.get(line.answer) if isinstance(claims, dict) else None
    if not isinstance(text, str):
        raise ValueError(f"meta.claims states no claim for the answer {line.answer!r}")
    truth = claim_truth(text, line.meta)
    if truth is None:
        raise ValueError(f"the problem cannot tell the truth of {text[:80]!r}")
    return bool(truth)


def claims_of(line: AnswerLine) -> dict[str, str]:
    """The claims "the answer is correct" and "... incorrect" (see the module docstring)."""
    stated = line.meta.get("claims")
    others = [c for c in (line.choices or []) if c != line.answer]
    if isinstance(stated, dict) and len(others) == 1:
        yes, no = stated.get(line.answer), stated.get(others[0])
        if isinstance(yes, str) and isinstance(no, str):
            return {CORRECT: yes, INCORRECT: no}
    said = f'The answer "{line.answer}" to the question "{line.question}"'
    return {CORRECT: f"{said} is correct.", INCORRECT: f"{said} is not correct."}


def labelling_item(line: AnswerLine, correct: bool) -> dict[str, Any]:
    """The item (as a common-schema object) asking whether ``line``'s answer is correct."""
    gold = CORRECT if correct else INCORRECT
    return {
        "id": line.id,
        "dataset": "labelling",
        "question": f"{line.question}\n\nProposed answer: {line.answer}\n\n"
        "Is the proposed answer correct?",
        "choices": list(LABELS),
        "answer": gold,
        "meta": {
            **line.meta,
            "claims": claims_of(line),
            "distractor": INCORRECT if correct else CORRECT,
            "labelling": {
                "question": line.question,
                "question_id": line.question_id or line.id,
                "proposed": line.answer,
                "choices": line.choices,
                "checker": line.checker,
                "reference": line.reference,
                "correct": correct,
            },
        },
    }


def is_answers_record(first: object) -> bool:
    """Whether a file's first record is an answers line (it names a checker)."""
    return isinstance(first, dict) and "checker" in first and "question" in first


def read_answers(path: str | Path) -> list[Item]:
    """The labelling items of an answers file, checked, in file order; a bad line or one its
    checker cannot decide raises :class:`DatasetError` naming the file and the line."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"{path}: no such answers file")
    return build_items(_checked(iter_json_lines(path, DatasetError), str(path)), str(path))


def _checked(
    rows: Iterable[tuple[int, dict[str, Any]]], source: str
) -> Iterator[tuple[int, dict[str, Any]]]:
    for n, data in rows:
        data = {k: _text(v) if k in ("id", "answer", "reference") else v
                for k, v in data.items()}
        try:
            line = AnswerLine.model_validate(data)
        except ValidationError as exc:
            raise DatasetError(f"{source}:{n}: {first_error(exc, 'answer')}") from None
        if line.checker not in CHECKERS:
            raise DatasetError(f"{source}:{n}: checker: {CHECKERS.unknown(line.checker)}")
        try:
            correct = CHECKERS.get(line.checker)(line)
        except ValueError as exc:
            raise DatasetError(f"{source}:{n}: checker {line.checker}: {exc}") from None
        yield n, labelling_item(line, correct)


def _text(value: Any) -> Any:
    """A number written as a number, read as text (``"answer": 18``)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value


# ------------------------------------------------------------------ the bundled samples


def simulated_answers(
    items: Iterable[Item], *, right: float, seed: int, checker: str
) -> list[dict[str, Any]]:
    """Answers lines of a policy right with probability ``right`` on each item (drawn from
    ``seed`` and the item id); a wrong answer is another option, or a nearby number."""
    out: list[dict[str, Any]] = []
    for it in items:
        rng = np.random.default_rng([seed, item_key(it.id)])
        answer = it.answer
        if rng.random() >= right:
            answer = _wrong(it, rng)
        out.append({
            "id": it.id,
            "question": it.question,
            "answer": answer,
            "checker": checker,
            "reference": None if checker == "problem" else it.answer,
            "choices": it.choices,
            "meta": {k: v for k, v in it.meta.items() if k not in ("choice_order", "shuffle_seed")},
        })
    return out


def every_answer(items: Iterable[Item], *, checker: str) -> list[dict[str, Any]]:
    """One answers line for each option of each item (id ``<item>-<option>``, its
    ``question_id`` the item's): a policy's whole answer space, labelled once by each
    labeller and then read by the policy trained on the labels
    (:mod:`llmdebate.training.label_reward`)."""
    out: list[dict[str, Any]] = []
    for it in items:
        if not it.choices:
            raise ValueError(f"{it.id}: no options to answer from")
        for option in it.choices:
            out.append({
                "id": f"{it.id}-{option}",
                "question_id": it.id,
                "question": it.question,
                "answer": option,
                "checker": checker,
                "reference": None if checker == "problem" else it.answer,
                "choices": it.choices,
                "meta": {k: v for k, v in it.meta.items()
                         if k not in ("choice_order", "shuffle_seed")},
            })
    return out


def _wrong(it: Item, rng: np.random.Generator) -> str:
    if it.choices:
        wrong = it.wrong_choices
        return str(wrong[int(rng.integers(len(wrong)))])
    gold = number_of(it.answer) or 0.0
    delta = max(1, round(abs(gold) * 0.2)) * int(rng.integers(1, 4)) * int(rng.choice([-1, 1]))
    value = gold + delta
    return str(int(value)) if value == int(value) else f"{value:g}"


SAMPLES = (  # (file, source, items, the policy's accuracy, checker)
    ("divisors.jsonl", "divisors.jsonl", 40, 0.5, "problem"),
    ("circuits.jsonl", "circuits.jsonl", 20, 0.5, "problem"),
    ("gsm8k.jsonl", "samples/gsm8k.jsonl", 20, 0.5, "numeric"),
)


ANSWER_SPACE = ("divisors-every-answer.jsonl", 40)
"""(file, questions): the yes and the no answer to each of the first divisors questions
drawn by :func:`llmdebate.data.generate.divisor_items`."""


def write_answer_space(datasets: Path) -> Path:
    """Write :data:`ANSWER_SPACE` under ``datasets/answers/``."""
    from llmdebate.data.generate import divisor_items

    name, n = ANSWER_SPACE
    items = build_items(enumerate(divisor_items(n), start=1), "divisor_items")
    path = datasets / "answers" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = every_answer(items, checker="problem")
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def write_samples(datasets: Path, seed: int = 0) -> list[Path]:
    """Write the bundled answers samples under ``datasets/answers/`` (see :data:`SAMPLES`)."""
    from llmdebate.data.loader import read_items

    out_dir = datasets / "answers"
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, source, n, right, checker in SAMPLES:
        items = read_items(datasets / source)[:n]
        lines = simulated_answers(items, right=right, seed=seed, checker=checker)
        path = out_dir / name
        path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":  # pragma: no cover - the samples' writer
    root = Path(__file__).resolve().parents[2] / "datasets"
    for p in write_samples(root):
        print(p)
    print(write_answer_space(root))
