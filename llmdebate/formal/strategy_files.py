"""Strategies stated as tables, and the JSON files that hold them (``llmdebate attack`` writes
them; ``llmdebate formal --estimator-file / --prover-file`` replays them).

An estimator file lists B's p_d per instance and, for every state (instance, round k, node,
p_k) it was asked about, the joint over the 2^q outcomes its conditionals amount to (any
table of conditionals is a joint; correlated outcomes included). A prover file lists A's
answer per instance, its direction at every state (instance, k, node, p_k), and its recursion
index after each (b along the drawn path, z), or, under a committing variant, given B's
marginals. Probabilities are JSON numbers, which Python reads back to the same float, so a
replay evaluates the very numbers the search evaluated; the exact check
(:mod:`llmdebate.formal.rational`) reads each as the decimal it is written as. States a file
does not list get a stated default (estimator: the uniform joint; prover: direction 0 and
index 0); a state's p matches a listed p within :data:`KEY_TOLERANCE` (the nearest).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from llmdebate.errors import ConfigError
from llmdebate.formal.strategies.alternatives import Alternatives, deterministic
from llmdebate.formal.strategies.estimators import EstimatorPolicy
from llmdebate.formal.strategies.judges import OracleJudge
from llmdebate.formal.strategies.provers import (
    TIE_TOLERANCE,
    ProverPolicy,
    RoundLike,
    first_argmax,
)
from llmdebate.formal.tables import Levels, index_of, levels_from_joint

FORMAT = 1
SETTING_KEYS: tuple[str, ...] = (
    "problem",
    "depth",
    "width",
    "instances",
    "seed",
    "noise",
    "variant",
)
SETTING_KEYS += ("epsilon", "rho")

StateKey = tuple[int, int, int, int]  # (instance, k, node, bits of p_k)
NUMBERS = (
    "each JSON number is exact as the decimal it is written as (llmdebate.formal.rational "
    "evaluates the file so, with no tolerance); a state's p matches the listed p nearest to it"
)
KEY_TOLERANCE = 1e-12  # a state's p matches a listed p this close (the nearest one)


def pbits(p: float) -> int:
    """The float64 bit pattern of p (exact keys: equal floats, equal keys)."""
    return int(np.float64(p).view(np.int64))


def _row_key(row: np.ndarray) -> tuple[int, ...]:
    return tuple(int(v) for v in np.asarray(row, dtype=np.float64).view(np.int64))


class TableEstimator(EstimatorPolicy):
    """B reading its numbers from tables keyed by the exact state."""

    def __init__(self, q: int, p_top: np.ndarray, name: str = "table"):
        self.q, self.p_top, self.name = q, np.asarray(p_top, dtype=np.float64), name
        self.joints: dict[StateKey, np.ndarray] = {}
        self.uniform = np.full(1 << q, 1.0 / (1 << q))
        self._index_size = -1

    def top(self, inst: np.ndarray) -> np.ndarray:
        return np.asarray(self.p_top[inst])

    def joint_at(self, inst: int, k: int, node: int, p: float) -> np.ndarray:
        """The table listed for this state: for p itself, else for the listed p nearest to p
        within :data:`KEY_TOLERANCE` (a p computed in another order, e.g. in exact arithmetic
        or by another summation, finds its table), else the uniform joint."""
        got = self.joints.get((inst, k, node, pbits(p)))
        if got is None:
            got = self._nearest(inst, k, node, p)
        return self.uniform if got is None else got

    def _nearest(self, inst: int, k: int, node: int, p: float) -> np.ndarray | None:
        if self._index_size != len(self.joints):
            self._index: dict[tuple[int, int, int], list[tuple[float, StateKey]]] = {}
            for key in self.joints:
                pk = float(np.int64(key[3]).view(np.float64))
                self._index.setdefault(key[:3], []).append((pk, key))
            self._index_size = len(self.joints)
        near = [
            (abs(pk - p), key)
            for pk, key in self._index.get((inst, k, node), [])
            if abs(pk - p) <= KEY_TOLERANCE
        ]
        return self.joints[min(near)[1]] if near else None

    def levels(self, inst: np.ndarray, k: int, node: np.ndarray, p: np.ndarray) -> Levels:
        rows = [
            self.joint_at(i, k, nd, pp)
            for i, nd, pp in zip(inst.tolist(), node.tolist(), p.tolist(), strict=True)
        ]
        joint = np.stack(rows) if rows else np.empty((0, 1 << self.q))
        return levels_from_joint(joint)


class TableProver(ProverPolicy):
    """A reading its decisions from tables keyed by the exact state and observation.

    With a ``judge`` (``greedy_last_round``), the last two decisions follow a rule instead of
    a table: at the leaf s_0 = sign(P[O = 1] - p_0), and after round 1's draws (variants that
    draw first) j = the first argmax of |P[O = 1](y_j) - p_0(j)|, p_0(j) being what the variant
    hands on (within :data:`~llmdebate.formal.strategies.provers.TIE_TOLERANCE`).
    """

    def __init__(
        self, q: int, answers: np.ndarray, name: str = "table", judge: OracleJudge | None = None
    ):
        self.q, self.answers, self.name = q, np.asarray(answers, dtype=np.int64), name
        self.judge = judge
        self.greedy = judge is not None  # a replay attaches the problem's judge (bind_judge)
        self.directions: dict[StateKey, int] = {}
        self.after_draw: dict[tuple[int, int, int, int, tuple[int, ...]], int] = {}
        self.committed: dict[tuple[int, int, int, tuple[int, ...]], int] = {}

    def bind_judge(self, judge: OracleJudge) -> None:
        """The judge the greedy last round reads (a file names only that it is greedy)."""
        if self.greedy:
            self.judge = judge

    def answer(self, inst: np.ndarray) -> Alternatives:
        return deterministic(self.answers[inst])

    def direction(self, inst: np.ndarray, k: int, node: np.ndarray, p: np.ndarray) -> Alternatives:
        if k == 0 and self.judge is not None:
            return deterministic(leaf_direction(self.judge.prob_true(inst, node), p))
        keys = zip(inst.tolist(), node.tolist(), p.tolist(), strict=True)
        s = [self.directions.get((i, k, nd, pbits(pp)), 0) for i, nd, pp in keys]
        return deterministic(np.array(s, dtype=np.int64))

    def choose_rows(
        self,
        inst: np.ndarray,
        k: int,
        node: np.ndarray,
        view: RoundLike,
        rep: np.ndarray,
        z: np.ndarray,
    ) -> Alternatives:
        if k != 1 or self.judge is None:
            return super().choose_rows(inst, k, node, view, rep, z)
        nextp = view.nextp.reshape(-1, self.q)[index_rows(rep, z)]
        return deterministic(last_round_index(self.judge, inst[rep], node[rep], nextp, self.q))

    def choose_drawn(
        self,
        inst: np.ndarray,
        k: int,
        node: np.ndarray,
        b: np.ndarray,
        nextp: np.ndarray,
        z: np.ndarray,
    ) -> Alternatives:
        if k != 1 or self.judge is None:
            return self.choose(inst, k, node, b, z)
        return deterministic(last_round_index(self.judge, inst, node, nextp, self.q))

    def choose(
        self, inst: np.ndarray, k: int, node: np.ndarray, b: np.ndarray, z: np.ndarray
    ) -> Alternatives:
        t = index_of(np.maximum(z, 0)).tolist()
        out = [
            self.after_draw.get((i, k, nd, tt, _row_key(row)), 0)
            for i, nd, tt, row in zip(inst.tolist(), node.tolist(), t, b, strict=True)
        ]
        return deterministic(np.array(out, dtype=np.int64))

    def commit(self, inst: np.ndarray, k: int, node: np.ndarray, marg: np.ndarray) -> Alternatives:
        out = [
            self.committed.get((i, k, nd, _row_key(row)), 0)
            for i, nd, row in zip(inst.tolist(), node.tolist(), marg, strict=True)
        ]
        return deterministic(np.array(out, dtype=np.int64))


def index_rows(rep: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Row of a (debates · 2^q, ...) round array for debate ``rep`` and draws z."""
    return np.asarray(rep * (1 << z.shape[1]) + index_of(z))


