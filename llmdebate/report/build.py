"""The report of a run directory, from its config.yaml and transcripts alone.

``comparison.json`` (every metric), ``comparison.md`` (the tables), ``plots/*.png`` and one
self-contained ``report.html``. Nothing here runs a debate or recomputes a reward other than
through :mod:`llmdebate.core.scoring`.
"""

from __future__ import annotations

import html
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llmdebate.core.schemas import Transcript
from llmdebate.records.rundir import load_transcripts, read_run_config
from llmdebate.report import html as report_html
from llmdebate.report import metrics, plots, tables
from llmdebate.report.decided_lines import protocol_lines
from llmdebate.report.merge import merged_runs
from llmdebate.report.records import tally
from llmdebate.report.sections import RunView, parts

WEAK_MODELS = ("local",)


def role_models(info: dict[str, Any]) -> dict[str, str]:
    """The model string of every role of a run's config (``config.yaml`` as a mapping)."""
    out: dict[str, str] = {}
    for role in ("prover", "estimator", "judge"):
        section = info.get(role) or {}
        if role == "judge" and section.get("kind") in ("oracle", "deferred", "human"):
            out[role] = str(section.get("kind"))
        else:
            out[role] = str(section.get("model", "local"))
    return out


def caveat(info: dict[str, Any]) -> str:
    """What the numbers do and do not show (HTML, trusted text with escaped model names)."""
    names = set(role_models(info).values()) - {"oracle", "deferred", "human"}
    shown = html.escape(", ".join(sorted(names)))
    if names & set(WEAK_MODELS) or any(n.startswith("local") for n in names):
        return (
            f"<b>Read this first.</b> Models: {shown}. <code>local</code> is the embedded "
            "Gemma 3 270M <i>base</i> model: it is weak, not instruction-tuned, and close to "
            "chance on these questions. With it the numbers below check that the pipeline runs "
            "end to end — the same items, paired designs, transcripts, rewards from the one "
            "scoring module, metrics recomputable from transcripts.jsonl — and <b>not</b> how "
            "the protocols compare. With few items the bootstrap intervals are wide and "
            "overlapping; no difference between protocols here is evidence for or against "
            "asymmetric debate. Probabilities come from one model's next-token logprobs on "
            "yes/no prompts, which for a 270M base model mostly reflect prompt wording and "
            "position, not knowledge."
        )
    if names <= {"scripted"} or all(n.startswith("scripted") for n in names):
        return (
            f"<b>Read this first.</b> Models: {shown}. The scripted backend is a test double "
            "with fixed replies: these numbers exercise the pipeline only."
        )
    return (
        f"<b>Read this first.</b> Models: {shown}. Accuracies use percentile bootstrap "
        "intervals over items; with few items they are wide. Differences between protocols "
        "whose intervals overlap are not established by this run."
    )


def formal_section() -> dict[str, Any]:
    """The formal obfuscation table (interval problem), from ``llmdebate.formal.reproduce``."""
    from llmdebate.formal.reproduce import obfuscation_table

    tab = dict(obfuscation_table())
    tab.setdefault("markdown", tables.markdown(tab["head"], tab["rows"]))
    return tab


def build_report(
    run_dir: Path | Sequence[Path],
    *,
    formal: bool | None = None,
    bootstrap: int | None = None,
    calibration_bins: int | None = None,
    progress: bool = False,
    out_dir: Path | None = None,
) -> Path:
    """Write the report of ``run_dir`` (or of several run directories merged, into
    ``out_dir``: :func:`llmdebate.report.merge.merged_runs`); return the path of report.html.
    """
    dirs = [run_dir] if isinstance(run_dir, Path) else list(run_dir)
    if len(dirs) == 1:
        info = read_run_config(dirs[0])
        transcripts = load_transcripts(dirs[0])
        judged = load_transcripts(dirs[0], judged=True)
        run_dir = out_dir or dirs[0]
    else:
        info, transcripts, judged = merged_runs(dirs)
        run_dir = out_dir or default_merged_dir(dirs)
        info["name"] = run_dir.name
    run_dir.mkdir(parents=True, exist_ok=True)
    settings = info.get("report") or {}
    if progress:
        print(f"writing the report of {len(transcripts)} debates…", file=sys.stderr, flush=True)
    write_outputs(
        info,
        transcripts,
        run_dir,
        formal=settings.get("formal", False) if formal is None else formal,
        n_boot=bootstrap or settings.get("bootstrap", metrics.DEFAULT_BOOTSTRAP),
        n_bins=calibration_bins or settings.get("calibration_bins", 10),
        judged=judged,
    )
    return run_dir / "report.html"


