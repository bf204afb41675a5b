"""What a backend can do: one :class:`BackendProfile` per backend, read instead of probing.

Callers ask ``backend.profile.text_prompts`` (not ``getattr(backend, "text_prompts")``). A
backend starts from what its kind promises and narrows the profile when its server shows
otherwise: a text-completions server that refuses a list of prompts loses
``batched_prompts``, one that ignores the structured-output field loses that mode
(:meth:`BackendProfile.without`), and the backend says so once in the log.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class BackendProfile:
    """The capabilities of one backend (frozen: a change is a new profile)."""

    logprobs: bool = True
    """Replies carry token logprobs with top alternatives."""
    logprob_tokens: bool = False
    """Honours ``GenerateConfig.logprob_tokens`` (named tokens' logprobs at every position)."""
    structured: tuple[str, ...] = ()
    """The structured-output modes that constrain replies (empty: prompt-and-parse only)."""
    completions_endpoint: bool = False
    """Talks to a text-completions endpoint (one plain-text prompt per call)."""
    batched_prompts: bool = False
    """Sends concurrent prompts as one request with a list of prompts."""
    text_prompts: bool = False
    """Wants plain-text prompts that it sends as they are (no chat template of its own)."""
    persistent_cache: bool = True
    """Replies may be cached on disk (a test double's are not)."""
    replicas: bool = False
    """Spreads requests over several servers of one model."""
    load: bool = False
    """Has weights to load before the first call (:meth:`Backend.load`)."""
    http: bool = False
    """Talks to a server over HTTP (``base_url`` applies; requests are counted)."""

    def without(self, capability: str) -> BackendProfile:
        """This profile without ``capability`` (a flag the server showed it lacks)."""
        changes: dict[str, Any] = {capability: False}
        return dataclasses.replace(self, **changes)

    def without_structured(self, mode: str) -> BackendProfile:
        """This profile without the structured-output ``mode``."""
        return dataclasses.replace(self, structured=tuple(m for m in self.structured if m != mode))

    @staticmethod
    def common(profiles: list[BackendProfile]) -> BackendProfile:
        """What every one of ``profiles`` can do (a replica set answers with any of them)."""
        first = profiles[0]
        values: dict[str, object] = {}
        for f in dataclasses.fields(BackendProfile):
            vals = [getattr(p, f.name) for p in profiles]
            if f.name == "structured":
                values[f.name] = tuple(m for m in first.structured if all(m in v for v in vals))
            else:
                values[f.name] = all(vals)
        values["replicas"] = True
        return BackendProfile(**values)  # type: ignore[arg-type]
