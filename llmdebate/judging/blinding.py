"""What keeps a human judge blind across a study: the story and the question of each debate,
and whether the judge reads the story in full there.

A judge may read a story in full (the direct expert baseline, or any debate with the passage
shown) or hear of it only through verified quotes (the passage hidden), never both: a judge
who has read it could not judge a hidden-passage debate on it blind. No judge sees one
question text twice (compared normalised, so one question listed under two ids counts once),
and a study may bound the questions of one story a judge sees (``per_story``).

:class:`Exposure` is what one judge has seen; :func:`story_log` is the per-judge record of
stories a study writes beside its database (:data:`STORY_LOG`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llmdebate.core.schemas import Transcript
from llmdebate.protocols.common import recorded_view
from llmdebate.qa.passage import SHOWN, passage_text

STORY_LOG = "judge_stories.json"
"""Each judge's stories, questions and debates, in queue order, written by ``assign``."""
_NON_ALNUM = re.compile(r"[^0-9a-z]+")


def question_key(t: Transcript) -> str:
    """The debate's question, case folded with only letters and digits kept."""
    question = str((t.item or {}).get("question") or "")
    return _NON_ALNUM.sub(" ", question.casefold()).strip()


def story_key(t: Transcript) -> str | None:
    """The debate's story: a digest of its passage, whitespace collapsed (None: no passage)."""
    text = passage_text(t.item)
    if text is None:
        return None
    return hashlib.sha256(" ".join(text.split()).encode()).hexdigest()[:16]


def story_title(t: Transcript) -> str | None:
    """The story's title, when the dataset gives one."""
    meta = (t.item or {}).get("meta")
    title = meta.get("title") if isinstance(meta, dict) else None
    return str(title) if title else None


def reads_in_full(t: Transcript) -> bool:
    """Whether the judge of ``t`` reads its passage (direct expert, or the passage shown)."""
    return story_key(t) is not None and recorded_view(t).mode == SHOWN


@dataclass
class Exposure:
    """What one judge has been given: questions, and per story its questions and whether
    they read it in full there."""

    questions: set[str] = field(default_factory=set)
    story_questions: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    story_full: dict[str, set[bool]] = field(default_factory=lambda: defaultdict(set))

    def add(self, t: Transcript) -> None:
        q, story = question_key(t), story_key(t)
        self.questions.add(q)
        if story is not None:
            self.story_questions[story].add(q)
            self.story_full[story].add(reads_in_full(t))

    def allows(self, t: Transcript, per_story: int | None) -> bool:
        """Whether this judge may be given ``t``: a new question, the story read the same way
        as before, and under ``per_story`` questions of the story."""
        q, story = question_key(t), story_key(t)
        if q in self.questions:
            return False
        if story is None:
            return True
        if self.story_full[story] - {reads_in_full(t)}:
            return False
        return per_story is None or len(self.story_questions[story]) < per_story


def story_log(
    rows: Iterable[tuple[str, int, Transcript]], per_story: int | None
) -> dict[str, Any]:
    """The per-judge story log of assignments given as (judge, queue position, debate)."""
    judges: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for judge, position, t in sorted(rows, key=lambda r: (r[0], r[1])):
        judges[judge].append(
            {
                "position": position,
                "story": story_key(t),
                "title": story_title(t),
                "question": (t.item or {}).get("question"),
                "item": (t.item or {}).get("id"),
                "debate": t.id,
                "protocol": t.protocol,
                "reads_story_in_full": reads_in_full(t),
            }
        )
    return {
        "rules": {
            "question_once": True,
            "story_read_in_full_or_hidden_never_both": True,
            "questions_per_story": per_story,
        },
        "judges": dict(judges),
    }


def write_story_log(path: Path, log: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(log, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
