"""Several servers for one model: least-loaded balancing and fail-over, against two fake servers."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from llmdebate.agents.settings import ModelSettings
from llmdebate.errors import RequestRejectedError, UserError
from llmdebate.experiment.loading import validate
from llmdebate.experiment.runner import run
from llmdebate.models import Model, get_model
from llmdebate.models.interface import RetriesExhausted
from llmdebate.models.replicas import ReplicaBackend
from llmdebate.records.rundir import CONFIG_FILE

try:
    from tests.fixtures.fake_server import FakeServer
    from tests.fixtures.llm_fixtures import responder
except ImportError:  # pytest run from inside tests/
    from fixtures.fake_server import FakeServer  # type: ignore[no-redef]
    from fixtures.llm_fixtures import responder  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parents[1]
Q = [{"role": "user", "content": "Is 7 prime?"}]


@pytest.fixture()
def servers() -> Iterator[tuple[FakeServer, FakeServer]]:
    with FakeServer() as a, FakeServer() as b:
        yield a, b


def model(*urls: str, **kw: object) -> Model:
    kw.setdefault("retry_base_delay", 0.001)
    return get_model("openai/fake", base_url=list(urls), use_cache=False, **kw)  # type: ignore[arg-type]


def backend(m: Model) -> ReplicaBackend:
    assert isinstance(m.backend, ReplicaBackend)
    return m.backend


async def test_requests_go_to_the_least_loaded_replica(servers) -> None:
    a, b = servers
    a.latency = b.latency = 0.03
    m = model(a.url, b.url, max_concurrency=8)
    await asyncio.gather(*(m.generate(Q, sample_index=i) for i in range(64)))
    assert a.requests + b.requests == 64
    assert abs(a.requests - b.requests) <= 4  # equal servers share the load evenly
    assert a.max_in_flight <= 5 and b.max_in_flight <= 5  # 8 in flight, split in two
    await m.aclose()


async def test_a_slow_replica_gets_fewer_requests(servers) -> None:
    a, b = servers
    a.latency, b.latency = 0.01, 0.1
    m = model(a.url, b.url, max_concurrency=4)
    await asyncio.gather(*(m.generate(Q, sample_index=i) for i in range(80)))
    assert a.requests > 3 * b.requests  # least outstanding requests favours the fast one
    await m.aclose()


async def test_a_failing_replica_is_taken_out_then_tried_again(servers) -> None:
    a, b = servers
    b.faults.extend([{"status": 500}, {"status": 503}])
    m = model(a.url, b.url, max_concurrency=1)
    rb = backend(m)
    rb.cooldown_s = 0.2
    log: list = []
    for i in range(6):
        assert (await m.generate(Q, sample_index=i, log=log)).text == "True"
    # the failures went over to the other replica at once: no retry by the wrapper
    assert m.usage.retries == 0 and all(r.retries == 0 and r.error is None for r in log)
    out = rb.replicas[1]
    assert out.failures == 1 and out.out_until > rb.clock()
    b_requests = b.requests
    for i in range(6, 10):  # while it cools down, the other replica takes every request
        await m.generate(Q, sample_index=i)
    assert b.requests == b_requests
    await asyncio.sleep(0.25)
    for i in range(10, 14):  # after the cool-down it is tried again; a failure doubles it
        await m.generate(Q, sample_index=i)
    assert b.requests > b_requests
    await asyncio.sleep(0.45)
    for i in range(14, 20):
        await m.generate(Q, sample_index=i)
    assert out.failures == 0  # one success puts it back
    await m.aclose()


async def test_a_replica_that_is_down_is_avoided(servers) -> None:
    a, b = servers
    down = b.url
    b.__exit__()  # nothing listens there any more
    m = model(a.url, down, max_concurrency=4)
    outs = await asyncio.gather(*(m.generate(Q, sample_index=i) for i in range(12)))
    assert all(o.text == "True" for o in outs) and a.requests == 12
    assert m.usage.retries == 0
    assert backend(m).replicas[1].failures >= 1
    await m.aclose()


async def test_when_every_replica_fails_the_wrapper_retries_then_gives_up(servers) -> None:
    a, b = servers
    a.faults.extend([{"status": 500}] * 10)
    b.faults.extend([{"status": 500}] * 10)
    m = model(a.url, b.url, max_retries=2)
    backend(m).cooldown_s = 0.0
    with pytest.raises(RetriesExhausted, match="every replica failed"):
        await m.generate(Q)
    assert a.requests == 3 and b.requests == 3  # both, on each of the 3 attempts
    await m.aclose()


async def test_a_rejected_request_is_not_sent_elsewhere(servers) -> None:
    a, b = servers
    for s in servers:
        s.faults.append({"status": 400, "message": "too long", "code": "context_length_exceeded"})
    m = model(a.url, b.url)
    with pytest.raises(RequestRejectedError, match="too long"):
        await m.generate(Q)
    assert a.requests + b.requests == 1
    assert all(r.failures == 0 for r in backend(m).replicas)
    await m.aclose()


def test_settings_take_one_url_or_several() -> None:
    assert ModelSettings(base_url=["http://x/v1"]).base_url == "http://x/v1"
    assert ModelSettings(base_url=["http://x/v1", "http://y/v1"]).base_url == [
        "http://x/v1",
        "http://y/v1",
    ]
    with pytest.raises(ValueError, match="listed twice"):
        ModelSettings(base_url=["http://x/v1", "http://x/v1"])
    with pytest.raises(ValueError, match="at least one URL"):
        ModelSettings(base_url=[])
    with pytest.raises(UserError, match="empty list"):
        get_model("openai/fake", base_url=[])


def test_a_run_over_two_replicas_uses_both_and_records_them(servers, tmp_path: Path) -> None:
    a, b = servers
    for s in servers:
        s.responder = lambda body: responder(body["messages"])
    role = {"model": "openai/fake", "base_url": [a.url, b.url]}
    cfg = validate(
        {
            "dataset": {"path": str(REPO / "datasets" / "divisors.jsonl"), "limit": 4},
            "debate": {"depth": 1, "width": 2},
            "prover": {**role, "decomposer": "formal"},
            "estimator": role,
            "judge": {"kind": "llm", **role},
            "max_concurrency": 4,
            "use_cache": False,
            "report": {"bootstrap": 10},
        }
    )
    res = run(cfg, tmp_path / "r", progress=False)
    assert res.exit_code == 0 and res.summary["status"] == {"complete": 8}
    assert a.requests > 0 and b.requests > 0
    saved = yaml.safe_load((tmp_path / "r" / CONFIG_FILE).read_text())
    assert saved["prover"]["base_url"] == [a.url, b.url]
    assert saved["servers"]["estimator"] == f"{a.url}, {b.url}"


def test_flags_take_one_url_a_comma_list_or_none() -> None:
    from llmdebate.commands.config_flags import config_from

    def base_url(raw: str) -> object:
        return config_from(None, {"cfg__prover__base_url": raw}).prover.base_url

    assert base_url("http://a/v1") == "http://a/v1"
    assert base_url("http://a/v1,http://b/v1") == ["http://a/v1", "http://b/v1"]
    assert base_url('["http://a/v1", "http://b/v1"]') == ["http://a/v1", "http://b/v1"]
    assert base_url("none") is None
