"""QuALITY (Pang et al. 2022): long articles with validated multiple-choice questions, the
dataset of the published reading-comprehension debate studies (Khan et al. 2024; Michael et
al. 2023).

:func:`load_quality` reads

* QuALITY's official JSONL (``QuALITY.v1.0.1[.htmlstripped].{train,dev}``: one line per
  article and writer, with ``article`` and ``questions[]``, each question with ``options``,
  ``gold_label``, ``writer_label``, ``validation[]`` — ``untimed_answer``,
  ``untimed_eval1_answerability``, ``untimed_best_distractor`` (``untimed_eval3_distractor``
  in the dataset's README) — ``speed_validation[].speed_answer`` and ``difficult``);
* the common schema with QuALITY's votes under ``meta`` (``annotator_answers``,
  ``eval3_best_distractor_votes``, ``speed_answers``; the bundled
  ``datasets/quality/sample.jsonl``);

from a local file, or from ``hf:<name>``, a parquet file or a ``save_to_disk`` folder holding
the official columns. HTML articles become text with :func:`html_to_text` (a real HTML
parser; paragraphs kept, entities decoded). Labels in the sources are 1-based.

:class:`QualityFilter` holds the published filters: ``answerable`` keeps the questions most
untimed annotators answered correctly (and, where recorded, most judged answerable);
``hard`` keeps QuALITY's ``difficult`` subset (fewer than half of the speed annotators
correct); bounds on the annotators' accuracies and judgments, the writer's agreement and the
article's source; :data:`FILTERS` names the presets (``hard``, and the defaults of Khan et
al.'s and Michael et al.'s code as ``khan2024`` and ``michael2023``). The dishonest answer is chosen
by ``distractor``: ``best`` takes the option most validators named best distractor (the gold
option's votes left out; ties, or no votes, drawn from ``seed`` and the question id),
``random`` a wrong option drawn the same way. It is recorded in ``meta["distractor"]`` (with
``distractor_index``, the votes and the rule); ``pair=True`` keeps only the answer and the
distractor as the choices, as in the two-answer debates of both studies.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Literal

import numpy as np

from llmdebate.data.hf import is_hub, is_local_hf, load_table
from llmdebate.data.loader import Item, build_items, shuffle_choices
from llmdebate.errors import DatasetError
from llmdebate.records.jsonl import iter_json_lines
from llmdebate.records.paths import missing_path_message, resolve_path

Distractor = Literal["best", "random"]
DISTRACTORS: tuple[str, ...] = ("best", "random")

# ---------------------------------------------------------------- HTML to text

_BLOCK = frozenset(
    {
        *("p", "div", "h1", "h2", "h3", "h4", "h5", "h6", "li", "ul", "ol", "blockquote"),
        *("pre", "table", "tr", "hr", "section", "article", "header", "footer", "dl", "dt"),
        "dd",
    }
)
_SKIP = frozenset({"head", "script", "style", "title"})
_LINE = "\x00"  # a <br/> inside a paragraph, until whitespace is collapsed
_HTML_HINT = re.compile(r"<(?:!DOCTYPE|html|body|p|br|hr|h[1-6]|div)\b", re.IGNORECASE)


class _TextParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.paragraphs: list[str] = []
        self._buf: list[str] = []
        self._skip = 0
        self._pre = 0

    def _flush(self) -> None:
        text = "".join(self._buf)
        self._buf = []
        if not self._pre:
            text = " ".join(text.split())
        lines = [" ".join(x.split()) if not self._pre else x.rstrip() for x in text.split(_LINE)]
        para = "\n".join(lines).strip("\n ")
        if para:
            self.paragraphs.append(para)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self._skip += 1
        elif tag == "br":
            self._buf.append(_LINE)
        elif tag == "img":  # a drop capital drawn as an image: its letter
            alt = dict(attrs).get("alt") or ""
            if len(alt) == 1 and alt.isalpha():
                self._buf.append(alt)
        elif tag in _BLOCK:
            self._flush()
            self._pre += tag == "pre"

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag in _SKIP:
            self._skip -= 1

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self._skip = max(self._skip - 1, 0)
        elif tag in _BLOCK:
            self._flush()
            if tag == "pre":
                self._pre = max(self._pre - 1, 0)

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self._buf.append(data.replace("\n", _LINE) if self._pre else data)


def html_to_text(html: str) -> str:
    """The text of an HTML article: one paragraph per block element (``p``, headings,
    ``hr``…), separated by a blank line; ``<br>`` a line break; whitespace inside a paragraph
    collapsed; entities decoded; ``head``, ``script``, ``style`` dropped."""
    parser = _TextParser()
    parser.feed(html)
    parser.close()
    parser._flush()
    return "\n\n".join(parser.paragraphs)


def looks_like_html(text: str) -> bool:
    return _HTML_HINT.search(text) is not None


# ---------------------------------------------------------------- questions


@dataclass
class Question:
    """One QuALITY question with its annotations, labels 0-based (None: not recorded)."""

    id: str
    question: str
    options: list[str]
    gold: int
    article: str
    writer: int | None = None
    untimed_answers: list[int] = field(default_factory=list)
    answerability: list[int] = field(default_factory=list)  # 1: answerable, unambiguous
    context_required: list[int] = field(default_factory=list)  # 1: a sentence .. 4: all of it
    distractor_votes: list[int] = field(default_factory=list)
    speed_answers: list[int] = field(default_factory=list)
    difficult: bool | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def untimed_accuracy(self) -> float | None:
        return _share(a == self.gold for a in self.untimed_answers)

    @property
    def speed_accuracy(self) -> float | None:
        return _share(a == self.gold for a in self.speed_answers)

    @property
    def mean_answerability(self) -> float | None:
        return _mean(self.answerability)

    @property
    def mean_context_required(self) -> float | None:
        return _mean(self.context_required)

    @property
    def answerable(self) -> bool:
        """QuALITY's validation criteria: most untimed annotators correct and, where recorded,
        most of them judging the question answerable and unambiguous."""
        acc = self.untimed_accuracy
        judged = _share(a == 1 for a in self.answerability)
        return acc is not None and acc > 0.5 and (judged is None or judged > 0.5)

    @property
    def hard(self) -> bool:
        """QuALITY's ``difficult`` flag, or (where not recorded) speed accuracy under 0.5."""
        if self.difficult is not None:
            return self.difficult
        acc = self.speed_accuracy
        return acc is not None and acc < 0.5


