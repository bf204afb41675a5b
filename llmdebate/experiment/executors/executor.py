"""What every executor is: the :class:`Executor` interface, its options, and the registry.

An :class:`Executor` takes the jobs still to run and calls ``on_finished`` in the driver
for each one as it finishes, with a :class:`~llmdebate.experiment.debate.Finished` (the
transcript line and its status). The driver alone writes the run directory, counts the
circuit breaker's strikes and decides to stop: ``on_finished`` raises
:class:`~llmdebate.experiment.debate.RunStopped`, and the executor then cancels the debates in
flight (a resume re-runs them) and re-raises it. So resume, the failure policy and the summary
are the same whichever executor ran the debates.

Executors are entries of :data:`EXECUTORS` (``--executor NAME``); an entry's value is the
:class:`Executor` subclass, made with :meth:`Executor.create`. Capabilities an entry declares:

* ``in-process``: debates run in the driver's own process (prebuilt models work, local
  weights are loaded before the clock starts);
* ``workers``: it runs worker processes and takes ``--workers N``;
* ``address``: it joins a cluster at ``--ray-address``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from llmdebate.agents.factory import Team
from llmdebate.errors import UserError, require
from llmdebate.experiment.config import ExperimentConfig
from llmdebate.experiment.debate import Finished
from llmdebate.experiment.jobs import Job
from llmdebate.protocols.spec import ProtocolSettings
from llmdebate.registry import Registry

OnFinished = Callable[[Finished], None]
"""Called in the driver for every finished job; raises RunStopped to stop the run."""

IN_PROCESS = "in-process"
WORKERS = "workers"
ADDRESS = "address"


@dataclass(frozen=True)
class RunContext:
    """What an executor is made from: the run's config, its team and protocol settings (for
    debates in this process), the servers the driver reaches, and where to say things."""

    config: ExperimentConfig
    team: Team
    settings: ProtocolSettings
    servers: dict[str, str | None]
    say: Callable[[str], None]


class Executor(ABC):
    """Runs jobs and reports each one to the driver as it finishes."""

    where: ClassVar[str] = ""
    """Where the debates run, for the run's first message (``" in worker processes"``)."""
    extra: ClassVar[str | None] = None
    """The import an executor needs and the ``llmdebate[extra]`` that installs it (checked
    before anything runs)."""

    @classmethod
    def create(cls, options: ExecutorOptions, run: RunContext) -> Executor:
        """The executor for one invocation of a run (outside the event loop); every
        registered executor defines it."""
        raise NotImplementedError(f"{cls.__name__}.create: how the executor is made")

    @classmethod
    def check(cls) -> None:
        """Raise a one-line :class:`UserError` when the executor cannot run here."""
        if cls.extra:
            require(cls.extra, cls.extra)

    @abstractmethod
    async def run(self, jobs: Sequence[Job], on_finished: OnFinished) -> None:
        """Run every job; raise the :class:`RunStopped` that ``on_finished`` or a job raised
        (after cancelling the jobs in flight)."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release workers and connections."""

    def stats(self) -> dict[str, Any]:
        """Figures for the summary's ``last_invocation`` (e.g. debates sent again)."""
        return {}


EXECUTORS: Registry[type[Executor]] = Registry(
    "executor",
    group="llmdebate.executors",
    builtins=(
        "llmdebate.experiment.executors.local",
        "llmdebate.experiment.executors.processes",
        "llmdebate.experiment.executors.ray",
    ),
)
"""Where the debates of a run execute (``--executor``), by name."""


def _flags(capability: str) -> str:
    return " or ".join(f"--executor {n}" for n in EXECUTORS.with_capability(capability))


@dataclass
class ExecutorOptions:
    """How to execute a run (no part of the experiment: a resume may change them)."""

    kind: str = "local"
    ray_address: str | None = None
    """Address of a running Ray cluster (``auto``, ``ray://host:10001``); None: start a
    local Ray instance."""
    workers: int | None = None
    """Worker processes (default: the CPUs of this machine, or of the Ray cluster, at most
    ``max_concurrency``)."""

    def __post_init__(self) -> None:
        entry = EXECUTORS.entry(self.kind, where="--executor")
        if self.workers is not None and self.workers < 1:
            raise UserError(f"--workers must be >= 1 (got {self.workers})")
        if self.ray_address and not entry.can(ADDRESS):
            raise UserError(f"--ray-address needs {_flags(ADDRESS)} (got --executor {self.kind})")
        if self.workers is not None and not entry.can(WORKERS):
            raise UserError(
                f"--workers needs {_flags(WORKERS)} (got --executor {self.kind}, which runs "
                "every debate in this process)"
            )

    @property
    def executor(self) -> type[Executor]:
        """The executor class these options name."""
        return EXECUTORS.get(self.kind, where="--executor")

    @property
    def in_process(self) -> bool:
        """Whether the debates run in this process (prebuilt models work only then)."""
        return EXECUTORS.entry(self.kind).can(IN_PROCESS)


def make_executor(options: ExecutorOptions, run: RunContext) -> Executor:
    """The executor ``options`` name, made for ``run``."""
    return options.executor.create(options, run)
