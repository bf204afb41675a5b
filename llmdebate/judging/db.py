"""The study database: judges, assignments and judgments (SQLAlchemy 2).

SQLite in the run directory by default (``judging.db``, WAL mode, foreign keys on), or any
URL SQLAlchemy speaks, e.g. ``postgresql+psycopg://…`` for a lab-wide study. Constraints carry
the rules: one judgment per assignment (a second submission is an :class:`IntegrityError`,
answered as a clean conflict), one assignment per judge and debate and per judge and item.
Tokens are stored only as SHA-256 digests.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Engine,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
    create_engine,
    event,
    inspect,
    select,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker

from llmdebate.records.rundir import JUDGING_DB


def utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def token_hash(token: str) -> str:
    """The stored form of a secret token (tokens are random and long, so one SHA-256 is enough)."""
    return hashlib.sha256(("llmdebate-judge:" + token).encode("utf-8")).hexdigest()


class Base(DeclarativeBase):
    pass


class Setting(Base):
    """Study-wide settings (seed, context, explanation rule) and the lead's token digest."""

    __tablename__ = "settings"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[Any] = mapped_column(JSON)


class Judge(Base):
    __tablename__ = "judges"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    is_lead: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Assignment(Base):
    __tablename__ = "assignments"
    __table_args__ = (
        UniqueConstraint("judge_id", "debate_id", name="one_per_judge_debate"),
        UniqueConstraint("judge_id", "item_id", name="one_per_judge_item"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    judge_id: Mapped[str] = mapped_column(ForeignKey("judges.id"), index=True)
    debate_id: Mapped[str] = mapped_column(String(512), index=True)
    item_id: Mapped[str] = mapped_column(String(512))
    protocol: Mapped[str] = mapped_column(String(64))
    position: Mapped[int] = mapped_column(Integer)
    order_seed: Mapped[int] = mapped_column(Integer)
    context: Mapped[str] = mapped_column(String(16), default="none")
    revealed: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    """Stepped reveal: how many turns this judge has asked to see (kept across reloads)."""
    active_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    """The judge's active seconds on this item so far, as their page last reported them (kept
    across asking, waiting for an answer and reloads; the verdict takes the larger count)."""
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)


class WebSession(Base):
    """A signed-in browser: the digest of its cookie, its judge, and whether it was revoked
    (signing out revokes it, so a copied cookie stops working too)."""

    __tablename__ = "web_sessions"
    id_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    judge_id: Mapped[str] = mapped_column(ForeignKey("judges.id"), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)


class Question(Base):
    """A person's question to the debaters of an interactive debate (``judge.interactive``):
    the ``number``-th of its assignment, asked after round ``number``; answered when
    ``llmdebate answer`` has appended the continued debate (see :mod:`.asking`)."""

    __tablename__ = "questions"
    __table_args__ = (UniqueConstraint("assignment_id", "number", name="one_question_a_round"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignments.id"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    asked_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class LogEntry(Base):
    """The study's log: what ``assign`` did to judges' access (new links issued, lost links
    reissued and the old ones revoked), written in the transaction that did it."""

    __tablename__ = "study_log"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    event: Mapped[str] = mapped_column(String(32))
    detail: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


JUDGMENT_KINDS = ("human", "llm", "oracle")


class Judgment(Base):
    """One verdict on one debate. A person's answers an assignment (one judgment per
    assignment); a model's or the oracle's (``kind`` llm / oracle) has no assignment. Either
    way a judge rules on a debate once."""

    __tablename__ = "judgments"
    __table_args__ = (
        UniqueConstraint("judge_id", "debate_id", name="one_judgment_per_judge_debate"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    assignment_id: Mapped[int | None] = mapped_column(
        ForeignKey("assignments.id"), unique=True, index=True, nullable=True
    )
    kind: Mapped[str] = mapped_column(String(16), default="human", server_default="human")
    judge_id: Mapped[str] = mapped_column(String(64), index=True)
    debate_id: Mapped[str] = mapped_column(String(512), index=True)
    verdict: Mapped[int | None] = mapped_column(Integer, nullable=True)
    probability: Mapped[float | None] = mapped_column(Float, nullable=True)
    p_first: Mapped[float | None] = mapped_column(Float, nullable=True)
    explanation: Mapped[str] = mapped_column(Text, default="")
    shown_digest: Mapped[str] = mapped_column(String(64))
    started_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    submitted_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    active_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    interface: Mapped[str] = mapped_column(String(16))
    settings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    turns_revealed: Mapped[int | None] = mapped_column(Integer, nullable=True)
    """Stepped reveal: the turns the judge had seen when answering (None: all were shown)."""
    calls: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON, nullable=True)
    """A model judge's calls (so its completed transcript can be rebuilt exactly)."""


def database_url(run_dir: Path, url: str | None = None) -> str:
    return url or f"sqlite:///{(run_dir / JUDGING_DB).resolve()}"


def connect(run_dir: Path, url: str | None = None) -> sessionmaker[Session]:
    """A session factory on the study database, tables created if missing."""
    full = database_url(run_dir, url)
    engine: Engine
    if full.startswith("sqlite"):
        engine = create_engine(full, connect_args={"timeout": 30, "check_same_thread": False})

        @event.listens_for(engine, "connect")
        def _pragmas(conn: Any, _record: Any) -> None:
            conn.isolation_level = None  # SQLAlchemy's "begin" below opens every transaction
            cur = conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=FULL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        @event.listens_for(engine, "begin")
        def _immediate(conn: Any) -> None:
            # take the write lock at the start: no read-then-write upgrade can fail under load
            conn.exec_driver_sql("BEGIN IMMEDIATE")

    else:
        engine = create_engine(full, pool_pre_ping=True)
    Base.metadata.create_all(engine)
    _add_missing_columns(engine)
    return sessionmaker(engine, expire_on_commit=False)


def _add_missing_columns(engine: Engine) -> None:
    """Bring a study database written by an earlier version up to date: add each column it
    lacks (every later column is nullable or has a server default)."""
    with engine.begin() as conn:
        insp = inspect(conn)
        for table in Base.metadata.sorted_tables:
            have = {c["name"] for c in insp.get_columns(table.name)}
            for col in table.columns:
                if col.name in have:
                    continue
                kind = col.type.compile(dialect=engine.dialect)
                default = col.server_default
                extra = f" DEFAULT '{default.arg}'" if default is not None else ""  # type: ignore[attr-defined]
                conn.exec_driver_sql(
                    f'ALTER TABLE {table.name} ADD COLUMN "{col.name}" {kind}{extra}'
                )


def get_setting(s: Session, key: str, default: Any = None) -> Any:
    row = s.get(Setting, key)
    return default if row is None else row.value


def set_setting(s: Session, key: str, value: Any) -> None:
    row = s.get(Setting, key)
    if row is None:
        s.add(Setting(key=key, value=value))
    else:
        row.value = value


def judge_by_token(s: Session, token: str) -> Judge | None:
    if not token or len(token) > 200:
        return None
    return s.scalars(select(Judge).where(Judge.token_hash == token_hash(token))).first()


def queue(s: Session, judge_id: str) -> list[tuple[Assignment, bool]]:
    """A judge's assignments in queue order, each with whether it is answered."""
    rows = list(
        s.scalars(
            select(Assignment).where(Assignment.judge_id == judge_id).order_by(Assignment.position)
        )
    )
    done = set(s.scalars(select(Judgment.assignment_id).where(Judgment.judge_id == judge_id)))
    return [(a, a.id in done) for a in rows]


def open_session(s: Session, judge_id: str) -> str:
    """A new signed-in session of ``judge_id``; returns its secret (the cookie value)."""
    secret = secrets.token_urlsafe(32)
    s.add(WebSession(id_hash=token_hash(secret), judge_id=judge_id))
    return secret


def judge_by_session(s: Session, secret: str) -> Judge | None:
    """The judge of a live (not revoked) session, or None."""
    if not secret or len(secret) > 200:
        return None
    row = s.get(WebSession, token_hash(secret))
    if row is None or row.revoked_at is not None:
        return None
    return s.get(Judge, row.judge_id)


def log_event(s: Session, event: str, **detail: Any) -> None:
    """Add a line to the study's log (:class:`LogEntry`) in the session's transaction."""
    s.add(LogEntry(event=event, detail=detail))


def study_log(s: Session) -> list[LogEntry]:
    """The study's log, oldest first."""
    return list(s.scalars(select(LogEntry).order_by(LogEntry.id)))


def revoke_judge_sessions(s: Session, judge_id: str) -> int:
    """Revoke every live session of ``judge_id``; how many there were."""
    rows = s.scalars(
        select(WebSession).where(
            WebSession.judge_id == judge_id, WebSession.revoked_at.is_(None)
        )
    ).all()
    for row in rows:
        row.revoked_at = utcnow()
    return len(rows)


def revoke_session(s: Session, secret: str) -> None:
    row = s.get(WebSession, token_hash(secret))
    if row is not None and row.revoked_at is None:
        row.revoked_at = utcnow()


def app_secret(s: Session) -> str:
    """The study's server secret (form tokens of the sign-in page), made on first use."""
    value = get_setting(s, "app_secret")
    if value is None:
        value = secrets.token_hex(32)
        set_setting(s, "app_secret", value)
    return str(value)