def _share(flags: Iterable[bool]) -> float | None:
    values = list(flags)
    return sum(values) / len(values) if values else None


def _mean(values: list[int]) -> float | None:
    return sum(values) / len(values) if values else None


def _label(value: Any, n_options: int, where: str) -> int:
    """A 1-based label (int or numeric string) as a 0-based index."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise DatasetError(f"{where}: expected an option number, got {value!r}") from None
    if not 1 <= number <= n_options:
        raise DatasetError(f"{where}: option {number} is not between 1 and {n_options}")
    return number - 1


def _labels(values: Any, n: int, where: str) -> list[int]:
    if values is None:
        return []
    if not isinstance(values, list | tuple):
        raise DatasetError(f"{where}: expected a list, got {type(values).__name__}")
    return [_label(v, n, f"{where}[{i}]") for i, v in enumerate(values) if v is not None]


def _ints(validation: list[Mapping[str, Any]], key: str, where: str) -> list[int]:
    out: list[int] = []
    for i, v in enumerate(validation):
        if v.get(key) is not None:
            try:
                out.append(int(v[key]))
            except (TypeError, ValueError):
                raise DatasetError(f"{where}.validation[{i}].{key}: expected a number") from None
    return out


def _text(record: Mapping[str, Any], key: str, where: str) -> str:
    value = record.get(key)
    if not isinstance(value, str) or not value.strip():
        raise DatasetError(f"{where}.{key}: expected a non-empty string")
    return value


def _article_text(raw: Any, where: str, fmt: str) -> str:
    if isinstance(raw, list):  # the older example files keep the article as a list of lines
        raw = "".join(str(x) for x in raw)
    if not isinstance(raw, str) or not raw.strip():
        raise DatasetError(f"{where}: expected the article's text")
    if fmt == "html" or (fmt != "text" and looks_like_html(raw)):
        return html_to_text(raw)
    return raw.strip()


_ARTICLE_META = ("article_id", "set_unique_id", "title", "author", "source", "year", "topic")


def _official(record: Mapping[str, Any], where: str) -> Iterator[Question]:
    article = _article_text(record.get("article"), f"{where}: article", "auto")
    meta = {k: record[k] for k in _ARTICLE_META if record.get(k) is not None}
    set_id = str(record.get("set_unique_id") or record.get("article_id") or where)
    questions = record.get("questions")
    if not isinstance(questions, list) or not questions:
        raise DatasetError(f"{where}: questions: expected a non-empty list")
    for i, q in enumerate(questions):
        at = f"{where}: questions[{i}]"
        if not isinstance(q, Mapping):
            raise DatasetError(f"{at}: expected an object")
        yield _official_question(
            q, at, str(q.get("question_unique_id") or f"{set_id}_{i + 1}"), article, meta
        )


def _official_question(
    q: Mapping[str, Any], at: str, qid: str, article: str, meta: dict[str, Any]
) -> Question:
    options = q.get("options")
    if not isinstance(options, list) or len(options) < 2:
        raise DatasetError(f"{at}.options: expected a list of at least two options")
    n = len(options)
    if q.get("gold_label") is None:
        raise DatasetError(f"{at}.gold_label: missing (QuALITY's test split has no answers)")
    validation = [v for v in q.get("validation") or [] if isinstance(v, Mapping)]
    speed = [v for v in q.get("speed_validation") or [] if isinstance(v, Mapping)]
    votes = [
        v.get("untimed_best_distractor", v.get("untimed_eval3_distractor")) for v in validation
    ]
    difficult = q.get("difficult")
    return Question(
        id=qid,
        question=_text(q, "question", at),
        options=[str(o) for o in options],
        gold=_label(q["gold_label"], n, f"{at}.gold_label"),
        article=article,
        writer=None
        if q.get("writer_label") is None
        else _label(q["writer_label"], n, f"{at}.writer_label"),
        untimed_answers=_labels(
            [v.get("untimed_answer") for v in validation], n, f"{at}.validation.untimed_answer"
        ),
        answerability=_ints(validation, "untimed_eval1_answerability", at),
        context_required=_ints(validation, "untimed_eval2_context", at),
        distractor_votes=_labels(votes, n, f"{at}.validation.untimed_best_distractor"),
        speed_answers=_labels(
            [v.get("speed_answer") for v in speed], n, f"{at}.speed_validation.speed_answer"
        ),
        difficult=None if difficult is None else bool(int(difficult)),
        meta=dict(meta),
    )


def _common(record: Mapping[str, Any], where: str) -> Question:
    choices = record.get("choices")
    if not isinstance(choices, list) or len(choices) < 2:
        raise DatasetError(f"{where}: choices: expected a list of at least two options")
    n = len(choices)
    if record.get("answer") not in choices:
        raise DatasetError(f"{where}: answer: not one of the choices")
    meta = record.get("meta") or {}
    if not isinstance(meta, Mapping):
        raise DatasetError(f"{where}: meta: expected an object")
    fmt = str(meta.get("article_format", "auto"))
    kept = {k: meta[k] for k in _ARTICLE_META if meta.get(k) is not None}
    return Question(
        id=str(record.get("id") or where),
        question=_text(record, "question", where),
        options=[str(c) for c in choices],
        gold=choices.index(record["answer"]),
        article=_article_text(record.get("context"), f"{where}: context", fmt),
        untimed_answers=_labels(
            meta.get("annotator_answers"), n, f"{where}: meta.annotator_answers"
        ),
        distractor_votes=_labels(
            meta.get("eval3_best_distractor_votes"), n, f"{where}: meta.eval3_best_distractor_votes"
        ),
        speed_answers=_labels(meta.get("speed_answers"), n, f"{where}: meta.speed_answers"),
        difficult=None if meta.get("difficult") is None else bool(meta["difficult"]),
        meta=kept,
    )


def parse_record(record: Any, where: str) -> list[Question]:
    """The questions of one line (or row): QuALITY's format or the common schema."""
    if not isinstance(record, Mapping):
        raise DatasetError(f"{where}: expected a JSON object")
    if "questions" in record and "article" in record:
        return list(_official(record, where))
    if "question" in record and "choices" in record:
        return [_common(record, where)]
    raise DatasetError(
        f"{where}: neither QuALITY's format (article, questions) nor the common schema "
        "(id, question, choices, answer, context)"
    )


