"""``recommended``: the best non-LLM pipeline for the corpus's legal order and language, by name.

Which pipeline that is was decided per language on development data only (Polish: the
pl-exams tune split; Greek, German and French: the known-item sets ``el-dev``, ``de-dev`` and
``fr-dev``, and for German's dense weight the lay questions' tune split; English has no
development data and follows the other Snowball languages) and is read from the
``recommended`` column of ``lexir/analysis/data/defaults.tsv``; the experiment named on each
row records the comparison it won. A legal order that chose its own on its development data
says so in its folder (:attr:`lexir.jurisdiction.Jurisdiction.recommended`: Austria, whose law
is German-language), and its corpora get that one. ``lexir systems`` prints both. Every row but
the fallback fuses dense retrieval, so a first build over a corpus encodes it (cached after).
Wherever the legal order has a citation finder, the articles a question cites itself come first
(``explicit`` around the pipeline, trained or not: :func:`cites_first`).

Registered with ``stands_for``: what a cached run of ``recommended`` is keyed by is the spec
it stands for over the corpus (:func:`lexir.retrieval.build.effective_spec`), not the name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lexir.analysis import all_language_defaults, language_defaults
from lexir.jurisdiction import find_jurisdiction, jurisdictions
from lexir.retrieval.base import Retriever, register_system
from lexir.retrieval.context import BuildContext
from lexir.retrieval.params import Param
from lexir.types import Corpus, Query, Run


class RecommendedRetriever(Retriever):
    """The language's recommended pipeline; ``spec`` says what it is."""

    name = "recommended"

    def __init__(self, inner: Retriever, spec: str, language: str) -> None:
        self.inner, self.spec, self.language = inner, spec, language

    def search_many(self, queries: Sequence[Query], k: int = 100,
                    progress: Callable[[int], None] | None = None) -> Run:
        return self.inner.search_many(queries, k, progress)

    def __repr__(self) -> str:
        return f"RecommendedRetriever({self.language}: {self.spec})"


def recommended_spec(language: str, model: str = "", seen: str = "refuse", jurisdiction: str = "") -> str:
    """The system spec ``recommended`` builds over a corpus of ``jurisdiction`` (a legal order's
    code, "" when unknown) in ``language``: the order's own pipeline where it chose one, else the
    language's row (the ``*`` row if it has none); with ``model``, the trained system of that model
    folder (:func:`lexir.learning.systems.trained_spec`). Where the legal order has a citation
    finder, the articles the question cites itself come first (``explicit(base=...)``)."""
    if model:
        from lexir.learning.systems import trained_spec

        spec = trained_spec(model, seen)
    else:
        spec = pipeline_spec(language, jurisdiction)
    return f"explicit(base={spec})" if cites_first(find_jurisdiction(jurisdiction or None, language or None)) else spec


def pipeline_spec(language: str, jurisdiction: str = "") -> str:
    """The pipeline ``recommended`` ranks with before the articles a question cites are put first:
    the legal order's own where it chose one, else its language's row (the ``*`` row if none). What
    ``lexir train recommended`` trains over by default (the cited articles go first after it)."""
    order = find_jurisdiction(jurisdiction or None, language or None)
    if order is not None and order.recommended:
        return order.recommended
    return language_defaults(language).recommended


def cites_first(order) -> bool:
    """Whether ``recommended`` puts the articles a question cites first in ``order`` (a
    :class:`lexir.jurisdiction.Jurisdiction` or None): where the order has a citation finder and
    says so (``recommended_cites_first``; the measurements that chose it: docs/systems.md)."""
    return order is not None and order.find_citations is not None and order.recommended_cites_first


def _table() -> str:
    """The pipelines, for ``lexir systems``: each language's row, then each legal order's own."""
    rows = [f"{'others' if d.language == '*' else d.language}: {d.recommended}" for d in all_language_defaults()]
    own = [f"{j.name} ({j.code}): {j.recommended}" for j in jurisdictions() if j.recommended]
    return "; ".join(rows) + (f"; a legal order's own, before its language's: {'; '.join(own)}" if own else "")


@register_system("recommended", "the best non-LLM pipeline for the corpus's legal order and language, chosen on "
                 f"development data ({_table()}), the articles a question cites itself first where the order has a "
                 "citation finder (explicit); with model=DIR (lexir train recommended) that pipeline plus what "
                 "the model learned from judged questions", stands_for=recommended_spec,
                 model=Param("", "a model folder written by `lexir train recommended` (empty: the unsupervised "
                             "pipeline)", type=str),
                 seen=Param("refuse", "with model: questions the model was trained on refuse the run, warn, "
                            "or are allowed", choices=("refuse", "warn", "allow")))
def build_recommended(corpus: Corpus, *, model: str = "", seen: str = "refuse",
                      context: BuildContext) -> RecommendedRetriever:
    if not corpus.language:
        raise ValueError(f"corpus {corpus.name!r} has no language: `recommended` is chosen per language "
                         "(give the corpus a language, e.g. --language el)")
    spec = recommended_spec(corpus.language, model, seen, jurisdiction=corpus.jurisdiction)
    if model:
        from lexir.learning.systems import build_trained
        from lexir.retrieval.cascade import ExplicitReferences

        inner = build_trained(corpus, model, context, seen=seen, expect=("recommended",))
        if spec.startswith("explicit("):  # the order puts cited articles first (recommended_spec)
            inner = ExplicitReferences(inner, corpus, corpus.language)
        return RecommendedRetriever(inner, spec, corpus.language)
    inner = context.build(spec, corpus, context.progress)
    return RecommendedRetriever(inner, spec, corpus.language)
