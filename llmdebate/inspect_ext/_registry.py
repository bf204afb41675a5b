"""What Inspect imports through the entry point ``[project.entry-points.inspect_ai]
llmdebate``: the task ``llmdebate/debate`` (and its solver and scorers) and the model
``llmdebate/scripted`` (an offline player of every role)."""

from llmdebate.inspect_ext.scripted import scripted
from llmdebate.inspect_ext.task import debate, debate_scorer, debate_solver, judge_scorer

__all__ = ["debate", "debate_scorer", "debate_solver", "judge_scorer", "scripted"]
