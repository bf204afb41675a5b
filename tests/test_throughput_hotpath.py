"""The per-call hot path: batched text completions on the raw HTTP/1.1 fast path, call records
built without validation that still equal validated ones, and prompts rendered outside the
sandbox only for the shipped templates."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jinja2.sandbox import SandboxedEnvironment

from llmdebate.core.schemas import ModelCallRecord
from llmdebate.elicit import estimate
from llmdebate.models import GenerateConfig, get_model
from llmdebate.models.http1 import HTTP1Pool
from llmdebate.prompts import ACTS, PromptError, Prompts

try:
    from tests.fixtures.fake_server import FakeServer
except ImportError:  # pytest run from inside tests/
    from fixtures.fake_server import FakeServer  # type: ignore[no-redef]


@pytest.fixture()
def server() -> Iterator[FakeServer]:
    with FakeServer() as s:
        yield s


@pytest.fixture()
def fast_posts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths of the requests sent by the raw HTTP/1.1 pool."""
    seen: list[str] = []
    send = HTTP1Pool.send

    def counted(self: HTTP1Pool, path: str, body: bytes, done: Any) -> None:
        seen.append(path)
        send(self, path, body, done)

    monkeypatch.setattr(HTTP1Pool, "send", counted)
    return seen


def _validated(rec: ModelCallRecord) -> ModelCallRecord:
    return ModelCallRecord.model_validate(rec.model_dump())


async def test_batched_text_completions_go_through_the_fast_path(
    server: FakeServer, fast_posts: list[str]
) -> None:
    m = get_model(
        "openai/base",
        base_url=server.url,
        use_cache=False,
        endpoint="completions",
        batch_prompts=True,
    )
    cfg = GenerateConfig(temperature=0.0, max_tokens=1, top_logprobs=5)
    prompts = [[{"role": "user", "content": f"Is {n} prime?"}] for n in (7, 9, 11, 15)]
    outs = await asyncio.gather(*(m.generate(p, cfg) for p in prompts))
    assert [o.batch_size for o in outs] == [4] * 4
    assert fast_posts == ["/v1/completions"]  # one request, on the fast path
    assert isinstance(server.bodies[-1]["prompt"], list) and len(server.bodies[-1]["prompt"]) == 4
    assert all(o.logprobs for o in outs)
    await m.aclose()


async def test_call_records_equal_their_validated_form(
    server: FakeServer, fast_posts: list[str]
) -> None:
    m = get_model("openai/gpt-x", base_url=server.url, use_cache=False, max_retries=0)
    log: list[ModelCallRecord] = []
    msgs = [{"role": "user", "content": "Is 7 prime?"}]
    est = await estimate(m, msgs, "logprobs", role="estimator", act="estimate", log=log)
    await m.generate(msgs, GenerateConfig(max_tokens=3), role="prover", act="evidence", log=log)
    assert 0.0 <= est.value <= 1.0 and len(log) == 2 and fast_posts
    for rec in log:
        again = _validated(rec)
        assert again == rec
        assert again.model_dump_json() == rec.model_dump_json()
        assert type(rec.cost) is float and type(rec.latency_s) is float
    assert log[0].logprobs and set(log[0].logprobs[0]) == {"token", "logprob", "top"}
    await m.aclose()


async def test_a_failed_call_is_recorded_validly(tmp_path: Path) -> None:
    m = get_model("openai/gpt-x", base_url="http://127.0.0.1:9/v1", use_cache=False, max_retries=0)
    log: list[ModelCallRecord] = []
    with pytest.raises(Exception):  # noqa: B017 - the refused connection, whichever class
        await estimate(m, [{"role": "user", "content": "x?"}], "logprobs", log=log)
    assert len(log) == 1 and log[0].error
    assert _validated(log[0]).model_dump_json() == log[0].model_dump_json()
    await m.aclose()


VARIABLES: dict[str, Any] = {
    "claim": "2647 has no divisor d with 52 <= d < 100.",
    "parent": "2647 has no divisor d with 2 <= d < 100.",
    "rule": "all 2 subclaims are true",
    "subclaims": ["2647 has no divisor d with 2 <= d < 52.", "{{ 7 * 7 }} literal"],
    "index": 2,
    "outcomes": [{"index": 1, "text": "x", "value": 1}],
    "context": "",
}


