"""Controls that bound what retrieval can do: random, oracle and oracle-act.

They need each query's id (and the gold, for the oracles), so they answer ``search_many``
only; ``search`` on free text is refused with a clear error. Randomness is seeded by the
query id, so a control's run is the same every time.

* ``random``     - ``k`` articles drawn uniformly from the corpus;
* ``oracle``     - the gold articles first, then the ``base`` system's results (gold injected);
* ``oracle-act`` - articles drawn at random from the gold's act(s): the right act, random
  articles (the Polish paper's oracle-doc).
"""

from __future__ import annotations

import hashlib
import random as _random
from collections.abc import Callable, Sequence

from lexir.retrieval.base import Retriever, register_system
from lexir.retrieval.context import BuildContext
from lexir.types import Corpus, Qrels, Query, Run


def _rng(seed: int, qid: str) -> _random.Random:
    digest = hashlib.sha256(f"{seed}:{qid}".encode()).digest()
    return _random.Random(int.from_bytes(digest[:8], "big"))


class Control(Retriever):
    def __init__(self, corpus: Corpus, qrels: Qrels | None, seed: int, name: str,
                 base: Retriever | None = None) -> None:
        if name != "random" and qrels is None:
            raise ValueError(f"the {name} control needs the gold (qrels) of the queries it answers")
        self.corpus, self.qrels, self.seed, self.name, self.base = corpus, qrels or {}, seed, name, base
        self.by_act: dict[str, list[str]] = {}
        for doc in corpus:
            self.by_act.setdefault(doc.act, []).append(doc.id)

    def rank(self, query: Query, k: int, base_results: dict[str, float]) -> list[str]:
        rng = _rng(self.seed, query.id)
        gold = [d for d, g in self.qrels.get(query.id, {}).items() if g > 0 and d in self.corpus]
        if self.name == "random":
            return rng.sample(self.corpus.ids, min(k, len(self.corpus)))
        if self.name == "oracle-act":
            pool = sorted({doc for g in gold for doc in self.by_act.get(self.corpus[g].act, [])})
            return rng.sample(pool, min(k, len(pool)))
        rest = [d for d, _ in sorted(base_results.items(), key=lambda kv: (-kv[1], kv[0])) if d not in gold]
        return (gold + rest)[:k]

    def search_many(self, queries: Sequence[Query], k: int = 100,
                    progress: Callable[[int], None] | None = None) -> Run:
        base_run = self.base.search_many(queries, k) if self.base is not None else {}

        def one(query: Query) -> list[tuple[str, float]]:
            ids = self.rank(query, k, base_run.get(query.id, {}))
            return [(doc, float(len(ids) - i)) for i, doc in enumerate(ids)]

        return self.each(queries, one, progress)


@register_system("random", "control: k articles drawn at random (seeded by query id)", seed=0)
def build_random(corpus: Corpus, *, seed) -> Control:
    return Control(corpus, None, seed, "random")


@register_system("oracle", "control: the gold articles injected first, then the base system's ranking",
                 base="bm25", seed=0)
def build_oracle(corpus: Corpus, *, base, seed, context: BuildContext) -> Control:
    return Control(corpus, context.qrels, seed, "oracle", context.build(base, corpus, context.progress))


@register_system("oracle-act", "control: random articles of the gold article's act (right act, random articles)",
                 seed=0)
def build_oracle_act(corpus: Corpus, *, seed, context: BuildContext) -> Control:
    return Control(corpus, context.qrels, seed, "oracle-act")
