"""Functions behind the command line (the CLI module only parses options and calls these).

* :func:`annotate_command` — ``lexir annotate CORPUS``: surrogate annotation of a corpus;
* :func:`cost_command` — ``lexir cost DATASET --system ...``: runs systems on a query set and
  returns the quality-and-cost table (the Greek paper's Table 5).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lexir.llm.accounting import Accounting, Usage
from lexir.llm.base import LLM_PARAMS
from lexir.llm.client import LLMClient, LLMConfig
from lexir.llm.cost import SystemResult, cost_table
from lexir.retrieval.build import build_retriever


def make_client(base_url: str | None = None, model: str | None = None, config_file: str | Path | None = None,
                **settings: Any) -> LLMClient:
    """A client from explicit settings, the environment and the config file (see :class:`LLMConfig`)."""
    return LLMClient(LLMConfig.resolve(base_url, model, None, config_file, **settings))


def annotate_command(corpus: str, out: str | Path | None = None, *, base_url: str | None = None,
                     model: str | None = None, config_file: str | Path | None = None, concurrency: int | None = None,
                     limit: int | None = None, data_dir: str | Path | None = None, progress: bool = True,
                     runner=None):
    """Annotate the articles of dataset ``corpus`` (a registry name) with surrogates.

    Writes (or resumes) ``out``, default ``<cache>/surrogates/<corpus>-<fingerprint>.jsonl``
    — the path the surrogate systems read by default. Returns the
    :class:`~lexir.llm.surrogates.AnnotationReport` (print it). ``runner``: where the calls are
    made (see :func:`~lexir.llm.surrogates.annotate`; default: here, on the client's threads).
    """
    from lexir.datasets import open as open_data
    from lexir.llm.surrogates import annotate

    docs = open_data(corpus, data_dir=data_dir, want="corpus")
    client = make_client(base_url, model, config_file, concurrency=concurrency)
    try:
        return annotate(docs, client, out, progress=progress, limit=limit, runner=runner)
    finally:
        client.close()


def run_systems(dataset: str, systems: Sequence[str], *, params: Mapping[str, Mapping[str, Any]] | None = None,
                limit: int | None = None, split: str | None = None, client: LLMClient | None = None,
                data_dir: str | Path | None = None, k: int = 100) -> tuple[list[SystemResult], Accounting]:
    """Run each system (a spec such as ``react-bm25(rounds=2)``) on the first ``limit`` queries.

    LLM systems share ``client`` (default: one from environment and config file), so the
    returned :class:`Accounting` holds every call; non-LLM systems cost nothing.
    """
    from lexir.datasets import open as open_data
    from lexir.retrieval.base import get_system
    from lexir.retrieval.spec import parse_spec

    bench = open_data(dataset, data_dir=data_dir, want="queries")
    queryset = bench.queries.split(split)
    queries = queryset.queries[:limit] if limit else queryset.queries
    results = []
    for text in systems:
        spec = parse_spec(text)
        values = {**spec.param_dict, **dict((params or {}).get(text, {}))}
        llm = calls_llm(get_system(spec.name))
        if llm and client is None:
            client = make_client()
        retriever = build_retriever(bench.corpus, spec.name, values, client=client)
        run = retriever.search_many(list(queries), k)
        if llm:
            row = SystemResult.from_accounting(text, run, client.accounting, queryset.qrels,
                                               account_as=getattr(retriever, "name", spec.name))
        else:
            row = SystemResult(text, run, Usage(), queryset.qrels)
        row.n_queries = len(queries)
        results.append(row)
        by_round = getattr(retriever, "run_by_round", None)
        if by_round and client is not None:  # ReAct: a row per reported round, with the calls up to it
            for rnd in sorted(by_round)[:-1]:
                partial = Usage()
                for r in client.accounting.records:
                    if r.system == retriever.name and r.qid in run and r.step <= rnd:
                        partial.add(r)
                results.insert(len(results) - 1, SystemResult(f"{text} @round {rnd}", by_round[rnd], partial,
                                                              queryset.qrels, len(queries)))
    return results, (client.accounting if client is not None else Accounting())


def calls_llm(system) -> bool:
    """Whether a registered system asks an LLM (it takes the LLM settings, :data:`LLM_PARAMS`)."""
    return set(LLM_PARAMS) <= set(system.params)


def cost_command(dataset: str, systems: Sequence[str], *, fmt: str = "rich", **kwargs: Any):
    """The quality-and-cost table (rich Table or markdown text) of :func:`run_systems`."""
    results, _accounting = run_systems(dataset, systems, **kwargs)
    return cost_table(results, fmt=fmt)
