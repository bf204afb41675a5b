"""Building the models and agents of a run from its configuration."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llmdebate.agents.base import Estimator, Judge
from llmdebate.agents.judges import DeferredJudge, LLMJudge, OracleJudge
from llmdebate.agents.llm import LLMEstimator, LLMProver
from llmdebate.config import ModelSettings, RunConfig
from llmdebate.data.problems import claim_truth, formal_decomposition
from llmdebate.errors import ConfigError
from llmdebate.models import Model, get_model
from llmdebate.paths import resolve_path
from llmdebate.prompts import Prompts


def _import_ref(ref: str) -> Any:
    """The object named by ``"package.module:attr"`` or ``"path/to/file.py:attr"``."""
    import importlib
    import importlib.util

    module, _, attr = ref.rpartition(":")
    try:
        if module.endswith(".py"):
            path = resolve_path(module)
            spec = importlib.util.spec_from_file_location(f"_llmdebate_ref_{path.stem}", path)
            if spec is None or spec.loader is None or not path.is_file():
                raise ImportError(f"no such file {path}")
            obj: Any = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(obj)
        else:
            obj = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError, OSError) as exc:
        raise ConfigError(f"cannot import {ref!r} ({exc})") from None
    return obj


def _model_options(settings: ModelSettings) -> dict[str, Any]:
    opts = dict(settings.options)
    if settings.model == "scripted":
        for key in ("responder", "probabilities"):
            if isinstance(opts.get(key), str) and ":" in opts[key]:
                opts[key] = _import_ref(opts[key])
    return opts


def build_models(config: RunConfig) -> dict[str, Model]:
    """One :class:`Model` per role; roles with identical settings share one instance."""
    shared: dict[str, Model] = {}
    out: dict[str, Model] = {}
    roles: dict[str, ModelSettings] = {"prover": config.prover, "estimator": config.estimator}
    if config.judge.kind in ("llm", "oracle-or-llm"):
        roles["judge"] = config.judge
    cache_dir = Path(config.cache_dir).expanduser() if config.cache_dir else None
    for role, s in roles.items():
        key = json.dumps([s.model, s.base_url, s.api_key_env, s.options], sort_keys=True)
        if key not in shared:
            shared[key] = get_model(
                s.model,
                base_url=s.base_url,
                api_key_env=s.api_key_env,
                cache_dir=cache_dir,
                use_cache=config.use_cache,
                max_concurrency=config.model_concurrency,
                max_retries=config.max_retries,
                **_model_options(s),
            )
        out[role] = shared[key]
    return out


@dataclass
class Agents:
    prover: LLMProver
    estimator: Estimator
    judge: Judge
    models: dict[str, Model] = field(default_factory=dict)


def build_agents(config: RunConfig, models: dict[str, Model], prompts: Prompts) -> Agents:
    p, e, j = config.prover, config.estimator, config.judge
    prover = LLMProver(
        models["prover"],
        prompts,
        direction=p.direction,
        recursion=p.recursion,
        belief_method=p.belief_method,
        samples=p.samples,
        temperature=p.temperature,
        max_tokens=p.max_tokens,
        max_attempts=p.max_attempts,
        decomposer=p.decomposer,
        formal=formal_decomposition,
    )
    estimator = LLMEstimator(
        models["estimator"],
        prompts,
        method=e.method,
        samples=e.samples,
        temperature=e.temperature,
        independent=e.independent,
    )
    judge: Judge
    if j.kind == "deferred":
        judge = DeferredJudge()
    elif j.kind == "llm":
        judge = LLMJudge(
            models["judge"], prompts, method=j.method, samples=j.samples, temperature=j.temperature
        )
    else:
        fallback = (
            LLMJudge(models["judge"], prompts, method=j.method, samples=j.samples)
            if j.kind == "oracle-or-llm"
            else None
        )
        judge = OracleJudge(claim_truth, fallback=fallback)
    return Agents(prover, estimator, judge, models)
