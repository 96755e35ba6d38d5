"""Paper-style statistics of a corpus and of a query set over it."""

from __future__ import annotations

import re
import statistics
from collections import Counter

from lexir.types import Benchmark, Corpus, QuerySet, act_of

_WORD = re.compile(r"[^\W_]+")


def n_tokens(text: str) -> int:
    """Length in word tokens (runs of letters and digits), the unit the statistics use."""
    return len(_WORD.findall(text))


def summary(values: list[float]) -> dict[str, float]:
    if not values:
        return {"mean": 0.0, "median": 0.0, "max": 0.0}
    return {"mean": statistics.fmean(values), "median": float(statistics.median(values)), "max": float(max(values))}


def corpus_stats(corpus: Corpus) -> dict:
    per_act = Counter(doc.act for doc in corpus)
    levels = Counter(unit.level for unit in corpus.units())
    kinds = Counter(article.level for act in corpus.acts.values() for article in act.articles)
    result = {
        "corpus": corpus.name,
        "language": corpus.language,
        "acts": len(per_act),
        "articles": len(corpus),
        "articles by kind": dict(kinds.most_common()),
        "units per level": dict(levels.most_common()),
        "article length (tokens)": summary([n_tokens(d.text) for d in corpus]),
        "parse errors": len(corpus.parse_errors),
    }
    if len(per_act) <= 30:
        result["articles per act"] = dict(per_act)
    for error in corpus.parse_errors[:20]:
        result.setdefault("parse error details", []).append(str(error))
    return result


def queryset_stats(queries: QuerySet, corpus: Corpus) -> dict:
    gold_counts = [len(queries.qrels.get(q.id, {})) for q in queries.queries]
    gold_articles = {doc for judged in queries.qrels.values() for doc, grade in judged.items() if grade > 0}
    reasons = Counter(reason for _, reason, _ in queries.dropped)
    # Some loaders also report single gold citations they set aside ("citation: ..."); those
    # are not dropped queries.
    dropped_queries = sum(n for reason, n in reasons.items() if not reason.startswith("citation:"))
    per_act = Counter(act_of(doc) for judged in queries.qrels.values() for doc in judged)
    result = {
        "queries": queries.name,
        "questions read": len(queries) + dropped_queries,
        "queries kept": len(queries),
        "queries dropped": dropped_queries,
        "dropped by reason": dict(reasons.most_common()),
        "qrels": sum(gold_counts),
        "distinct gold articles": len(gold_articles),
        "share of article pool": len(gold_articles) / len(corpus) if len(corpus) else 0.0,
        "gold per query": {**summary(gold_counts),
                           "share > 1": sum(c > 1 for c in gold_counts) / len(gold_counts) if gold_counts else 0.0},
        "qrels per act": dict(per_act.most_common()),
        "splits": {name: len(ids) for name, ids in queries.splits.items()},
        "query length (tokens)": summary([n_tokens(q.text) for q in queries.queries]),
        "gold article length (tokens)": summary([n_tokens(corpus[d].text) for d in gold_articles if d in corpus]),
    }
    for key in ("area", "date"):  # queries that carry them (greekbar): counts per value, as the papers' appendices
        groups: dict[str, list[int]] = {}
        for q, count in zip(queries.queries, gold_counts, strict=True):
            if q.meta.get(key) not in (None, ""):
                groups.setdefault(str(q.meta[key]), []).append(count)
        if groups:
            result[f"per {key}"] = {value: {"queries": len(c), "qrels": sum(c), "gold per query": sum(c) / len(c)}
                                    for value, c in sorted(groups.items())}
    return result


def stats(loaded: Benchmark | Corpus) -> dict:
    if isinstance(loaded, Benchmark):
        return {**queryset_stats(loaded.queries, loaded.corpus), "corpus": corpus_stats(loaded.corpus)}
    return corpus_stats(loaded)
