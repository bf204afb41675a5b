"""Schemas, parsing, the prompt batcher and the decomposition audit, without a model."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmdebate.agents.audit import audit_decomposition, decomposition_summary, exact_split
from llmdebate.agents.llm import LLMProver
from llmdebate.agents.parsing import ReplyError, parse_decomposition, parse_direction, parse_index
from llmdebate.agents.replies import DecompositionReply, decomposition_schema, index_schema
from llmdebate.core.roles import DebateContext
from llmdebate.core.schemas import Claim, CombinationRule, DebateConfig, Decomposition, Transcript
from llmdebate.data.problems import formal_decomposition
from llmdebate.elicit import parse_probability
from llmdebate.errors import InvalidOutputError
from llmdebate.models import GenerateConfig, Model, ScriptedBackend
from llmdebate.models.batching import PromptBatcher
from llmdebate.models.cache import cache_key
from llmdebate.models.gbnf import schema_to_gbnf
from llmdebate.models.structured import OutputSchema, server_fields, strict_schema
from llmdebate.prompts import Prompts

META = {"problem": "divisors"}


def test_strict_schema_requires_every_property_and_inlines_refs() -> None:
    schema = strict_schema(DecompositionReply.model_json_schema())
    assert "$defs" not in json.dumps(schema) and "$ref" not in json.dumps(schema)
    assert schema["required"] == ["subclaims", "rule"]  # the order the model writes them
    assert schema["properties"]["rule"]["additionalProperties"] is False
    subs = decomposition_schema(3).schema["properties"]["subclaims"]
    assert (subs["minItems"], subs["maxItems"]) == (2, 3)
    assert decomposition_schema(1).schema["properties"]["subclaims"]["minItems"] == 1
    assert index_schema(4).schema["properties"]["index"] == {
        "maximum": 4,
        "minimum": 1,
        "type": "integer",
    }


def test_server_fields_per_mode() -> None:
    s = decomposition_schema(2)
    assert server_fields("none", s) is None
    assert server_fields("grammar", s) == {"grammar": schema_to_gbnf(s.schema)}
    odd = OutputSchema.of("odd", {"type": "object", "properties": {"a": {"type": "string"}}})
    assert server_fields("grammar", odd) is None  # outside the converter's subset
    assert server_fields("grammar", s, {"decomposition": "root ::= x"}) == {"grammar": "root ::= x"}
    assert server_fields("response_format", s)["response_format"]["json_schema"]["strict"]


def test_schema_enters_the_cache_key_only_when_set() -> None:
    msgs = [{"role": "user", "content": "x"}]
    plain = cache_key("m", msgs, GenerateConfig(), 0)
    assert plain == cache_key("m", msgs, GenerateConfig(json_schema=None), 0)
    assert plain != cache_key("m", msgs, GenerateConfig(json_schema=decomposition_schema(2)), 0)


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ('{"subclaims": ["a b", "A  b."], "rule": {"kind": "and"}}', "repeats subclaim 1"),
        ('{"subclaims": ["P holds"], "rule": "and"}', "repeats the claim"),
        ('{"subclaims": ["x"], "rule": {"kind": "nand"}}', "rule.kind"),
        ('{"subclaims": ["x"], "rule": {"kind": "at_least"}}', "needs k"),
    ],
)
def test_what_the_schema_cannot_express_is_rejected(reply: str, message: str) -> None:
    with pytest.raises(ReplyError, match=message):
        parse_decomposition(reply, Claim(text="P holds."), 2)


def test_structured_small_replies_parse() -> None:
    assert parse_index('{"index": 2}', 3) == 1
    with pytest.raises(ReplyError, match="not a number from 1 to 3"):
        parse_index('{"index": 4}', 3)
    assert parse_direction('{"direction": "lower"}') == -1
    assert parse_probability('{"probability": 1e-05}') == pytest.approx(1e-5)
    with pytest.raises(ValueError, match="must be a number"):
        parse_probability('{"probability": "high"}')


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lo=st.integers(2, 50),
    span=st.integers(1, 60),
    q=st.integers(1, 4),
    none=st.booleans(),
    n=st.integers(4, 5000),
)
def test_the_problems_own_split_is_exact_and_right(
    lo: int, span: int, q: int, none: bool, n: int
) -> None:
    parent = Claim(text=f"{n} has {'no' if none else 'a'} divisor d with {lo} <= d < {lo + span}.")
    dec = formal_decomposition(parent, META, q)
    assert dec is not None
    assert exact_split(parent, dec) is True
    assert audit_decomposition(parent, dec, META)["rule_right"] is True


def test_audit_of_a_wrong_split() -> None:
    parent = Claim(text="91 has a divisor d with 2 <= d < 10.")
    wrong = Decomposition(
        subclaims=[
            Claim(text="91 has a divisor d with 2 <= d < 5."),
            Claim(text="91 has a divisor d with 6 <= d < 10."),  # a gap, and AND for "a divisor"
        ],
        rule=CombinationRule(kind="and"),
    )
    audit = audit_decomposition(parent, wrong, META)
    assert audit["parent_truth"] == 1 and audit["subclaim_truth"] == [0, 1]
    assert audit["rule_right"] is False and audit["exact_split"] is False


def test_summary_says_plainly_when_most_decompositions_are_wrong() -> None:
    good = {
        "source": "model",
        "attempts": 1,
        "subclaim_truth": [1, 1],
        "rule_right": True,
        "exact_split": True,
    }
    bad = {
        "source": "model",
        "attempts": 2,
        "subclaim_truth": [0, None],
        "rule_right": None,
        "exact_split": False,
    }
    t = Transcript(id="t", config=DebateConfig(), seed=0, meta={"decompositions": [good, bad, bad]})
    s = decomposition_summary([t])
    assert s["model_decompositions"] == 3 and s["valid_at_first_attempt"] == pytest.approx(1 / 3)
    assert s["exact_splits"] == pytest.approx(1 / 3) and s["subclaims_ungradable"] == 2
    assert s["assessment"].startswith("MOSTLY WRONG")
    t2 = Transcript(id="t", config=DebateConfig(), seed=0, meta={"decompositions": [good]})
    assert decomposition_summary([t2])["assessment"].startswith("mostly right")


async def test_prover_audits_model_decompositions_into_the_debate() -> None:
    reply = json.dumps(
        {
            "subclaims": [
                "91 has a divisor d with 2 <= d < 6.",
                "91 has a divisor d with 6 <= d < 10.",
            ],
            "rule": {"kind": "or", "k": None, "expr": None},
        }
    )
    model = Model(ScriptedBackend(replies=[reply]))
    ctx = DebateContext(
        config=DebateConfig(width=2), rng=np.random.default_rng(0), item={"meta": META}
    )
    prover = LLMProver(model)
    await prover.decompose(Claim(text="91 has a divisor d with 2 <= d < 10."), 2, ctx)
    (audit,) = prover.audits
    assert audit["exact_split"] is True and audit["rule_right"] is True
    assert audit["subclaim_truth"] == [0, 1] and audit["attempts"] == 1
    assert ctx.calls[0].constrained is False  # the scripted double cannot constrain


def test_summary_names_calls_that_were_never_answered() -> None:
    from llmdebate.core.schemas import ModelCallRecord

    def call(**kw: object) -> ModelCallRecord:
        return ModelCallRecord(role="prover", act="decompose", model="m", **kw)  # type: ignore

    failed = call(error="RetriesExhaustedError: HTTP 500: response_format")
    t = Transcript(id="t", config=DebateConfig(), seed=0, calls=[failed, failed, failed])
    s = decomposition_summary([t])
    assert s["unanswered_calls"] == 3
    assert s["assessment"].startswith("no decomposition was ever answered: all 3 calls failed")
    assert "HTTP 500" in s["assessment"] and "valid decomposition" not in s["assessment"]
    t2 = Transcript(id="t", config=DebateConfig(), seed=0,
                    calls=[failed, call(completion="no", invalid="not JSON")])
    assert decomposition_summary([t2])["assessment"] == (
        "the model produced no valid decomposition in 1 answered attempt (1 more call failed "
        "before a reply)"
    )


def test_decompose_prompt_has_examples_split_to_the_width() -> None:
    text = Prompts().render(
        "decompose", claim="C", width=3, k=1, depth=1, top_claim="C", context=None
    )[-1]["content"]
    example = json.loads(text.split("Example JSON: ")[1].splitlines()[0])
    parent = Claim(text="221 has no divisor d with 2 <= d < 15.")
    dec = parse_decomposition(json.dumps(example), parent, 3)
    assert dec.width == 3 and exact_split(parent, dec) is True
    assert text.rstrip().endswith("Claim: C")


async def test_batcher_groups_by_settings_and_bounds_batches() -> None:
    sent: list[tuple[list[str], str]] = []

    async def send(prompts: list[str], settings: str) -> list[str]:
        sent.append((prompts, settings))
        return [f"{settings}:{p}" for p in prompts]

    batcher: PromptBatcher[str, str] = PromptBatcher(send, max_batch=3)
    jobs = [batcher.submit(f"p{i}", "a" if i < 5 else "b", "A" if i < 5 else "B") for i in range(7)]
    out = await asyncio.gather(*jobs)
    assert out == ["A:p0", "A:p1", "A:p2", "A:p3", "A:p4", "B:p5", "B:p6"]
    assert sorted(len(p) for p, _ in sent) == [2, 2, 3] and batcher.requests == 3


async def test_batcher_fails_every_call_of_a_failed_request() -> None:
    async def send(prompts: list[str], settings: None) -> list[str]:
        raise RuntimeError("server down")

    batcher: PromptBatcher[None, str] = PromptBatcher(send)
    results = await asyncio.gather(
        *(batcher.submit(p, "k", None) for p in "ab"), return_exceptions=True
    )
    assert all(isinstance(r, RuntimeError) for r in results)


async def test_keep_invalid_plays_a_well_formed_but_invalid_split() -> None:
    parent = Claim(text="91 has a divisor d with 2 <= d < 10.")
    copy = json.dumps(
        {"subclaims": [parent.text, "91 has a divisor d with 10 <= d < 91."], "rule": "or"}
    )
    ctx = DebateContext(
        config=DebateConfig(width=2), rng=np.random.default_rng(0), item={"meta": META}
    )
    strict = LLMProver(Model(ScriptedBackend(replies=[copy, copy])), max_attempts=2)
    with pytest.raises(InvalidOutputError, match="repeats the claim"):
        await strict.decompose(parent, 2, ctx)
    lenient = LLMProver(
        Model(ScriptedBackend(replies=[copy, copy])), max_attempts=2, keep_invalid=True
    )
    dec = await lenient.decompose(parent, 2, ctx)
    assert dec.subclaims[0].text == parent.text
    (audit,) = lenient.audits
    assert audit["valid"] is False and "repeats the claim" in audit["invalid"]
    assert audit["attempts"] == 2 and audit["subclaim_truth"] == [1, 1]  # 13 divides 91
    assert audit["rule_right"] is True and audit["exact_split"] is False
    assert all("repeats the claim" in (c.invalid or "") for c in ctx.calls[-2:])
    summary = decomposition_summary(
        [Transcript(id="t", config=DebateConfig(), seed=0, meta={"decompositions": [audit]})]
    )
    assert summary["played_invalid"] == 1 and summary["assessment"].startswith("MOSTLY WRONG")
