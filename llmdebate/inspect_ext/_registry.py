"""What Inspect imports through the entry point ``[project.entry-points.inspect_ai]
llmdebate``: the task ``llmdebate/debate`` (and its solver and scorers)."""

from llmdebate.inspect_ext.task import debate, debate_scorer, debate_solver, judge_scorer

__all__ = ["debate", "debate_scorer", "debate_solver", "judge_scorer"]
