"""lexir: find the statutory provisions that govern a legal question, and measure how well it is done."""

from lexir.types import Act, Benchmark, Corpus, Document, Provision, Qrels, Query, QuerySet, Run

__version__ = "0.1.0"
__all__ = ["Act", "Benchmark", "Corpus", "Document", "Provision", "Qrels", "Query", "QuerySet", "Run", "__version__"]
