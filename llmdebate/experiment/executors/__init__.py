"""Where the debates of a run execute: an entry of :data:`EXECUTORS` (``--executor NAME``).

* ``local`` (:mod:`.local`): ``max_concurrency`` debates at a time on this event loop, sharing
  the run's models (one connection pool per model);
* ``processes`` (:mod:`.processes`, ``--workers N``): worker processes on this machine, each
  with its own models, connection pools and event loop (one machine, many cores, a fast
  local server);
* ``ray`` (:mod:`.ray`, the ``llmdebate[ray]`` extra): worker processes across a Ray cluster.

Both multi-process executors share one scheduler (:mod:`.pool`). :mod:`.base` holds the
interface, the options and the registry; a package adds an executor through the entry-point
group ``llmdebate.executors`` (see ``docs/extending.md``).
"""

from llmdebate.experiment.executors.executor import (
    EXECUTORS,
    Executor,
    ExecutorOptions,
    OnFinished,
    RunContext,
    make_executor,
)

__all__ = ["EXECUTORS", "Executor", "ExecutorOptions", "OnFinished", "RunContext", "make_executor"]