def leaf_direction(po: np.ndarray, p: np.ndarray) -> np.ndarray:
    """sign(P[O = 1] - p_0) within the tie tolerance: the leaf's best direction."""
    gap = po - p
    return np.where(gap > TIE_TOLERANCE, 1, np.where(gap < -TIE_TOLERANCE, -1, 0)).astype(np.int64)


def last_round_index(
    judge: OracleJudge, inst: np.ndarray, node: np.ndarray, nextp: np.ndarray, q: int
) -> np.ndarray:
    """First argmax over j of |P[O = 1](y_j) - p_0(j)| (nextp: (rows, q))."""
    kids = node[:, None] * q + np.arange(q)[None, :]
    po = judge.prob_true(np.repeat(inst, q), kids.reshape(-1)).reshape(-1, q)
    return first_argmax(np.abs(po - nextp))


@dataclass
class StrategyFile:
    """A parsed strategy file: its kind, the setting it was found for, and the policy."""

    kind: str
    setting: dict[str, Any]
    policy: TableEstimator | TableProver
    meta: dict[str, Any]


def _floats(v: np.ndarray) -> list[float]:
    return [float(x) for x in np.asarray(v, dtype=np.float64).reshape(-1)]


def estimator_document(
    est: TableEstimator, setting: dict[str, Any], meta: dict[str, Any]
) -> dict[str, Any]:
    tables = [
        {
            "instance": i,
            "k": k,
            "node": nd,
            "p": float(np.int64(pb).view(np.float64)),
            "joint": _floats(j),
        }
        for (i, k, nd, pb), j in sorted(est.joints.items())
    ]
    return {
        "format": FORMAT,
        "kind": "estimator",
        "setting": setting,
        "meta": meta,
        "default": "uniform joint at states not listed",
        "numbers": NUMBERS,
        "p_top": _floats(est.p_top),
        "tables": tables,
    }