# ---------------------------------------------------------------- distractors


def _rng(seed: int, qid: str) -> np.random.Generator:
    digest = hashlib.sha256(f"quality-distractor:{qid}".encode()).digest()
    return np.random.default_rng([seed, int.from_bytes(digest[:8], "big")])


@dataclass(frozen=True)
class DistractorChoice:
    """The chosen wrong option (0-based ``index``), the vote count of each option (the gold
    option's left at 0), the options tied for most votes, and how it was chosen."""

    index: int
    votes: tuple[int, ...]
    tied: tuple[int, ...]
    rule: Literal["votes", "votes, tie drawn", "no votes, drawn", "random"]


def choose_distractor(q: Question, distractor: Distractor, seed: int) -> DistractorChoice:
    """The wrong option a dishonest debater defends (see the module docstring)."""
    wrong = [i for i in range(len(q.options)) if i != q.gold]
    votes = [0] * len(q.options)
    for v in q.distractor_votes:
        if v != q.gold:
            votes[v] += 1
    if distractor == "random":
        pick = wrong[int(_rng(seed, q.id).integers(len(wrong)))]
        return DistractorChoice(pick, tuple(votes), (), "random")
    if distractor != "best":
        raise ValueError(f"distractor must be one of {', '.join(DISTRACTORS)}, not {distractor!r}")
    top = max(votes)
    if top == 0:
        pick = wrong[int(_rng(seed, q.id).integers(len(wrong)))]
        return DistractorChoice(pick, tuple(votes), tuple(wrong), "no votes, drawn")
    tied = tuple(i for i in wrong if votes[i] == top)
    if len(tied) == 1:
        return DistractorChoice(tied[0], tuple(votes), tied, "votes")
    pick = tied[int(_rng(seed, q.id).integers(len(tied)))]
    return DistractorChoice(pick, tuple(votes), tied, "votes, tie drawn")


