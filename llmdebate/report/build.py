"""Writing a comparison's outputs from its transcripts: JSON, Markdown, plots, HTML."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llmdebate.report import html as report_html
from llmdebate.report import metrics, plots, tables
from llmdebate.report.comparison import CompareConfig, write_json
from llmdebate.schemas import Transcript

WEAK_MODELS = ("local",)


def caveat(cfg: CompareConfig) -> str:
    """What the numbers do and do not show (HTML, trusted text with escaped model names)."""
    names = {cfg.models.debater, cfg.models.estimator, cfg.models.judge}
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


def write_outputs(
    cfg: CompareConfig,
    transcripts: Sequence[Transcript],
    run_dir: Path,
    *,
    facts: dict[str, Any] | None = None,
    formal: bool = False,
) -> dict[str, Any]:
    """comparison.json, comparison.md, plots/*.png and report.html in ``run_dir``."""
    m = metrics.compute(
        transcripts, seed=cfg.seed, n_boot=cfg.bootstrap, n_bins=cfg.calibration_bins
    )
    m["run"] = {"name": cfg.name, "models": cfg.models.model_dump(), **(facts or {})}
    if formal or cfg.formal:
        m["formal"] = formal_section()
    write_json(run_dir / "comparison.json", m)
    (run_dir / "comparison.md").write_text(tables.comparison_markdown(m, f"Comparison: {cfg.name}"))
    pngs = plots.all_plots(m)
    (run_dir / "plots").mkdir(exist_ok=True)
    for name, png in pngs.items():
        (run_dir / "plots" / f"{name}.png").write_bytes(png)
    notes = _notes(cfg, facts or {})
    done, planned = (facts or {}).get("debates_complete"), (facts or {}).get("debates_planned")
    if done is not None and planned and done < planned:
        notes = (
            f'<div class="caveat"><b>Incomplete run:</b> {done} of {planned} debates are '
            "complete; the tables cover only those. Re-run the same command to resume."
            "</div>"
        ) + notes
    page = report_html.render(
        m,
        transcripts,
        pngs,
        title=f"Protocol comparison: {cfg.name}",
        caveat=caveat(cfg),
        notes=notes,
    )
    (run_dir / "report.html").write_text(page, encoding="utf-8")
    return m


def _notes(cfg: CompareConfig, facts: dict[str, Any]) -> str:
    rows = [
        ["dataset", cfg.dataset],
        ["items", str(facts.get("items", ""))],
        ["protocols", ", ".join(cfg.protocols)],
        [
            "models (debater / estimator / judge)",
            f"{cfg.models.debater} / {cfg.models.estimator} / {cfg.models.judge}",
        ],
        ["probability method", cfg.method],
        [
            "debate (depth, width, ε, ρ)",
            f"{cfg.debate.depth}, {cfg.debate.width}, {cfg.debate.epsilon}, {cfg.debate.rho}",
        ],
        ["two-sided / consultancy rounds", f"{cfg.rounds} ({cfg.mode})"],
        ["seed", str(cfg.seed)],
        [
            "debates complete / planned",
            f"{facts.get('debates_complete', '')} / {facts.get('debates_planned', '')}",
        ],
        ["wall time of this invocation (s)", str(facts.get("wall_s", ""))],
    ]
    return "<h2>Setup</h2>" + report_html.table(["setting", "value"], rows)