def default_merged_dir(dirs: Sequence[Path]) -> Path:
    """Where the report of several runs goes by default: ``<first's parent>/<a>+<b>...``."""
    return dirs[0].parent / "+".join(d.name for d in dirs)


def write_outputs(
    info: dict[str, Any],
    transcripts: Sequence[Transcript],
    run_dir: Path,
    *,
    formal: bool = False,
    n_boot: int = metrics.DEFAULT_BOOTSTRAP,
    n_bins: int = 10,
    judged: Sequence[Transcript] = (),
) -> dict[str, Any]:
    """comparison.json, comparison.md, plots/*.png and report.html in ``run_dir``.

    ``judged``: the run's debates completed by people (``judged.jsonl``): a judges section.
    """
    seed = int(info.get("seed", 0))
    name = str(info.get("name", run_dir.name))
    run = tally(transcripts)
    m = metrics.metrics_of(run, seed=seed, n_boot=n_boot, n_bins=n_bins)
    m["decided"] = run.decided.summary()
    facts = _facts(transcripts)
    m["run"] = {"name": name, "models": role_models(info), **facts}
    if formal:
        m["formal"] = formal_section()
    sections = parts(RunView(transcripts, judged, seed=seed, n_boot=n_boot, n_bins=n_bins))
    extra_md = extra_html = ""
    for part in sections:
        m[part.key] = part.data
        extra_md += "\n" + part.markdown
        extra_html += part.html
    m["plots_not_drawn"] = plots.not_drawn(m)
    (run_dir / "comparison.json").write_text(json.dumps(m, indent=2) + "\n")
    decided = decided_section(m)
    (run_dir / "comparison.md").write_text(
        tables.comparison_markdown(m, f"Comparison: {name}") + decided[0] + extra_md
    )
    pngs = plots.all_plots(m)
    for part in sections:
        pngs.update(part.pngs)
    (run_dir / "plots").mkdir(exist_ok=True)
    for plot, png in pngs.items():
        (run_dir / "plots" / f"{plot}.png").write_bytes(png)
    notes = status_note(facts, judged, str(run_dir)) + _notes(info, facts)
    page = report_html.render(
        m,
        transcripts,
        pngs,
        title=f"Report: {name}",
        caveat=caveat(info),
        notes=notes,
        extra=decided[1] + extra_html,
    )
    (run_dir / "report.html").write_text(page, encoding="utf-8")
    return m


DECIDED_TITLE = "What decided the prover-estimator debates, and the lemmas' bounds"


def decided_section(m: dict[str, Any]) -> tuple[str, str]:
    """(Markdown, HTML) of what decided each protocol's debates and its lemmas' lines (the
    closing lines' own, docs/metrics.md); empty where no protocol has them."""
    md, page = "", ""
    for proto, d in (m.get("decided") or {}).items():
        pay = (m["protocols"].get(proto) or {}).get("payoff") or {}
        lines = [(_level(x), x.strip()) for x in protocol_lines(pay, d)]
        if not lines:
            continue
        md += f"\n## {DECIDED_TITLE}: {proto}\n\n" + "".join(
            f"{'  ' * k}- {x}\n" for k, x in lines)
        page += (f"<h2>{html.escape(DECIDED_TITLE)}: {html.escape(proto)}</h2><ul>"
                 + "".join(f'<li class="lvl{k}">{html.escape(x)}</li>' for k, x in lines)
                 + "</ul>")
    return md, page


