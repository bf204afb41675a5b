"""Constrained decoding on the embedded Gemma 3 270M: every decomposition is schema-valid.

(Whether the splits are *right* is another matter: this weak model mostly copies the claim
into its first subclaim; the run summary grades that, see llmdebate/agents/audit.py.)"""

from __future__ import annotations

import pytest

from llmdebate.agents.llm import decompose_tokens
from llmdebate.agents.parsing import parse_decomposition
from llmdebate.agents.replies import DecompositionReply, decomposition_schema
from llmdebate.core.schemas import Claim
from llmdebate.models import GenerateConfig, Model, create_backend

pytestmark = pytest.mark.integration

EXAMPLE = (
    "Split a claim into two subclaims.\n\nClaim: 221 has no divisor d with 2 <= d < 15.\n"
    'JSON: {"subclaims": ["221 has no divisor d with 2 <= d < 8.", "221 has no divisor d '
    'with 8 <= d < 15."], "rule": {"kind": "and", "k": null, "expr": null}}'
)
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
    # a short prompt keeps the test quick; the decoding, not the prompt, makes the reply valid
    batch = [[{"role": "user", "content": f"{EXAMPLE}\n\nClaim: {c}"}] for c in CLAIMS]
    config = GenerateConfig(max_tokens=decompose_tokens(2), json_schema=decomposition_schema(2))
    outs = await model.generate_many(batch, config)  # one padded, constrained pass
    for claim, out in zip(CLAIMS, outs, strict=True):
        assert out.constrained
        reply = DecompositionReply.model_validate_json(out.text)  # schema-valid as decoded
        assert len(reply.subclaims) == 2  # minItems = maxItems = width
        dec = parse_decomposition(out.text, Claim(text=claim), 2, check_repeats=False)
        assert dec.width == 2