def test_shipped_prompts_render_alike_in_and_out_of_the_sandbox(tmp_path: Path) -> None:
    shipped = Prompts()
    sandboxed = Prompts(tmp_path)  # a user folder (empty: every act falls back to the default)
    assert isinstance(sandboxed.env, SandboxedEnvironment)
    assert not isinstance(shipped.env, SandboxedEnvironment)
    assert "estimate" in ACTS
    for _ in range(2):  # the second render comes from the compiled template
        got = shipped.render("estimate", **VARIABLES)
        assert got == sandboxed.render("estimate", **VARIABLES)
    assert "{{ 7 * 7 }} literal" in got[-1]["content"]  # data stays data


def test_user_templates_stay_in_the_sandbox(tmp_path: Path) -> None:
    (tmp_path / "estimate.j2").write_text(
        "{% block user %}{{ claim.__class__.__mro__ }}{% endblock %}"
    )
    with pytest.raises(PromptError):
        Prompts(tmp_path).render("estimate", **VARIABLES)


def test_trusted_records_equal_validated_ones_and_refuse_bad_fields() -> None:
    rec = ModelCallRecord.trusted(role="prover", model="m", completion="x", tokens_in=3)
    assert rec == ModelCallRecord(role="prover", model="m", completion="x", tokens_in=3)
    assert rec.model_fields_set == {"role", "model", "completion", "tokens_in"}
    assert list(rec.__dict__) == list(ModelCallRecord.model_fields)
    other = ModelCallRecord.trusted(role="prover", model="m")
    other.notes["k"] = 1  # default factories give each record its own container
    assert rec.notes == {} and rec.messages is not other.messages
    with pytest.raises(TypeError, match="unknown \\['colour'\\]"):
        ModelCallRecord.trusted(role="prover", model="m", colour="red")
    with pytest.raises(TypeError, match="missing \\['model'\\]"):
        ModelCallRecord.trusted(role="prover")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.booleans(),  # failed
            st.integers(0, 50),
            st.integers(0, 5),
            st.floats(0, 1),
            st.booleans(),
            st.integers(0, 3),
            st.sampled_from([None, True, False]),
            st.sampled_from([None, 2, 4, 8]),
        ),
        max_size=6,
    )
)
def test_an_estimates_totals_are_those_of_its_calls(calls: list[tuple[Any, ...]]) -> None:
    from llmdebate.elicit.methods import Trace, _totals

    trace = Trace(sent=[])
    for failed, t_in, t_out, cost, cached, retries, constrained, batch in calls:
        trace.calls.append(
            ModelCallRecord.trusted(
                role="estimator",
                model="m",
                error="boom" if failed else None,
                tokens_in=t_in,
                tokens_out=t_out,
                cost=cost,
                cached=cached,
                retries=retries,
                constrained=constrained,
                batch_size=batch,
            )
        )
    done = [r for r in trace.calls if r.error is None]
    asked = [r.constrained for r in done if r.constrained is not None]
    assert _totals(trace) == {
        "tokens_in": sum(r.tokens_in for r in done),
        "tokens_out": sum(r.tokens_out for r in done),
        "cost": pytest.approx(float(sum(r.cost for r in done))),
        "cached": bool(done) and all(r.cached for r in done),
        "retries": sum(r.retries for r in trace.calls),
        "constrained": all(asked) if asked else None,
        "batch_size": max((r.batch_size for r in done if r.batch_size), default=None),
    }


async def test_a_one_call_estimate_records_what_the_general_path_would(
    server: FakeServer, fast_posts: list[str]
) -> None:
    from llmdebate.elicit.methods import Trace, _totals

    m = get_model("openai/gpt-x", base_url=server.url, use_cache=False, max_retries=0)
    log: list[ModelCallRecord] = []
    msgs = [{"role": "user", "content": "Is 7 prime?"}]
    await estimate(m, msgs, "logprobs", role="estimator", act="conditional", log=log)
    (rec,) = log
    general = m.record(
        "estimator",
        "conditional",
        messages=rec.messages,
        completion=rec.completion,
        logprobs=rec.logprobs,
        samples=None,
        latency_s=rec.latency_s,
        notes={"masses": rec.notes["masses"]},
        **_totals(Trace(sent=rec.messages, calls=[rec])),
    )
    assert rec.model_dump() == general.model_dump()
    assert rec.role == "estimator" and rec.act == "conditional" and rec.tokens_in > 0
    assert set(rec.notes["masses"]) == {"p_true_mass", "p_false_mass", "neither_mass"}
    assert rec.messages[-1]["content"].startswith("Is 7 prime?")
    await m.aclose()
