"""Protocol name → the coroutine that runs one debate of it (see :mod:`.base`)."""

from __future__ import annotations

from llmdebate.errors import UserError
from llmdebate.protocols import asymmetric, consultancy, direct, two_sided
from llmdebate.protocols.base import ProtocolRun

PROTOCOLS: dict[str, ProtocolRun] = {
    "prover-estimator": asymmetric.run_pe,
    "naive-recursive": asymmetric.run_naive,
    "two-sided": two_sided.run_two_sided,
    "consultancy": consultancy.run_consultancy,
    "direct": direct.run_direct,
}


def get_protocol(name: str) -> ProtocolRun:
    """The runner of ``name``; a UserError lists the known names."""
    try:
        return PROTOCOLS[name]
    except KeyError:
        raise UserError(f"unknown protocol {name!r}: choose from {', '.join(PROTOCOLS)}") from None
