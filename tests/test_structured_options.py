"""Per-role backend options (``endpoint``, ``structured``, ``chat_template``) are checked when
the config is read: one line naming the file, line, column and field, and exit 2."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from llmdebate.cli import main

REPO = Path(__file__).resolve().parents[1]
CONFIG = """\
name: options
dataset: {{path: {dataset}, limit: 1}}
debate: {{depth: 1, width: 2}}
judge: {{kind: oracle}}
estimator:
  model: openai/base
  base_url: http://127.0.0.1:9/v1
  options:
    timeout: 5
{options}
"""


def write(tmp_path: Path, options: str, model: str = "openai/base") -> Path:
    path = tmp_path / "c.yaml"
    text = CONFIG.format(dataset=REPO / "datasets" / "divisors.jsonl", options=options)
    path.write_text(text.replace("openai/base", model))
    return path


@pytest.mark.parametrize(
    ("options", "model", "message"),
    [
        (
            "    endpoint: text",
            "openai/base",
            r"c\.yaml:10:5: estimator\.options\.endpoint: must be one of 'chat' or "
            r"'completions' \(got 'text'\)$",
        ),
        (
            "    structured: xml",
            "openai/base",
            r"c\.yaml:10:5: estimator\.options\.structured: must be one of 'response_format'.*"
            r"'grammar' or 'none' \(got 'xml'\)$",
        ),
        (
            "    structured: grammar",
            "anthropic/claude",
            r"c\.yaml:10:5: estimator\.options\.structured: must be one of 'tool' or 'none'",
        ),
        (
            "    endpoint: completions",
            "anthropic/claude",
            r"c\.yaml:10:5: estimator\.options\.endpoint: only openai/ models take endpoint",
        ),
        (
            "    endpoint: completions\n    chat_template: nowhere/tokenizer_config.json",
            "openai/base",
            r"c\.yaml:11:5: estimator\.options\.chat_template: chat_template: no file at "
            r"nowhere/tokenizer_config\.json$",
        ),
        (
            "    chat_template: configs/vllm-base-chat-template.jinja",
            "openai/base",
            r"c\.yaml:10:5: estimator\.options\.chat_template: chat_template applies only with "
            r"endpoint: completions$",
        ),
    ],
)
def test_bad_backend_option_is_one_line_naming_file_and_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: str, model: str, message: str
) -> None:
    cfg = write(tmp_path, options, model)
    code = main(["run", "--config", str(cfg), "--run-dir", str(tmp_path / "r"), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert re.search(message, err), err
    assert not (tmp_path / "r").exists()  # refused before anything started


def test_template_that_is_not_a_template_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "tokenizer_config.json"
    bad.write_text(json.dumps({"chat_template": "{% for m in messages %}"}))
    cfg = write(tmp_path, f"    endpoint: completions\n    chat_template: {bad}")
    code = main(["run", "--config", str(cfg), "--run-dir", str(tmp_path / "r"), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "estimator.options.chat_template: chat template does not compile" in err


def test_flag_options_are_checked_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = write(tmp_path, "    endpoint: completions")
    flag = '{"structured": "outlines"}'
    argv = ["run", "--config", str(cfg), "--quiet", "--estimator-options", flag]
    assert main([*argv, "--run-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --estimator-options: structured: must be one of"), err


def test_good_options_pass_validation() -> None:
    from llmdebate.experiment.loading import validate

    cfg = validate(
        {
            "estimator": {
                "model": "openai/base",
                "options": {
                    "endpoint": "completions",
                    "structured": "grammar",
                    "chat_template": "configs/vllm-base-chat-template.jinja",
                    "timeout": 5,
                },
            },
            "prover": {"model": "anthropic/c", "options": {"structured": "tool", "strict": False}},
            "judge": {"kind": "oracle", "model": "local", "options": {"structured": "none"}},
        }
    )
    assert cfg.estimator.options["endpoint"] == "completions"


def test_batch_prompts_on_a_chat_role_is_what_chat_does_or_one_line() -> None:
    """``batch_prompts: false`` on the chat endpoint (one conversation per request anyway)
    builds the backend; ``true`` is refused at the option, naming it."""
    from llmdebate.errors import ConfigError
    from llmdebate.experiment.loading import validate
    from llmdebate.models import get_model

    m = get_model("openai/x", base_url="http://127.0.0.1:9/v1", batch_prompts=False)
    assert type(m.backend).__name__ == "OpenAIChatBackend"
    cfg = validate({"estimator": {"model": "openai/x", "options": {"batch_prompts": False}}})
    assert cfg.estimator.options == {"batch_prompts": False}
    with pytest.raises(ConfigError, match=r"estimator\.options\.batch_prompts: batch_prompts "
                       r"applies only with endpoint: completions"):
        validate({"estimator": {"model": "openai/x", "options": {"batch_prompts": True}}})


ROSTER = """\
protocols: [two-sided]
dataset: {{path: {dataset}, limit: 1}}
judge: {{kind: oracle}}
tournament:
  roster:
    a: {{model: local}}
    b:
      model: {model}
      options: {{adapter: divisors-prover, temperature: 1.0}}
"""


@pytest.mark.parametrize("model", ["local", "hf/some/dir"])
def test_an_option_a_local_model_does_not_take_is_refused_naming_those_it_takes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], model: str
) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(ROSTER.format(dataset=REPO / "datasets" / "divisors.jsonl", model=model))
    code = main(["run", "--config", str(cfg), "--run-dir", str(tmp_path / "r"), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert re.search(
        rf"c\.yaml:9:\d+: tournament\.roster\.b\.options\.temperature: {model} takes no option "
        r"'temperature'; its options: act_adapters, adapter, .*device.*threads", err), err
    assert not (tmp_path / "r").exists()
