"""Each judge's sides are balanced: honest and dishonest consultants, gold shown first and
second, as the protocols are."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from judging_study import assign, make_run, write_judges
from sqlalchemy import select

from llmdebate.judging.assign import side
from llmdebate.judging.complete import waiting_by_id
from llmdebate.judging.db import Assignment, connect
from llmdebate.records.rundir import JUDGED_FILE


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("sides")
    return make_run(tmp, ["consultancy", "two-sided"], limit=12)


@pytest.mark.parametrize("judges", [4, 5, 6, 8])
def test_with_one_judge_per_debate_each_judge_sees_both_sides(
    run_dir: Path, tmp_path: Path, judges: int
) -> None:
    for p in run_dir.glob("judging.db*"):
        p.unlink()
    (run_dir / JUDGED_FILE).unlink(missing_ok=True)
    ids = [f"j{n}" for n in range(judges)]
    assign(run_dir, write_judges(tmp_path / "j.yaml", ids, seed=judges), 1)
    waiting = waiting_by_id(run_dir)
    with connect(run_dir)() as s:
        rows = list(s.scalars(select(Assignment)))
    assert len(rows) == len(waiting) == 12 * 4  # every debate judged once
    counts: Counter[tuple[str, str, str]] = Counter()
    for a in rows:
        counts[a.judge_id, a.protocol, side(waiting[a.debate_id])] += 1
    pairs = {"consultancy": ("honest", "dishonest"), "two-sided": ("order-0", "order-1")}
    for j in ids:
        for protocol, (one, other) in pairs.items():
            n, m = counts[j, protocol, one], counts[j, protocol, other]
            assert n + m > 0 and abs(n - m) <= 1, (j, protocol, n, m)
