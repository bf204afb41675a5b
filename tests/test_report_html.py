"""The HTML report: self-contained, every model/dataset string escaped, the claim tree shown."""

from __future__ import annotations

import asyncio
import functools
import re

from llmdebate.data import Item
from llmdebate.models import Model, ScriptedBackend
from llmdebate.protocols.asymmetric import run_pe
from llmdebate.protocols.common import ProtocolSettings, RoleModels
from llmdebate.protocols.direct import run_direct
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
    deb = Model(ScriptedBackend(responder=lambda m: f"Speech {EVIL}", name="d"))
    r = RoleModels(
        deb,
        Model(ScriptedBackend(name="e", default_probability=0.3)),
        Model(ScriptedBackend(name="j", default_probability=0.7)),
        decomposer="facts",
    )
    s = ProtocolSettings()

    async def go() -> list:
        return [
            await run_direct(ITEM, r, s, debate_id="direct/i/direct"),
            await run_pe(ITEM, r, s, variant="honest", seed=1, debate_id="pe/i/h"),
            await run_pe(ITEM, r, s, variant="dishonest", seed=1, debate_id="pe/i/d"),
        ]

    ts = asyncio.run(go())
    m = metrics.compute(ts, n_boot=100)
    return html.render(m, ts, plots.all_plots(m), title=f"T {EVIL}", caveat="weak model")


def test_report_escapes_every_model_and_dataset_string() -> None:
    page = _report()
    assert EVIL not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert "<script" not in page.lower()
    assert "no &amp; more" in page


def test_report_is_self_contained_with_inlined_plots() -> None:
    page = _report()
    assert not re.search(r'(src|href)="(?!data:)', page)
    assert page.count('src="data:image/png;base64,') == 4


def test_claim_tree_shows_probabilities_draws_path_and_rewards() -> None:
    page = _report()
    assert "All of these are true: Fact" in page  # the facts decomposition, escaped
    assert "b = 0.3" in page and "sampled z =" in page and "u = " in page
    assert "← recursion (chosen)" in page and 'class="path"' in page
    assert "prover direction s =" in page and "reward r_1 =" in page and "judge verdict O =" in page
    assert "[gold: true]" in page and "[gold: false]" in page