def _level(line: str) -> int:
    """A closing line's depth: two spaces per level, under the protocol's first line."""
    return max(0, (len(line) - len(line.lstrip(" "))) // 2 - 1)


def _facts(transcripts: Sequence[Transcript]) -> dict[str, Any]:
    return {
        "items": len({metrics.item_id(t) for t in transcripts}),
        "debates": len(transcripts),
        "debates_complete": sum(t.status == "complete" for t in transcripts),
        "debates_awaiting": sum(t.status == "awaiting_verdict" for t in transcripts),
        "debates_failed": sum(t.status == "failed" for t in transcripts),
    }


def judged_by_kind(judged: Sequence[Transcript]) -> dict[str, tuple[int, int]]:
    """Per kind of judge (human, llm, oracle): (judgments, debates judged)."""
    out: dict[str, tuple[int, set[str]]] = {}
    for t in judged:
        kind = str((t.meta.get("judgment") or {}).get("kind", "human"))
        n, ids = out.get(kind, (0, set()))
        ids.add(t.id.split("#", 1)[0])
        out[kind] = (n + 1, ids)
    return {k: (n, len(ids)) for k, (n, ids) in sorted(out.items())}


def status_note(facts: dict[str, Any], judged: Sequence[Transcript], run_dir: str) -> str:
    """What the tables cover when not every debate is complete: debates awaiting a verdict
    are waiting, not failed (what has been judged, and what to do next); failed ones are
    resumed by running the same command again."""
    done, n = facts["debates_complete"], facts["debates"]
    waiting, failed = facts["debates_awaiting"], facts["debates_failed"]
    if done == n:
        return ""
    parts = [f"<b>{done} of {n} debates are complete</b>; the main tables cover only those."]
    if waiting:
        parts.append(
            f"{waiting} await a verdict (not failed): judge them with <code>llmdebate assign"
            "</code> and <code>llmdebate serve</code> (people), <code>llmdebate judge "
            f"{html.escape(run_dir)} --judge-id ID</code> (a terminal), <code>--model SPEC"
            "</code> or "
            f"<code>--oracle</code>, then run <code>llmdebate report {html.escape(run_dir)}"
            "</code> again.")
        kinds = judged_by_kind(judged)
        if kinds:
            rows = [[k, str(j), str(d), str(waiting)] for k, (j, d) in kinds.items()]
            parts.append("What has been judged so far (judged.jsonl; the judges section below "
                         "tabulates it):" + report_html.table(
                             ["judge kind", "judgments", "debates judged",
                              "debates awaiting a verdict"], rows))
        else:
            parts.append("No judgment has been made yet.")
    if failed:
        parts.append(f"{failed} failed: listed with their reasons below; run the same "
                     "<code>llmdebate run</code> command again to resume them.")
    return f'<div class="caveat">{" ".join(parts)}</div>'


def _notes(info: dict[str, Any], facts: dict[str, Any]) -> str:
    debate = info.get("debate") or {}
    models = role_models(info)
    rows = [
        ["dataset", str((info.get("dataset") or {}).get("path", ""))],
        ["items", str(facts["items"])],
        ["protocols", ", ".join(info.get("protocols") or [])],
        ["models (prover / estimator / judge)", " / ".join(models.values())],
        [
            "probability methods (prover / estimator / judge)",
            " / ".join(
                str((info.get(r) or {}).get(k, ""))
                for r, k in (
                    ("prover", "belief_method"),
                    ("estimator", "method"),
                    ("judge", "method"),
                )
            ),
        ],
        [
            "debate (depth, width, ε, ρ)",
            f"{debate.get('depth')}, {debate.get('width')}, {debate.get('epsilon')}, "
            f"{debate.get('rho')}",
        ],
        ["two-sided / consultancy rounds", f"{info.get('rounds')} ({info.get('mode')})"],
        ["seed", str(info.get("seed"))],
        [
            "debates complete / awaiting a verdict / failed / in all",
            f"{facts['debates_complete']} / {facts['debates_awaiting']} / "
            f"{facts['debates_failed']} / {facts['debates']}",
        ],
    ]
    return "<h2>Setup</h2>" + report_html.table(["setting", "value"], rows)
