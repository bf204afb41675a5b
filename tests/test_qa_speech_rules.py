"""Speech rules in the speech protocols: a reply over the word limit is asked again once, then
cut at a sentence end with a visible marker (recorded); a reply under the minimum is asked
again, then kept; quotes over the budget are left out of what the judge reads; the private
scratchpad reaches neither the judge nor the other debater, and is kept in the transcript."""

from __future__ import annotations

from pathlib import Path

from fixtures.qa_fixtures import SECRET_MARK, pieces
from qa_passage import leaks, passage, request_text, run_scripted, windows

from llmdebate.qa.speech import truncation_marker
from llmdebate.records.rundir import load_transcripts


def _speeches(run_dir: Path) -> list:
    return [t for t in load_transcripts(run_dir) if t.protocol in ("two-sided", "consultancy")]


def test_over_the_word_limit_is_reasked_then_cut_and_the_scratchpad_stays_private(
    tmp_path: Path,
) -> None:
    run_dir, models = run_scripted(
        tmp_path, {}, protocols=["two-sided", "consultancy"],
        prover={"model": "scripted", "max_words": 30},
    )
    ts = _speeches(run_dir)
    assert len(ts) == 4 and all(t.status == "complete" for t in ts), [t.failure for t in ts]
    for t in ts:
        for turn in [x for x in t.turns if x.role != "judge"]:
            decisions = [d["decision"] for d in turn.rules["words"]]
            assert decisions == ["reask", "truncated"] and turn.rules["reasks"] == 1
            assert turn.text.endswith(truncation_marker(30))
            assert turn.rules["words"][1]["kept_words"] <= 30
            assert turn.thinking is not None and turn.thinking.startswith(SECRET_MARK)
            head = f"argue round {turn.round}"
            own = [c for c in t.calls if c.role == turn.role and c.act.startswith(head)]
            acts = [c.act for c in own]
            assert acts == [f"argue round {turn.round}", f"argue round {turn.round} (re-ask)"]
            assert "over the limit of 30" in own[1].messages[-1]["content"]
        # the scratchpad appears only in its author's own re-ask (as the reply it wrote); its
        # passage text reaches no judge (the leak check below), the debaters read the story
        for c in t.calls:
            for i, m in enumerate(c.messages):
                if SECRET_MARK in m["content"]:
                    assert c.act.endswith("(re-ask)") and m["role"] == "assistant", (c.role, i)
                    assert c.role in {x.role for x in t.turns}
    judge_texts = [request_text(c.messages) for t in ts for c in t.calls if c.role == "judge"]
    judge_texts += [request_text(m) for m in models["judge"].backend.requests]  # type: ignore[attr-defined]
    assert judge_texts and not any(SECRET_MARK in x for x in judge_texts)
    assert not any(leaks(x, windows(passage())) for x in judge_texts)
    # debater B heard debater A's argument (cut), never its scratchpad
    two = next(t for t in ts if t.protocol == "two-sided")
    b1 = next(c for c in two.calls if c.role == "debater B" and c.act == "argue round 1")
    assert truncation_marker(30) in b1.messages[-1]["content"]
    assert SECRET_MARK not in request_text(b1.messages)


def test_under_the_minimum_is_reasked_then_kept_and_quotes_over_budget_are_left_out(
    tmp_path: Path,
) -> None:
    run_dir, _ = run_scripted(
        tmp_path, {}, protocols=["consultancy"], rounds=1,
        prover={"model": "scripted", "min_words": 200, "quote_words": 5},
    )
    ts = _speeches(run_dir)
    assert len(ts) == 2
    quote = pieces(passage())["quote"]
    for t in ts:
        (turn,) = [x for x in t.turns if x.role == "consultant"]
        assert [d["decision"] for d in turn.rules["words"]] == ["reask", "short"]
        assert "quote_budget" in turn.rules
        marked = [q["status"] for q in turn.quotes or [] if not q.get("copied")]
        assert marked == ["over_budget", "over_budget"]
        assert all(q["status"] == "over_budget" for q in turn.quotes or [])
        (judged,) = [c for c in t.calls if c.role == "judge"]
        text = request_text(judged.messages)
        assert quote not in text and "over the budget" in text
