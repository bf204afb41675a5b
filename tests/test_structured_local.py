"""Constrained decoding on the embedded Gemma 3 270M: every decomposition is schema-valid."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from llmdebate.agents.base import DebateContext
from llmdebate.agents.llm import LLMProver
from llmdebate.agents.replies import DecompositionReply
from llmdebate.models import Model, create_backend
from llmdebate.schemas import Claim, DebateConfig

pytestmark = pytest.mark.integration

CLAIMS = [
    "2647 has no divisor d with 2 <= d < 52.",
    "2183 has a divisor d with 2 <= d < 47.",
    "407 has a divisor d with 2 <= d < 21.",
    "2027 has no divisor d with 2 <= d < 46.",
    "1009 has no divisor d with 2 <= d < 32.",
    "899 has a divisor d with 2 <= d < 30.",
    "113 has no divisor d with 2 <= d < 11.",
    "323 has a divisor d with 10 <= d < 18.",
    "The Moon orbits the Earth and the Earth orbits the Sun.",
    "Water boils at 100 degrees Celsius at sea level and freezes at 0 degrees Celsius.",
]


async def test_constrained_decompositions_are_valid_on_every_claim() -> None:
    model = Model(create_backend("local"), use_cache=False)
    ctx = DebateContext(config=DebateConfig(depth=2, width=2), rng=np.random.default_rng(0))
    prover = LLMProver(model, max_tokens=96)
    decs = await asyncio.gather(
        *(prover.decompose(Claim(text=c, id=f"c{i}"), 2, ctx) for i, c in enumerate(CLAIMS))
    )
    assert len(decs) == len(CLAIMS) and all(1 <= d.width <= 2 for d in decs)
    calls = [c for c in ctx.calls if c.act == "decompose"]
    assert all(c.constrained is True for c in calls)
    # every reply, first attempts included, is valid under the schema it was decoded with
    for c in calls:
        DecompositionReply.model_validate_json(c.completion or "")
    assert sorted(a["claim"] for a in prover.audits) == sorted(f"c{i}" for i in range(10))
