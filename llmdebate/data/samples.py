"""Regenerate ``datasets/samples/``: small samples of real QA datasets whose licences allow
redistribution, and ``SOURCES.md`` beside them.

    python -m llmdebate.data.samples SRC_DIR [--out datasets/samples]

``SRC_DIR`` has one folder per dataset, each with ``items.jsonl`` (the common schema) and
``SOURCE.txt`` (``repo:``, ``commit:``, ``path:``, ``licence:`` lines), as in the project's
shared dataset copy. Each sample holds the ``n`` items whose SHA-256 of
``"llmdebate-samples:<id>"`` is smallest, kept in file order and copied byte for byte: the
draw depends only on the item ids, not on a random generator's version or on the file's order.
Tests never run this; they read the committed files.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path

from llmdebate.data.loader import read_items
from llmdebate.records.paths import REPO_ROOT

SALT = "llmdebate-samples:"


@dataclass(frozen=True)
class Sample:
    name: str
    n: int
    care: str = ""


SAMPLES: tuple[Sample, ...] = (
    Sample(
        "truthfulqa",
        50,
        "The correct answer is always the first choice (`answer_index` 0 in every line): "
        "`load_items` shuffles the choices with a recorded seed; never show them unshuffled. "
        "`meta` keeps every correct and incorrect reference answer.",
    ),
    Sample(
        "gsm8k",
        50,
        "Free-form numeric answers (`choices` null); `decomposition` holds the Socratic "
        "sub-questions, `meta.solution` the worked solution.",
    ),
    Sample("arc_challenge", 50, "3 to 5 options; some source labels are 1-4 (`meta.labels`)."),
    Sample(
        "prontoqa",
        50,
        "True/False over a fictional ontology in `context`; `decomposition` is the gold proof.",
    ),
    Sample(
        "mmlu",
        50,
        "Drawn from the validation and dev splits (not test); `meta.subject` names the subject.",
    ),
    Sample("commonsenseqa", 50, "5 options; `meta.question_concept` from the source."),
    Sample(
        "boolq",
        50,
        "yes/no with the Wikipedia passage in `context` (passages are CC BY-SA, as the data).",
    ),
    Sample("proofwriter", 30, "True/False/Unknown under the open-world assumption, depth 5."),
    Sample("folio", 30, "True/False/Uncertain; premises in `context` and `facts`, FOL in `meta`."),
    Sample("logical_deduction", 30, "Orderings of 3, 5 or 7 objects; options are statements."),
    Sample("hotpotqa", 50, "Free-form answers, no passages (`context` null)."),
)

EXCLUDED: dict[str, str] = {
    "gpqa": "never bundled in plain text: its authors ask that the questions never appear "
    "online unencrypted. Tests build their own encrypted zip of invented questions.",
    "strategyqa": "the dataset's licence is unclear (the repository's MIT covers its code; "
    "no licence file covers the data, and mirrors disagree), so it is not redistributed.",
    "quality": "not drawn here: each question needs a ~25 KB article; `datasets/quality/` "
    "holds QuALITY's own CC BY 4.0 example (5 questions, one article) with its source. The "
    "LEval repackaging is in a GPL-3.0 repository and two of its questions are not QuALITY's.",
    "folio_logiclm": "the same 204 FOLIO questions as `folio`, reformatted.",
}


def sample_key(item_id: str) -> str:
    return hashlib.sha256((SALT + item_id).encode("utf-8")).hexdigest()


def draw(lines: list[bytes], ids: list[str], n: int) -> list[bytes]:
    """The lines of the ``n`` ids with the smallest keys, in file order."""
    chosen = set(sorted(range(len(ids)), key=lambda i: sample_key(ids[i]))[:n])
    return [line for i, line in enumerate(lines) if i in chosen]


def read_source(path: Path) -> dict[str, str]:
    """The ``key: value`` lines of a SOURCE.txt."""
    out: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and key.strip() not in out:
            out[key.strip()] = value.strip()
    return out


def make_sample(src: Path, out: Path, spec: Sample) -> tuple[int, int, dict[str, str]]:
    """Write ``out/<name>.jsonl``; (items in the sample, items in the source, SOURCE.txt)."""
    folder = src / spec.name
    items = read_items(folder / "items.jsonl")  # validates every line first
    raw = (folder / "items.jsonl").read_bytes()  # split on newlines only, not on U+2028 etc.
    lines = [x for x in raw.split(b"\n") if x.strip()]
    chosen = draw(lines, [it.id for it in items], spec.n)
    target = out / f"{spec.name}.jsonl"
    target.write_bytes(b"".join(x.rstrip(b"\r") + b"\n" for x in chosen))
    read_items(target)  # the sample loads on its own
    return len(chosen), len(items), read_source(folder / "SOURCE.txt")


def sources_markdown(rows: list[tuple[Sample, int, int, dict[str, str]]]) -> str:
    parts = [
        "# Bundled dataset samples",
        "",
        "Small samples of real QA datasets in the common schema (`datasets/README.md`), so that",
        "the demos and the tests run on a clone alone. Each licence below allows redistribution;",
        "every sample keeps its upstream licence. Regenerate with",
        "`python -m llmdebate.data.samples SRC_DIR` from a folder with one `<name>/items.jsonl`",
        "and `<name>/SOURCE.txt` per dataset.",
        "",
        "**How the samples are drawn.** For each dataset, the items whose SHA-256 of",
        f'`"{SALT}<id>"` is smallest, kept in the source file\'s order, lines copied byte for',
        "byte. The draw depends only on the ids, so it is the same on every machine and for every",
        "version of the tools.",
        "",
        "**Care.** In `truthfulqa` (and GPQA) the correct answer is always the first choice:",
        "`llmdebate.data.load_items` shuffles choices with a recorded seed",
        '(`meta["choice_order"]`, `meta["shuffle_seed"]`); anything that reads these files',
        "another way must shuffle too.",
        "",
    ]
    for spec, n, total, src in rows:
        parts += [
            f"## {spec.name}",
            "",
            f"- file: `{spec.name}.jsonl`, {n} of {total} items",
            f"- upstream: {src.get('repo', '?')} at commit `{src.get('commit', '?')}`,"
            f" path `{src.get('path', '?')}`",
            f"- licence: {src.get('licence', '?')}",
        ]
        if spec.care:
            parts.append(f"- care: {spec.care}")
        parts.append("")
    parts += ["## Not bundled", ""]
    parts += [f"- **{name}**: {why}" for name, why in EXCLUDED.items()]
    return "\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m llmdebate.data.samples", description=__doc__)
    parser.add_argument("src", type=Path, help="folder with <name>/items.jsonl and SOURCE.txt")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "datasets" / "samples")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for spec in SAMPLES:
        n, total, src = make_sample(args.src, args.out, spec)
        rows.append((spec, n, total, src))
        print(f"{spec.name}: {n} of {total} items", file=sys.stderr)
    (args.out / "SOURCES.md").write_text(sources_markdown(rows), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
