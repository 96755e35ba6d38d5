"""lexir: find the statutory provisions that govern a legal question, and measure how well it is done.

One import gives the verbs (see :mod:`lexir.api`)::

    import lexir
    bench = lexir.load("pl-exams")
    run = lexir.retrieve(lexir.build(bench, "bm25", k1=0.9), bench.queries.split("test"))
    lexir.evaluate(run, bench.queries).mean("nDCG@10")
"""

from lexir import (
    jurisdictions,  # noqa: F401  (the catalogue of legal orders: see lexir.jurisdictions)
    systems,  # noqa: F401  (the whole catalogue of systems: see lexir.systems)
)
from lexir._version import __version__
from lexir.api import build, compare, evaluate, find_citations, fuse, load, retrieve, train
from lexir.types import Act, Benchmark, Corpus, Document, Provision, Qrels, Query, QuerySet, Run

__all__ = [
    "Act", "Benchmark", "Corpus", "Document", "Provision", "Qrels", "Query", "QuerySet", "Run", "__version__",
    "build", "compare", "evaluate", "find_citations", "fuse", "load", "retrieve", "train",
]
