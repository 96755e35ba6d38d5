"""Evaluation of retrieval runs: measures, per-query scores, intervals, tests, tables.

ev = evaluate(run, qrels)            # every judged query, missing ones as 0
ev.mean("nDCG@10")
table = compare({"bm25": a, "dense": b}, qrels, baseline="bm25")
print(to_markdown(table))
"""

from .compare import DEFAULT_TESTS, Comparison, Estimate, PairedTest, compare
from .evaluate import Evaluation, evaluate
from .measures import DEFAULT_MEASURES, Measure
from .render import to_latex, to_markdown, to_rich_table
from .stats import McNemar, bootstrap_interval, holm, mcnemar_exact, randomisation_test, wilson_interval

__all__ = [
    "DEFAULT_MEASURES",
    "DEFAULT_TESTS",
    "Comparison",
    "Estimate",
    "Evaluation",
    "McNemar",
    "Measure",
    "PairedTest",
    "bootstrap_interval",
    "compare",
    "evaluate",
    "holm",
    "mcnemar_exact",
    "randomisation_test",
    "to_latex",
    "to_markdown",
    "to_rich_table",
    "wilson_interval",
]
