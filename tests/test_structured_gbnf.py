"""JSON schema -> GBNF: every reply schema's grammar compiles with xgrammar's GBNF parser,
admits the schema-valid replies and refuses the others; the grammar goes to the server in
``structured: grammar`` mode."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import xgrammar
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xgrammar.testing import _is_grammar_accept_string

from llmdebate.agents.llm import LLMProver
from llmdebate.agents.replies import (
    decomposition_schema,
    direction_schema,
    index_schema,
    verdict_schema,
)
from llmdebate.core.roles import DebateContext
from llmdebate.core.schemas import Claim, DebateConfig
from llmdebate.elicit.methods import PROBABILITY_SCHEMA
from llmdebate.models import get_model
from llmdebate.models.gbnf import GrammarError, literal, schema_to_gbnf
from llmdebate.models.structured import OutputSchema

try:
    from tests.fixtures.fake_server import FakeServer
except ImportError:  # tests/ is not a package: pytest put tests/ itself on sys.path
    from fixtures.fake_server import FakeServer

SCHEMAS = {
    "decomposition": decomposition_schema(3),
    "decomposition1": decomposition_schema(1),
    "index": index_schema(4),
    "direction": direction_schema(),
    "verdict": verdict_schema(),
    "probability": PROBABILITY_SCHEMA,
}
_GRAMMARS: dict[str, Any] = {}


def grammar(name: str) -> Any:
    if name not in _GRAMMARS:
        _GRAMMARS[name] = xgrammar.Grammar.from_ebnf(schema_to_gbnf(SCHEMAS[name].schema))
    return _GRAMMARS[name]


def accepts(name: str, text: str) -> bool:
    return bool(_is_grammar_accept_string(grammar(name), text))


def conforms(value: Any, schema: dict[str, Any]) -> bool:
    """An independent check of the JSON schema subset the replies use."""
    if "const" in schema:
        return bool(value == schema["const"])
    if "enum" in schema:
        return any(value == v and type(value) is type(v) for v in schema["enum"])
    if "anyOf" in schema:
        return any(conforms(value, s) for s in schema["anyOf"])
    kind = schema["type"]
    if kind == "null":
        return value is None
    if kind == "boolean":
        return isinstance(value, bool)
    if kind in ("integer", "number"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if kind == "integer" and not isinstance(value, int):
            return False
        return schema.get("minimum", -1e300) <= value <= schema.get("maximum", 1e300)
    if kind == "string":
        return isinstance(value, str) and (
            schema.get("minLength", 0) <= len(value) <= schema.get("maxLength", 1 << 30)
        )
    if kind == "array":
        return (
            isinstance(value, list)
            and schema.get("minItems", 0) <= len(value) <= schema.get("maxItems", 1 << 30)
            and all(conforms(v, schema["items"]) for v in value)
        )
    if kind == "object":
        props = schema["properties"]
        return (
            isinstance(value, dict)
            and list(value) == list(props)  # the grammar writes keys in the listed order
            and all(conforms(value[k], s) for k, s in props.items())
        )
    raise AssertionError(kind)


def test_every_reply_schema_compiles() -> None:
    for name, schema in SCHEMAS.items():
        text = schema_to_gbnf(schema.schema)
        assert text.startswith("root ::= "), name
        assert grammar(name) is not None


# strings the grammar must treat as JSON: quotes, backslashes, control characters, non-ASCII;
# mostly valid replies, with invalid fields mixed in
CHARS = st.characters(codec="utf-8", exclude_categories=["Cs"])
TEXT = st.text(alphabet=CHARS, min_size=1, max_size=120) | st.text(alphabet=CHARS, max_size=130)
RULES = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(["and", "or", "at_least", "majority", "expr"]) | st.just("xor"),
        "k": st.none() | st.integers(0, 16) | st.integers(-2, 20),
        "expr": st.none() | st.text(max_size=60) | st.text(max_size=70),
    }
)
DECOMPOSITIONS = st.fixed_dictionaries(
    {
        "subclaims": st.lists(TEXT, min_size=2, max_size=3) | st.lists(TEXT, max_size=4),
        "rule": RULES,
    }
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DECOMPOSITIONS, st.booleans(), st.booleans())
def test_decomposition_grammar_matches_the_schema(
    reply: dict[str, Any], compact: bool, ascii_only: bool
) -> None:
    seps = (",", ":") if compact else (", ", ": ")
    text = json.dumps(reply, separators=seps, ensure_ascii=ascii_only)
    schema = SCHEMAS["decomposition"].schema
    assert accepts("decomposition", text) == conforms(reply, schema), text


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(
        st.fixed_dictionaries({"index": st.integers(-3, 8)}),
        st.fixed_dictionaries(
            {"probability": st.floats(-0.5, 1.5) | st.floats(0, 1e-3) | st.integers(-1, 2)}
        ),
        st.fixed_dictionaries({"direction": st.sampled_from(["higher", "lower", "right", "up"])}),
        st.fixed_dictionaries({"verdict": st.booleans() | st.none() | st.integers(0, 1)}),
    )
)
def test_small_reply_grammars_match_their_schemas(reply: dict[str, Any]) -> None:
    (key,) = reply
    name = {"index": "index", "probability": "probability"}.get(key, key)
    text = json.dumps(reply)
    assert accepts(name, text) == conforms(reply, SCHEMAS[name].schema), text


@pytest.mark.parametrize(
    "text",
    [
        '{"subclaims": ["a", "b"]}',  # a required key missing
        '{"subclaims": ["a", "b"], "rule": {"kind": "and", "k": null, "expr": null}, "x": 1}',
        '{"rule": {"kind": "and", "k": null, "expr": null}, "subclaims": ["a", "b"]}',
        '{"subclaims": ["a", "b"], "rule": {"kind": "and", "k": 1.5, "expr": null}}',
        '{"subclaims": ["a\nb", "c"], "rule": {"kind": "and", "k": null, "expr": null}}',
        '{"subclaims": ["a", "b"], "rule": {"kind": "and", "k": 01, "expr": null}}',
        '{"subclaims": ["a", "b",], "rule": {"kind": "and", "k": null, "expr": null}}',
    ],
)
def test_decomposition_grammar_refuses_malformed_json(text: str) -> None:
    assert not accepts("decomposition", text)
    assert accepts(
        "decomposition",
        '{"subclaims": ["a", "b"], "rule": {"kind": "and", "k": null, "expr": null}}',
    )


def test_probability_grammar_admits_only_the_unit_interval() -> None:
    for ok in ("0", "1", "0.73", "1.0", "0.000001", "1e-05", "9.5E-1", "-0.0", repr(0.1 + 0.2)):
        assert accepts("probability", '{"probability": ' + ok + "}"), ok
    for bad in ("1.5", "-0.1", "-0.01", "2", "01", ".5", "1e0", "9.5e-0", "5e2", '"0.5"'):
        assert not accepts("probability", '{"probability": ' + bad + "}"), bad


def test_other_bounds_and_shapes() -> None:
    wide = {"type": "integer", "minimum": 1, "maximum": 1000}
    assert "positive" in schema_to_gbnf(wide)  # too wide to list: the sign and 0 go
    g = xgrammar.Grammar.from_ebnf(schema_to_gbnf(wide))
    assert _is_grammar_accept_string(g, "999") and not _is_grammar_accept_string(g, "0")
    free = {"type": "array", "items": {"type": "number"}}
    g = xgrammar.Grammar.from_ebnf(schema_to_gbnf(free))
    for ok in ("[]", "[-1.5e3]", "[0, 2.25]"):
        assert _is_grammar_accept_string(g, ok), ok
    assert not _is_grammar_accept_string(g, "[1,]")
    with pytest.raises(GrammarError, match="every property must be required"):
        schema_to_gbnf({"type": "object", "properties": {"a": {"type": "string"}}})
    with pytest.raises(GrammarError, match=r"root\.a: type 'date'"):
        schema_to_gbnf({"type": "object", "properties": {"a": {"type": "date"}}, "required": ["a"]})
    assert literal('a"\\\n\x01') == '"a\\"\\\\\\n\\x01"'


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Iterator[FakeServer]:
    monkeypatch.setenv("LLMDEBATE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with FakeServer() as s:
        yield s


async def test_grammar_mode_sends_the_converted_schema(server: FakeServer) -> None:
    good = {
        "subclaims": [
            "91 has a divisor d with 2 <= d < 6.",
            "91 has a divisor d with 6 <= d < 10.",
        ],
        "rule": {"kind": "or", "k": None, "expr": None},
    }
    server.responder = lambda body: json.dumps(good)
    server.enforce_fields = {"grammar"}  # the probe before the first call shows it applied
    model = get_model(
        "openai/llama", base_url=server.url, structured="grammar", endpoint="completions"
    )
    c = DebateContext(config=DebateConfig(depth=2, width=2), rng=np.random.default_rng(0))
    claim = Claim(text="91 has a divisor d with 2 <= d < 10.", id="x")
    dec = await LLMProver(model).decompose(claim, 2, c)
    assert dec.rule.kind == "or"
    body = server.bodies[1]
    assert body["grammar"] == schema_to_gbnf(decomposition_schema(2).schema)
    assert "response_format" not in body and c.calls[0].constrained is True
    assert _is_grammar_accept_string(xgrammar.Grammar.from_ebnf(body["grammar"]), json.dumps(good))
    assert schema_to_gbnf(OutputSchema.of("x", {"type": "null"}).schema) == (
        'root ::= "null"\nws ::= " "?\n'
    )
