"""One debate of a run, wherever it runs: its transcript, its failure, and what it reports back.

Every executor (this process, or a Ray worker on another machine) runs a job with
:func:`finish` and hands the driver a :class:`Finished`: the transcript already serialised as
its JSON line, and the few facts the driver needs (status, calls, whether a failure counts
towards the circuit breaker, or the reason the whole run must stop). Only the driver writes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from llmdebate.agents.factory import Team
from llmdebate.core.schemas import ModelCallRecord, Transcript
from llmdebate.errors import (
    AuthenticationError,
    FatalModelError,
    InvalidOutputError,
    ModelError,
    ProtocolViolation,
    RequestRejectedError,
    RuleError,
    UserError,
)
from llmdebate.experiment.config import protocol_roles
from llmdebate.experiment.jobs import Job
from llmdebate.protocols.families import play
from llmdebate.protocols.registry import get_protocol
from llmdebate.protocols.spec import ProtocolSettings
from llmdebate.records.transcripts import transcript_line
from llmdebate.tournament.roster import record_seats

# Failures that say something about the debate's own content, not about the server: they
# do not count towards the circuit breaker.
CONTENT_FAILURES: tuple[type[BaseException], ...] = (
    InvalidOutputError,
    RequestRejectedError,
    ProtocolViolation,
    RuleError,
)


class RunStopped(Exception):
    """The run stopped for a reason no debate can survive (the summary is written)."""

    def __init__(self, reason: str, exit_code: int = 1) -> None:
        super().__init__(reason)
        self.reason = reason
        self.exit_code = exit_code


@dataclass
class Finished:
    """A debate that ran to its end (complete, awaiting a verdict, or failed), or, with
    ``stop`` set, a job that met an error no debate survives (then ``line`` is empty)."""

    debate_id: str
    line: bytes
    status: str
    calls: int
    failure: str | None = None
    server_failure: bool = False
    stop: tuple[str, int] | None = None  # (reason, exit code)


def failure_reason(exc: BaseException) -> str:
    """``Kind: message``, the kind being the class of :mod:`llmdebate.errors` the error is
    (so a summary counts failures by the failure policy's own names), else its own class."""
    kind = next(
        (c.__name__ for c in type(exc).__mro__ if c.__module__ == "llmdebate.errors"),
        type(exc).__name__,
    )
    return f"{kind}: {exc}"


def failed_transcript(
    job: Job, settings: ProtocolSettings, log: list[ModelCallRecord], why: str
) -> Transcript:
    spec = job.spec
    return Transcript(
        id=spec.debate_id,
        protocol=spec.protocol,
        config=settings.debate,
        seed=spec.seed,
        item=spec.item_dict,
        status="failed",
        failure=why[:2000],
        calls=log,
    )


async def run_one(job: Job, team: Team, settings: ProtocolSettings) -> tuple[Transcript, bool]:
    """One debate; returns its transcript and whether a failure counts towards the breaker.

    Errors that belong to the debate become a ``failed`` transcript; fatal ones propagate.
    """
    spec = job.spec
    team = team.seated(dict(job.seats))
    log: list[ModelCallRecord] = []
    start = time.perf_counter()
    server_failure = False
    if job.problem is not None:
        t = failed_transcript(job, settings, log, f"ItemError: {job.problem}")
    else:
        try:
            t = await play(get_protocol(spec.protocol), spec, team, settings, log)
        except (FatalModelError, UserError):
            raise
        except CONTENT_FAILURES as exc:
            t = failed_transcript(job, settings, log, failure_reason(exc))
        except (ModelError, Exception) as exc:  # the server, or a defect: counts as a strike
            server_failure = True
            t = failed_transcript(job, settings, log, failure_reason(exc))
    t.meta.update(spec.meta())
    record_seats(t, team, spec.gold, spec.distractor)
    t.meta["wall_s"] = round(time.perf_counter() - start, 4)
    t.meta["retries"] = sum(getattr(c, "retries", 0) for c in log)
    return t, server_failure


def finished(t: Transcript, servers: dict[str, str | None], server_failure: bool) -> Finished:
    """What the driver gets for a transcript: its line (redacted, with the servers of the
    roles its protocol plays, whichever other protocols share the run)."""
    plays = protocol_roles(t.protocol) | {"judge"}
    t.meta["servers"] = {k: v for k, v in servers.items() if "/" in k or k in plays}
    return Finished(t.id, transcript_line(t), t.status, len(t.calls), t.failure, server_failure)


async def finish(
    job: Job, team: Team, settings: ProtocolSettings, servers: dict[str, str | None]
) -> Finished:
    """Run one job to a :class:`Finished` (errors that stop the run become its ``stop``)."""
    try:
        t, server_failure = await run_one(job, team, settings)
    except AuthenticationError as exc:
        return Finished(job.spec.debate_id, b"", "", 0, stop=(failure_reason(exc), 2))
    except FatalModelError as exc:
        return Finished(job.spec.debate_id, b"", "", 0, stop=(failure_reason(exc), 1))
    except UserError as exc:
        return Finished(job.spec.debate_id, b"", "", 0, stop=(str(exc), 2))
    return finished(t, servers, server_failure)
