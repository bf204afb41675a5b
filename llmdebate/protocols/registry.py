"""Protocol name → the coroutine that runs one debate of it, and its paired variants.

Every runner has the signature ``(item, roles, settings, *, variant, seed, debate_id)`` and
returns a :class:`~llmdebate.schemas.Transcript`. The variants of a protocol are the debates
run on every item (the paired design): see ``docs/metrics.md``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from llmdebate.errors import UserError
from llmdebate.protocols import asymmetric, consultancy, direct, two_sided
from llmdebate.schemas import Transcript

Runner = Callable[..., Awaitable[Transcript]]

PROTOCOLS: dict[str, tuple[Runner, tuple[str, ...]]] = {
    "direct": (direct.run_direct, direct.VARIANTS),
    "consultancy": (consultancy.run_consultancy, consultancy.VARIANTS),
    "two-sided": (two_sided.run_two_sided, two_sided.VARIANTS),
    "naive-recursive": (asymmetric.run_naive, asymmetric.VARIANTS),
    "prover-estimator": (asymmetric.run_pe, asymmetric.VARIANTS),
}


def get_protocol(name: str) -> tuple[Runner, tuple[str, ...]]:
    """The runner and the variants of ``name``; a UserError lists the known names."""
    try:
        return PROTOCOLS[name]
    except KeyError:
        raise UserError(f"unknown protocol {name!r}: choose from {', '.join(PROTOCOLS)}") from None


def debate_id(protocol: str, item_id: Any, variant: str) -> str:
    """The id of one debate of a comparison (stable, so a run resumes by it)."""
    return f"{protocol}/{item_id}/{variant}"