def prover_document(
    pr: TableProver, setting: dict[str, Any], meta: dict[str, Any]
) -> dict[str, Any]:
    def f(pb: int) -> float:
        return float(np.int64(pb).view(np.float64))

    def row(bits: tuple[int, ...]) -> list[float]:
        return [f(b) for b in bits]

    return {
        "format": FORMAT,
        "kind": "prover",
        "setting": setting,
        "meta": meta,
        "default": "direction 0 and recursion index 0 at states not listed",
        "numbers": NUMBERS,
        "greedy_last_round": pr.greedy,
        "answers": [int(a) for a in pr.answers],
        "directions": [
            {"instance": i, "k": k, "node": nd, "p": f(pb), "s": s}
            for (i, k, nd, pb), s in sorted(pr.directions.items())
        ],
        "after_draw": [
            {"instance": i, "k": k, "node": nd, "z": t, "b": row(bb), "j": j}
            for (i, k, nd, t, bb), j in sorted(pr.after_draw.items())
        ],
        "committed": [
            {"instance": i, "k": k, "node": nd, "marginals": row(mm), "j": j}
            for (i, k, nd, mm), j in sorted(pr.committed.items())
        ],
    }


def write_document(path: Path, doc: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, ensure_ascii=False) + "\n", encoding="utf-8")


def _need(doc: dict[str, Any], key: str, where: str) -> Any:
    if key not in doc:
        raise ConfigError(f"{where}: missing field {key!r}")
    return doc[key]


def _parse_estimator(doc: dict[str, Any], q: int, where: str) -> TableEstimator:
    est = TableEstimator(q, np.array(_need(doc, "p_top", where), dtype=np.float64), name=where)
    for n, t in enumerate(_need(doc, "tables", where)):
        joint = np.array(t["joint"], dtype=np.float64)
        if joint.shape != (1 << q,) or (joint < 0).any() or abs(joint.sum() - 1.0) > 1e-9:
            raise ConfigError(
                f"{where}: tables[{n}].joint must be {1 << q} probabilities summing to 1"
            )
        est.joints[(int(t["instance"]), int(t["k"]), int(t["node"]), pbits(t["p"]))] = joint
    return est


def _parse_prover(doc: dict[str, Any], q: int, where: str) -> TableProver:
    pr = TableProver(q, np.array(_need(doc, "answers", where), dtype=np.int64), name=where)
    pr.greedy = bool(doc.get("greedy_last_round", False))
    for d in _need(doc, "directions", where):
        pr.directions[(int(d["instance"]), int(d["k"]), int(d["node"]), pbits(d["p"]))] = int(
            d["s"]
        )
    for d in doc.get("after_draw", []):
        key = (int(d["instance"]), int(d["k"]), int(d["node"]), int(d["z"]), _row_key(d["b"]))
        pr.after_draw[key] = int(d["j"])
    for d in doc.get("committed", []):
        ck = (int(d["instance"]), int(d["k"]), int(d["node"]), _row_key(d["marginals"]))
        pr.committed[ck] = int(d["j"])
    return pr


def read_strategy(path: str, kind: str, flag: str) -> StrategyFile:
    """Read a strategy file of ``kind`` (estimator/prover); errors name the file and flag."""
    where = f"{path} ({flag})"
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}: not JSON ({exc.msg}) ({flag})") from None
    if not isinstance(doc, dict) or doc.get("kind") != kind:
        raise ConfigError(f"{where}: field 'kind' must be {kind!r}")
    setting = _need(doc, "setting", where)
    missing = [k for k in SETTING_KEYS if k not in setting]
    if missing:
        raise ConfigError(f"{where}: setting lacks {', '.join(missing)}")
    q = int(setting["width"])
    try:
        policy: TableEstimator | TableProver = (
            _parse_estimator(doc, q, where) if kind == "estimator" else _parse_prover(doc, q, where)
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: malformed entry ({exc})") from None
    return StrategyFile(kind, dict(setting), policy, dict(doc.get("meta", {})))
