"""A cached reply is served only to a call made the same way: the structured-output mode in
use (every backend's, also after a fallback), a strict tool, the chat template's text. And a
forced tool's reply is recorded ``constrained`` only when it matches the schema."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from llmdebate.core.schemas import ModelCallRecord
from llmdebate.models import GenerateConfig, get_model
from llmdebate.models.enforcement import ENFORCEMENT
from llmdebate.models.hf_backend import HFBackend
from llmdebate.models.structured import OutputSchema

try:
    from tests.fixtures.fake_server import FakeServer
except ImportError:  # tests/ is not a package: pytest put tests/ itself on sys.path
    from fixtures.fake_server import FakeServer  # type: ignore[no-redef]

SCHEMA = OutputSchema.of(
    "verdict",
    {
        "type": "object",
        "properties": {"answer": {"type": "boolean"}},
        "required": ["answer"],
        "additionalProperties": False,
    },
)
STRUCTURED = GenerateConfig(max_tokens=16, json_schema=SCHEMA)
PLAIN_REPLY = "Sure! I think the answer is yes."


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLMDEBATE_CACHE_DIR", str(tmp_path / "cache"))
    for var in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")


def json_when_asked(body: dict[str, Any]) -> str:
    """JSON when a constraint is asked for (a field or a forced tool), prose otherwise."""
    asked = {"response_format", "tool_choice", "grammar"} & set(body)
    return '{"answer": true}' if asked else PLAIN_REPLY


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as s:
        s.responder = json_when_asked
        yield s


def ask(i: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"Is {i} even?"}]


@pytest.mark.parametrize(
    ("first", "second"),
    [({"structured": "tool"}, {"structured": "none"}), ({"strict": True}, {"strict": False})],
)
async def test_anthropic_replies_are_cached_per_structured_mode(
    server: FakeServer, tmp_path: Path, first: dict[str, Any], second: dict[str, Any]
) -> None:
    cache = tmp_path / "one-cache"
    one = get_model("anthropic/claude-haiku-4-5", base_url=server.root, cache_dir=cache, **first)
    await one.generate(ask(1), STRUCTURED)
    await one.aclose()
    other = get_model("anthropic/claude-haiku-4-5", base_url=server.root, cache_dir=cache, **second)
    out = await other.generate(ask(1), STRUCTURED)
    assert server.requests == 2 and not out.cached  # asked again, not the other mode's reply
    again = get_model("anthropic/claude-haiku-4-5", base_url=server.root, cache_dir=cache, **first)
    assert (await again.generate(ask(1), STRUCTURED)).cached and server.requests == 2
    await other.aclose()
    await again.aclose()


def test_a_local_model_keys_its_replies_on_the_structured_mode(tmp_path: Path) -> None:
    weights = tmp_path / "model.gguf"
    weights.write_bytes(b"GGUF")
    by_grammar = HFBackend("hf/m", weights, cache_dir=tmp_path)
    unconstrained = HFBackend("hf/m", weights, cache_dir=tmp_path, structured="none")
    assert by_grammar.identity_for(STRUCTURED) != unconstrained.identity_for(STRUCTURED)
    plain = GenerateConfig(max_tokens=16)
    assert by_grammar.identity_for(plain) == unconstrained.identity_for(plain)
    by_grammar._grammar.available = False  # no xgrammar: the reply is unconstrained
    assert by_grammar.identity_for(STRUCTURED) == unconstrained.identity_for(STRUCTURED)


async def test_replies_prompted_after_a_dropped_mode_are_cached_as_unconstrained(
    server: FakeServer, tmp_path: Path
) -> None:
    cache = tmp_path / "one-cache"
    server.reject_fields = {"response_format"}
    dropped = get_model("openai/base", base_url=server.url, cache_dir=cache)
    before = await dropped.generate(ask(1), STRUCTURED)  # refused, then sent plain
    after = await dropped.generate(ask(2), STRUCTURED)  # plain from the start
    assert before.text == after.text == PLAIN_REPLY
    await dropped.aclose()

    server.reject_fields = set()
    server.enforce_fields = {"response_format"}
    ENFORCEMENT.begin()  # another run: the server is asked again (one probe)
    applied = get_model("openai/base", base_url=server.url, cache_dir=cache)
    outs = [await applied.generate(ask(i), STRUCTURED) for i in (1, 2)]
    assert [o.cached for o in outs] == [False, False] and server.requests == 6
    assert all(json.loads(o.text) == {"answer": True} for o in outs)
    await applied.aclose()

    unconstrained = get_model(
        "openai/base", base_url=server.url, cache_dir=cache, structured="none"
    )
    hits = [await unconstrained.generate(ask(i), STRUCTURED) for i in (1, 2)]
    assert all(h.cached and h.text == PLAIN_REPLY for h in hits) and server.requests == 6
    await unconstrained.aclose()


async def test_a_changed_chat_template_at_the_same_path_is_asked_again(
    server: FakeServer, tmp_path: Path
) -> None:
    cache = tmp_path / "one-cache"
    template = tmp_path / "chat.jinja"
    texts = []
    for tag in ("user", "human", "user"):
        template.write_text(
            f"{{% for m in messages %}}<|{tag}|>{{{{ m.content }}}}\n{{% endfor %}}<|assistant|>"
        )
        m = get_model(
            "openai/base",
            base_url=server.url,
            endpoint="completions",
            chat_template=str(template),
            cache_dir=cache,
        )
        texts.append((await m.generate(ask(1))).cached)
        await m.aclose()
    assert texts == [False, False, True] and server.requests == 2
    assert server.bodies[1]["prompt"].startswith("<|human|>")


async def test_a_forced_tool_reply_off_the_schema_is_not_recorded_constrained(
    server: FakeServer,
) -> None:
    m = get_model("anthropic/claude-haiku-4-5", base_url=server.root, use_cache=False)
    log: list[ModelCallRecord] = []
    await m.generate(ask(1), STRUCTURED, log=log)
    server.responder = lambda body: '{"answer": "yes"}'  # a tool input, not the schema's
    await m.generate(ask(2), STRUCTURED, log=log)
    assert [r.constrained for r in log] == [True, False]
    await m.aclose()