# ---------------------------------------------------------------- items


@dataclass(frozen=True)
class QualityFilter:
    """Which questions to keep. A question lacking the annotation a criterion reads (no
    speed answers for ``max_speed_accuracy``, no recorded source for ``sources``…) is left
    out by that criterion.

    ``answerable``: QuALITY's validation criteria (:attr:`Question.answerable`); ``hard``:
    QuALITY's ``difficult`` subset (:attr:`Question.hard`); the bounds compare the share of
    untimed and speed annotators who chose the gold answer, and the mean answerability (1
    best, 3 worst) and context-required (1: a sentence or two, 4: most of the article)
    judgments; ``writer_agrees``: the writer's label is the gold label; ``sources``: the
    article's ``source`` is one of these (e.g. ``("Gutenberg",)``).
    """

    answerable: bool = False
    hard: bool = False
    min_untimed_accuracy: float | None = None
    max_speed_accuracy: float | None = None
    max_mean_answerability: float | None = None
    min_mean_context: float | None = None
    writer_agrees: bool = False
    sources: tuple[str, ...] | None = None

    def _checks(self) -> list[Callable[[Question], bool]]:
        checks: list[Callable[[Question], bool]] = []
        if self.answerable:
            checks.append(lambda q: q.answerable)
        if self.hard:
            checks.append(lambda q: q.hard)
        if self.min_untimed_accuracy is not None:
            checks.append(lambda q: _at_least(q.untimed_accuracy, self.min_untimed_accuracy))
        if self.max_speed_accuracy is not None:
            checks.append(lambda q: _at_most(q.speed_accuracy, self.max_speed_accuracy))
        if self.max_mean_answerability is not None:
            checks.append(lambda q: _at_most(q.mean_answerability, self.max_mean_answerability))
        if self.min_mean_context is not None:
            checks.append(lambda q: _at_least(q.mean_context_required, self.min_mean_context))
        if self.writer_agrees:
            checks.append(lambda q: q.writer == q.gold)
        if self.sources is not None:
            checks.append(lambda q: q.meta.get("source") in (self.sources or ()))
        return checks

    def keeps(self, q: Question) -> bool:
        return all(check(q) for check in self._checks())


def _at_least(value: float | None, bound: float | None) -> bool:
    return value is not None and bound is not None and value >= bound


def _at_most(value: float | None, bound: float | None) -> bool:
    return value is not None and bound is not None and value <= bound


FILTERS: dict[str, QualityFilter] = {
    "all": QualityFilter(),
    "answerable": QualityFilter(answerable=True),
    # QuALITY's hard subset: validated questions most speed annotators got wrong
    "hard": QualityFilter(answerable=True, hard=True),
    # ucl-dark/llm_debate core/load/quality.py filter_question defaults (Khan et al. 2024);
    # their per-story cap, excluded stories and questions are not applied here
    "khan2024": QualityFilter(
        hard=True,
        min_untimed_accuracy=0.5,
        max_speed_accuracy=0.5,
        max_mean_answerability=2.0,
        min_mean_context=1.0,
        sources=("Gutenberg",),
    ),
    # julianmichael/debate StoryAndQuestionFilters defaults (Michael et al. 2023)
    "michael2023": QualityFilter(
        min_untimed_accuracy=1.0,
        max_speed_accuracy=0.5,
        min_mean_context=3.0,
        writer_agrees=True,
        sources=("Gutenberg",),
    ),
}


