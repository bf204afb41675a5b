"""The HTML report: self-contained, every model/dataset string escaped, the claim tree shown."""

from __future__ import annotations

import asyncio
import functools
import re

from llmdebate.agents.factory import Team
from llmdebate.data import Item
from llmdebate.experiment.config import ExperimentConfig
from llmdebate.experiment.jobs import make_jobs
from llmdebate.models import Model, ScriptedBackend
from llmdebate.prompts import Prompts
from llmdebate.protocols.families import play
from llmdebate.protocols.registry import get_protocol
from llmdebate.protocols.spec import ProtocolSettings
from llmdebate.report import html, metrics, plots

EVIL = '<script>alert("x")</script>'
ITEM = Item(
    id="i<1>",
    question=f"Is {EVIL} safe?",
    choices=["yes", "no & more"],
    answer="yes",
    facts=[f"Fact {EVIL}."],
)


@functools.cache
def _report() -> str:
    cfg = ExperimentConfig.model_validate(
        {
            "protocols": ["direct", "prover-estimator"],
            "seed": 1,
            "debate": {"depth": 1, "width": 2},
            "prover": {"model": "scripted", "decomposer": "formal"},  # the item's gold facts
        }
    )
    models = {
        "prover": Model(ScriptedBackend(responder=lambda m: f"Speech {EVIL}", name="d")),
        "estimator": Model(ScriptedBackend(name="e", default_probability=0.3)),
        "judge": Model(ScriptedBackend(name="j", default_probability=0.7)),
    }
    team = Team(models, Prompts(), cfg.prover, cfg.estimator, cfg.judge)
    settings = ProtocolSettings(debate=cfg.debate)
    jobs = make_jobs([ITEM], cfg)
    assert [j.spec.debate_id for j in jobs] == [
        "direct/i<1>/direct",
        "prover-estimator/i<1>/honest",
        "prover-estimator/i<1>/dishonest",
    ]

    async def go() -> list:
        out = []
        for j in jobs:
            t = await play(get_protocol(j.spec.protocol), j.spec, team, settings, [])
            t.meta.update(j.spec.meta())
            out.append(t)
        return out

    ts = asyncio.run(go())
    assert all(t.status == "complete" for t in ts)
    m = metrics.compute(ts, n_boot=100)
    return html.render(m, ts, plots.all_plots(m), title=f"T {EVIL}", caveat="weak model")


def test_report_escapes_every_model_and_dataset_string() -> None:
    page = _report()
    assert EVIL not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert "<script" not in page.lower()
    assert "no &amp; more" in page
    assert "T &lt;script&gt;" in page  # the title too
    assert "i&lt;1&gt;" in page and "i<1>" not in page  # item ids


def test_report_is_self_contained_with_inlined_plots() -> None:
    page = _report()
    assert not re.search(r'(src|href)="(?!data:)', page)
    assert page.count('src="data:image/png;base64,') == 4


def test_claim_tree_shows_probabilities_draws_path_and_rewards() -> None:
    page = _report()
    assert "All of these are true: Fact" in page  # the facts decomposition, escaped
    assert "b = 0.3" in page and "sampled z =" in page and "u = " in page
    assert "← recursion (chosen)" in page and 'class="path"' in page
    assert "prover direction s =" in page and "judge verdict O =" in page
    # one unit on the page: every reward and payoff of a debate in units of r^(d+1)
    assert "reward r_1 / r^(d+1) =" in page and "E[r_1 | path] / r^(d+1) =" in page
    assert "r_init / r^(d+1) =" in page and "prover payoff R_A / r^(d+1) =" in page
    assert "reward r_1 =" not in page and "prover payoff R_A =" not in page
    assert "[gold: true]" in page and "[gold: false]" in page
