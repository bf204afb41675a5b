"""Each test module starts from the protocols registry as the package and its plugins fill
it: a config's topologies register themselves as protocols when the config is read
(``ExperimentConfig.topologies``), and a module that reads such a config in this process
must not leave its protocols, or the seats they add, behind for the next module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True, scope="module")
def _protocols_as_shipped() -> Iterator[None]:
    from llmdebate.agents.factory import SEAT_ROLES
    from llmdebate.protocols.registry import PROTOCOLS

    list(PROTOCOLS)  # the built-ins and plugins loaded before the snapshot
    entries, added = dict(PROTOCOLS._entries), set(PROTOCOLS._added)
    seats = dict(SEAT_ROLES)
    yield
    SEAT_ROLES.clear()
    SEAT_ROLES.update(seats)
    with PROTOCOLS._lock:
        PROTOCOLS._entries.clear()
        PROTOCOLS._entries.update(entries)
        PROTOCOLS._added.clear()
        PROTOCOLS._added.update(added)