def quality_filter(name: str) -> QualityFilter:
    """The :class:`QualityFilter` named ``name`` (:data:`FILTERS`)."""
    try:
        return FILTERS[name]
    except KeyError:
        raise DatasetError(f"filters: {name!r} is not one of {', '.join(FILTERS)}") from None


def question_row(q: Question, *, distractor: Distractor, seed: int, pair: bool) -> dict[str, Any]:
    """The common-schema dict of one question, its annotations and distractor in ``meta``."""
    options = [o.strip() for o in q.options]
    pick = choose_distractor(q, distractor, seed)
    meta = {
        **q.meta,
        "article_format": "text",
        "gold_label": q.gold + 1,
        "writer_label": None if q.writer is None else q.writer + 1,
        "untimed_accuracy": q.untimed_accuracy,
        "speed_accuracy": q.speed_accuracy,
        "mean_answerability": q.mean_answerability,
        "mean_context_required": q.mean_context_required,
        "answerable": q.answerable,
        "hard": q.hard,
        "distractor": options[pick.index],
        "distractor_index": pick.index,
        "distractor_votes": list(pick.votes),
        "distractor_tied": list(pick.tied),
        "distractor_rule": pick.rule,
        "distractor_choice": distractor,
        "distractor_seed": seed,
    }
    choices = [options[i] for i in sorted((q.gold, pick.index))] if pair else options
    return {
        "id": q.id,
        "dataset": "quality",
        "question": q.question.strip(),
        "choices": choices,
        "answer": options[q.gold],
        "context": q.article,
        "meta": meta,
    }


def _records(source: str | Path, split: str | None) -> tuple[str, str, list[tuple[int, Any]]]:
    """(label, unit, (number, record) pairs) of a file or a Hugging Face source."""
    if is_hub(source):
        table, label, _ = load_table(str(source), split=split)
        return label, "row", [(i + 1, dict(row)) for i, row in enumerate(table)]
    found = resolve_path(source)
    if not found.exists():
        raise DatasetError(missing_path_message(source, "dataset file"))
    if is_local_hf(found):
        table, label, _ = load_table(found, split=split)
        return label, "row", [(i + 1, dict(row)) for i, row in enumerate(table)]
    if split is not None:
        raise DatasetError(f"{source}: split applies only to Hugging Face datasets")
    if found.is_dir():
        raise DatasetError(f"{found}: a folder, not a QuALITY file")
    return str(found), "line", list(iter_json_lines(found, DatasetError))


def read_questions(source: str | Path, *, split: str | None = None) -> list[Question]:
    """Every question of ``source`` with its annotations, in file order."""
    label, unit, records = _records(source, split)
    out: list[Question] = []
    for n, record in records:
        out += parse_record(record, f"{label}:{n}" if unit == "line" else f"{label}: row {n}")
    return out


def load_quality(
    source: str | Path = "datasets/quality/sample.jsonl",
    *,
    filters: QualityFilter | str = "all",
    distractor: Distractor = "best",
    pair: bool = False,
    seed: int = 0,
    shuffle_seed: int = 0,
    split: str | None = None,
    limit: int | None = None,
) -> list[Item]:
    """QuALITY questions as :class:`~llmdebate.data.loader.Item` objects (the article's text
    in ``context``): those ``filters`` keeps (a :class:`QualityFilter` or the name of one of
    :data:`FILTERS`), the first ``limit`` of them, with the distractor chosen from ``seed``
    and recorded, choices shuffled with ``shuffle_seed`` as
    :func:`~llmdebate.data.loader.load_items` does."""
    if distractor not in DISTRACTORS:
        raise DatasetError(f"distractor: {distractor!r} is not one of {', '.join(DISTRACTORS)}")
    keep = quality_filter(filters) if isinstance(filters, str) else filters
    questions = [q for q in read_questions(source, split=split) if keep.keeps(q)]
    if not questions:
        raise DatasetError(f"{source}: no question passes the filters ({keep})")
    if limit is not None:
        questions = questions[:limit]
    rows = [
        (i + 1, question_row(q, distractor=distractor, seed=seed, pair=pair))
        for i, q in enumerate(questions)
    ]
    items = build_items(rows, str(source), unit="question")
    return [shuffle_choices(it, shuffle_seed) for it in items]
