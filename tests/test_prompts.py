"""Prompt templates: every act renders, dataset text stays text, user folders override."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmdebate.core.schemas import CombinationRule
from llmdebate.prompts import ACTS, PromptError, Prompts, default_prompts_dir, rule_text


def _all_vars() -> dict[str, dict]:
    base = {"context": None}
    return {
        "answer": {**base, "question": "Q?", "choices": ["a", "b"]},
        "decompose": {**base, "claim": "C", "width": 3, "k": 1, "depth": 2, "top_claim": "T"},
        "direction": {"claim": "C", "p": 0.4, "epsilon": 0.2, "k": 1},
        "choose": {
            "claim": "C",
            "rule": "all 2 subclaims are true",
            "subclaims": [{"text": "a", "b": 0.2, "z": 1}, {"text": "b", "b": 0.9, "z": 0}],
        },
        "evidence": {**base, "claim": "C"},
        "estimate": {
            **base,
            "claim": "b",
            "parent": "P",
            "rule": "all",
            "subclaims": ["a", "b"],
            "index": 2,
            "outcomes": [{"index": 1, "text": "a", "value": 0}],
        },
        "judge": {**base, "claim": "C", "evidence": "E"},
    }


def test_default_folder_is_the_repo_prompts_folder() -> None:
    folder = default_prompts_dir()
    assert folder == Path(__file__).resolve().parents[1] / "prompts"
    assert set(ACTS) <= {p.stem for p in folder.glob("*.j2")}


@pytest.mark.parametrize("act", sorted(set(ACTS) - {"claim"}))
def test_every_act_renders_to_messages_ending_with_user(act: str) -> None:
    msgs = Prompts().render(act, **_all_vars()[act])
    assert msgs[-1]["role"] == "user"
    assert all(m["content"].strip() for m in msgs)
    assert "{{" not in msgs[-1]["content"] and "{%" not in msgs[-1]["content"]


def test_estimator_prompt_states_earlier_outcomes() -> None:
    msgs = Prompts().render("estimate", **_all_vars()["estimate"])
    text = msgs[-1]["content"]
    assert "subclaim 1 is false" in text
    assert "is subclaim 2 true" in text


def test_dataset_text_is_never_template_source() -> None:
    evil = "{{ 7 * 7 }} {% for x in range(3) %}loop{% endfor %} {{ ''.__class__ }}"
    msgs = Prompts().render("evidence", claim=evil, context=None)
    assert evil in msgs[-1]["content"]
    assert "49" not in msgs[-1]["content"]
    assert (
        Prompts()
        .text("claim", question=evil, answer="x", choices=None, context=None)
        .count("{{ 7 * 7 }}")
        == 1
    )


def test_missing_variable_is_an_error() -> None:
    with pytest.raises(PromptError, match=r"judge\.j2"):
        Prompts().render("judge", claim="C", context=None)


def test_user_folder_overrides_one_act_and_keeps_the_rest(tmp_path: Path) -> None:
    (tmp_path / "evidence.j2").write_text("{% block user %}EVIDENCE FOR {{ claim }}{% endblock %}")
    p = Prompts(tmp_path)
    assert p.render("evidence", claim="C", context=None) == [
        {"role": "user", "content": "EVIDENCE FOR C"}
    ]
    assert p.render("judge", claim="C", evidence="E", context=None)[0]["role"] == "system"


def test_user_template_cannot_escape_the_sandbox(tmp_path: Path) -> None:
    (tmp_path / "evidence.j2").write_text(
        "{% block user %}{{ claim.__class__.__mro__[1].__subclasses__() }}{% endblock %}"
    )
    with pytest.raises(PromptError, match=r"evidence\.j2"):
        Prompts(tmp_path).render("evidence", claim="C", context=None)


def test_missing_prompt_folder_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(PromptError, match="does not exist"):
        Prompts(tmp_path / "nope")


def test_rule_text() -> None:
    assert rule_text(CombinationRule(kind="and"), 3) == "all 3 subclaims are true"
    assert "at least 2" in rule_text(CombinationRule(kind="at_least", k=2), 3)
    assert "y1 & !y2" in rule_text(CombinationRule(kind="expr", expr="y1 & !y2"), 2)


def test_a_protocols_package_adds_templates_and_overrides_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``prompts_package``: its acts render through every Prompts, made before or after it
    was added; a shipped act of the same name stays the shipped one."""
    from llmdebate import prompts as prompts_module

    pkg = tmp_path / "my_protocol_prompts"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "critique.j2").write_text("{% block user %}Critique {{ x }}.{% endblock %}")
    (pkg / "direction.j2").write_text("{% block user %}not the shipped one{% endblock %}")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(prompts_module, "PACKAGE_FOLDERS", [])
    before = Prompts()
    prompts_module.add_prompts_package("my_protocol_prompts")
    for p in (before, Prompts()):
        assert p.render("critique", x=1) == [{"role": "user", "content": "Critique 1."}]
        shipped = p.render("direction", claim="c", p=0.5, epsilon=0.1, k=1)
        assert "not the shipped one" not in json.dumps(shipped)
