"""BM25 over structure-aware chunks, with one-hop graph expansion (German statute-graph paper).

``bm25-chunks`` indexes the chunks of :mod:`lexir.structure.chunking` at one level (``para``,
``abs``, ``satz``, ``nr``, ``lit`` or ``words100``) and answers with unit ids (a structural
chunk's id is its unit's path id; a ``words100`` window keeps its own id ``BGB::823#w0`` so that
each window is charged its own words). With ``aggregate=article`` chunk scores are max-pooled to
their articles (exactly, over every chunk) and article ids are returned.

``expand`` adds, after each of the top-k hits, its one-hop neighbours in the statute graph:
``parent`` (the containing unit; nothing for an article, whose parent is the act; a ``words100``
window's parent is its article), ``cites`` (the units the hit's text cites, resolved in the
graph), or ``both``. Expanded units get scores between the hit's and the next hit's, are never a
unit already among the hits, appear once, and are marked: :meth:`ChunkRetriever.hits` returns
:class:`Hit` objects whose ``origin`` names the hit they were added for, so ToER can charge their
words or not (:func:`lexir.evaluation.depth.toer`). ``k`` counts hits, not expansions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lexir.arrays import DAMAGED, delimits, load_row
from lexir.io.generations import loads, new_generation
from lexir.io.markers import read_marker, write_marker
from lexir.retrieval.base import Retriever, register_system
from lexir.retrieval.bm25 import BM25Retriever, make_analyzer
from lexir.structure.chunking import LEVELS, WINDOW_SEP, chunk_acts
from lexir.structure.graph import StatuteGraph, cached_graph
from lexir.types import ID_SEP, PATH_SEP, Corpus, Document, Provision, Query, Run, article_of

EXPANSIONS = ("none", "parent", "cites", "both")
AGGREGATES = ("unit", "article")
FORMAT_VERSION = 1
SYSTEM = "bm25-chunks"
MARKER = "lexir.json"


@dataclass(frozen=True)
class Hit:
    id: str
    score: float
    origin: str | None = None  # for an expanded unit: the hit it was added for

    @property
    def expanded(self) -> bool:
        return self.origin is not None


class ChunkRetriever(Retriever):
    name = "bm25-chunks"

    def __init__(
        self,
        bm25: BM25Retriever,
        chunk_text: Mapping[str, str],
        partial: set[str],
        units: dict[str, Provision] | Callable[[], dict[str, Provision]],
        level: str,
        aggregate: str = "unit",
        expand: str = "none",
        graph: StatuteGraph | Callable[[], StatuteGraph] | None = None,
        fingerprint: str = "",
        source: dict | None = None,
    ) -> None:
        """``chunk_text``: chunk id -> text; ``partial``: the chunks holding only part of their
        unit's text (the unit's own text beside its children); ``units``: the unit table, or a
        function giving it when first needed (a loaded index); ``fingerprint``: of the corpus the
        chunks come from; ``source``: what :meth:`save` records of it (name, language, graph)."""
        if aggregate not in AGGREGATES:
            raise ValueError(f"unknown aggregate {aggregate!r}; valid: {', '.join(AGGREGATES)}")
        if expand not in EXPANSIONS:
            raise ValueError(f"unknown expand {expand!r}; valid: {', '.join(EXPANSIONS)}")
        self.bm25 = bm25
        self.level, self.aggregate, self.expand = level, aggregate, expand
        self._units = units
        self.chunk_text = chunk_text
        self.partial = partial
        self.fingerprint = fingerprint
        self.source = dict(source or {})
        self._graph = graph
        if aggregate == "article":
            articles: dict[str, int] = {}
            self._article_of_chunk = np.array(
                [articles.setdefault(article_of(cid.split(WINDOW_SEP, 1)[0]), len(articles))
                 for cid in bm25.doc_ids], dtype=np.int64)
            self._articles = list(articles)

    @property
    def units(self) -> dict[str, Provision]:
        """Unit id -> provision, of the corpus the chunks come from (built on first use when loaded)."""
        if callable(self._units):
            self._units = self._units()
        return self._units

    @property
    def graph(self) -> StatuteGraph:
        if callable(self._graph) and not isinstance(self._graph, StatuteGraph):
            self._graph = self._graph()
        if self._graph is None:
            raise RuntimeError("cites expansion needs a statute graph")
        return self._graph

    # -- searching --------------------------------------------------------------------------

    def search_many(
        self, queries: Sequence[Query], k: int = 100, progress: Callable[[int], None] | None = None
    ) -> Run:
        """Chunk hits come from BM25's batched top-k (its kernel selects them) instead of a full
        score vector per query sorted here: what makes a million chunks answer ~1,000 queries/s.
        Article pooling needs every chunk's score, so it keeps the per-query path."""
        if self.aggregate != "unit":
            return self.each(queries, lambda q: [(h.id, h.score) for h in self.hits(q.text, k)], progress)
        run = self.bm25.search_many(queries, k, progress)
        if self.expand == "none":
            return run
        out: Run = {}
        for qid, hits in run.items():
            ranked_hits = [Hit(doc, score) for doc, score in sorted(hits.items(), key=lambda kv: (-kv[1], kv[0]))]
            out[qid] = {h.id: h.score for h in self.expand_hits(ranked_hits, self.expand)}
        return out

    def search_marked(
        self, queries: Sequence[Query], k: int = 100, expand: str | None = None
    ) -> tuple[Run, dict[str, dict[str, str]]]:
        """The run and, per query, expanded unit id -> the hit it was added for."""
        run: Run = {}
        marks: dict[str, dict[str, str]] = {}
        for q in queries:
            hits = self.hits(q.text, k, expand)
            run[q.id] = {h.id: h.score for h in hits}
            marks[q.id] = {h.id: h.origin for h in hits if h.origin is not None}
        return run, marks

    def hits(self, text: str, k: int = 100, expand: str | None = None) -> list[Hit]:
        base = self._retrieve(text, k)
        return self.expand_hits(base, expand or self.expand)

    def _retrieve(self, text: str, k: int) -> list[Hit]:
        # Scores of every chunk (ScoreMatrix.scores; no numba compilation on first use), then top k.
        scores = np.asarray(self.bm25.scores(text), dtype=np.float64)
        names = self.bm25.doc_ids
        if self.aggregate == "article":
            pooled = np.zeros(len(self._articles), dtype=np.float64)
            np.maximum.at(pooled, self._article_of_chunk, scores)
            scores, names = pooled, self._articles
        k = min(k, int((scores > 0).sum()))  # a chunk matching no query term is not a result
        if k <= 0:
            return []
        top = np.argpartition(-scores, k - 1)[:k]
        order = sorted(top.tolist(), key=lambda i: (-scores[i], names[i]))
        return [Hit(names[i], float(scores[i])) for i in order]

    # -- expansion --------------------------------------------------------------------------

    def expand_hits(self, hits: list[Hit], expand: str = "none") -> list[Hit]:
        if expand not in EXPANSIONS:
            raise ValueError(f"unknown expand {expand!r}; valid: {', '.join(EXPANSIONS)}")
        if expand == "none" or not hits:
            return list(hits)
        taken = {h.id for h in hits}
        out: list[Hit] = []
        for n, hit in enumerate(hits):
            out.append(hit)
            extra = []
            if expand in ("parent", "both"):
                extra.extend(self._parent(hit.id))
            if expand in ("cites", "both"):
                extra.extend(self._cited(hit.id))
            extra = [u for u in dict.fromkeys(extra) if u not in taken]
            taken.update(extra)
            nxt = hits[n + 1].score if n + 1 < len(hits) else hit.score / 2
            gap = hit.score - nxt
            for j, unit in enumerate(extra, 1):
                out.append(Hit(unit, hit.score - gap * j / (len(extra) + 1), hit.id))
        return out

    def _parent(self, hit: str) -> list[str]:
        if WINDOW_SEP in hit:
            return [hit.split(WINDOW_SEP, 1)[0]]
        if self.aggregate == "article" or PATH_SEP not in hit:
            return []  # an article's parent is its act: no text unit
        return [hit.rsplit(PATH_SEP, 1)[0]]

    def _cited(self, hit: str) -> list[str]:
        graph = self.graph
        unit = hit.split(WINDOW_SEP, 1)[0]
        if unit not in graph:
            return []
        targets = graph.neighbours(unit, "cites") if hit in self.partial else graph.cites_within(unit)
        targets = [t for t in targets if ID_SEP in t]  # act nodes carry no text of their own
        if self.aggregate == "article":
            own = article_of(unit)
            targets = [a for a in dict.fromkeys(article_of(t) for t in targets) if a != own]
        return targets

    # -- text of results --------------------------------------------------------------------

    def text_of(self, hit_id: str) -> str:
        """The text a result stands for: a chunk's text, or an (expanded or article) unit's text."""
        text = self.chunk_text.get(hit_id) if self.aggregate == "unit" else None
        if text is None:
            unit = self.units.get(hit_id)
            text = unit.text if unit is not None else ""
        return text

    def words(self, hit_id: str) -> int:
        return len(self.text_of(hit_id).split())

    # -- persistence ------------------------------------------------------------------------

    def config(self) -> dict:
        cls = type(self)
        return {"format": FORMAT_VERSION, "system": SYSTEM, "class": f"{cls.__module__}:{cls.__qualname__}",
                "level": self.level, "aggregate": self.aggregate, "expand": self.expand,
                "fingerprint": self.fingerprint, "source": self.source}

    def save(self, folder: str | Path) -> Path:
        """The BM25 index (``bm25/``, loaded memory-mapped), the chunk texts as one UTF-8 file
        with their byte offsets, a mask of the partial chunks, and ``lexir.json``, as a new generation
        of ``folder`` (:mod:`lexir.io.generations`).
        The unit table and the graph are not saved: they come from the corpus when needed."""
        folder = Path(folder)
        with new_generation(folder) as gen:
            self.bm25.save(gen / "bm25")
            ids = self.bm25.doc_ids
            if isinstance(self.chunk_text, PackedTexts) and self.chunk_text.ids is ids:
                blob, offsets = self.chunk_text.blob, self.chunk_text.offsets
            else:
                encoded = [self.chunk_text[i].encode("utf-8") for i in ids]
                offsets = np.zeros(len(ids) + 1, dtype=np.int64)
                np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(ids)), out=offsets[1:])
                blob = b"".join(encoded)
            (gen / "texts.bin").write_bytes(blob)
            np.save(gen / "offsets.npy", offsets)
            np.save(gen / "partial.npy", np.fromiter((i in self.partial for i in ids), dtype=bool, count=len(ids)))
            write_marker(gen / MARKER, self.config())
        return folder

    @classmethod
    @loads
    def load(cls, folder: str | Path, corpus: Corpus | None = None, mmap: bool = True) -> ChunkRetriever:
        """A saved index. The unit table (and the graph, for ``expand=cites``) is built from
        ``corpus`` when first needed; without it, from the registered corpus of the saved name.
        Either must be the corpus the index was built from (same fingerprint)."""
        folder = Path(folder)
        meta = read_marker(folder / MARKER, f"lexir {SYSTEM} index", FORMAT_VERSION)
        if meta.get("system") != SYSTEM:
            raise ValueError(f"{folder} holds a {meta.get('system')} index, not {SYSTEM}")
        fingerprint, source = meta["fingerprint"], meta.get("source") or {}
        if corpus is not None and corpus.fingerprint != fingerprint:
            raise ValueError(f"index {folder} was built from a different corpus than {corpus.name!r}")
        bm25 = BM25Retriever.load(folder / "bm25", mmap=mmap)
        ids = bm25.doc_ids
        offsets = load_row(folder / "offsets.npy", ("int64",), mmap, length=len(ids) + 1)
        blob: bytes | np.ndarray = (np.memmap(folder / "texts.bin", dtype=np.uint8, mode="r")
                                    if mmap and offsets[-1] else (folder / "texts.bin").read_bytes())
        mask = load_row(folder / "partial.npy", ("bool",), mmap=False, length=len(ids))
        if not delimits(offsets, len(blob)):
            raise ValueError(f"{folder / 'offsets.npy'}: the offsets do not delimit texts.bin's {len(blob)} bytes "
                             f"({DAMAGED})")
        partial = {ids[i] for i in np.flatnonzero(mask).tolist()}
        get_corpus = _corpus_source(folder, corpus, source, fingerprint)
        graph_path = source.get("graph") or ""
        graph = (lambda: StatuteGraph.load(graph_path)) if graph_path else (lambda: cached_graph(get_corpus()))
        return cls(bm25, PackedTexts(ids, blob, offsets), partial, lambda: unit_table(get_corpus()),
                   meta["level"], meta["aggregate"], meta["expand"], graph, fingerprint, source)


class PackedTexts(Mapping):
    """Chunk id -> text over one UTF-8 buffer (a memory map for a loaded index) and the byte
    offsets of each chunk, in the index's document order: texts are decoded when asked for, and
    the id -> position table is made on the first look-up."""

    def __init__(self, ids: list[str], blob: bytes | np.ndarray, offsets: np.ndarray) -> None:
        self.ids, self.blob, self.offsets = ids, blob, offsets
        self._position: dict[str, int] | None = None

    def __getitem__(self, chunk_id: str) -> str:
        if self._position is None:
            self._position = {c: i for i, c in enumerate(self.ids)}
        i = self._position[chunk_id]
        start, end = int(self.offsets[i]), int(self.offsets[i + 1])
        return bytes(self.blob[start:end]).decode("utf-8")

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)


def _corpus_source(folder: Path, corpus: Corpus | None, source: dict, fingerprint: str) -> Callable[[], Corpus]:
    """A function giving the corpus a loaded index was built from: ``corpus``, or the registered
    corpus of the saved name, loaded once and checked against the saved fingerprint."""
    box: list[Corpus] = [corpus] if corpus is not None else []

    def get() -> Corpus:
        if not box:
            name = source.get("corpus") or ""
            try:
                from lexir.datasets import is_path
                from lexir.datasets import open as open_data

                if not name or is_path(name):
                    raise ValueError("no registered corpus name saved")
                found = open_data(name, language=source.get("language") or None, want="corpus")
            except Exception as err:  # noqa: BLE001 - unknown, unreadable or unparsable: said below
                raise ValueError(f"index {folder} needs the corpus it was built from ({name or 'unnamed'}) for "
                                 f"unit texts and expansion: load it with that corpus ({err})") from None
            if found.fingerprint != fingerprint:
                raise ValueError(f"index {folder} was built from another version of corpus {name!r}; rebuild it")
            box.append(found)
        return box[0]

    return get


def _graph_corpus(corpus: Corpus, language: str) -> Corpus:
    """``corpus`` in the language the index was built for (a corpus without one takes ``language``),
    so its graph's citations are found by that language's finder."""
    return corpus if corpus.language or not language else corpus.with_language(language)


def unit_table(corpus: Corpus) -> dict[str, Provision]:
    return {u.id: u for act in corpus.acts.values() for u in act.units()}


def build_chunk_retriever(
    corpus: Corpus,
    level: str = "para",
    aggregate: str = "unit",
    expand: str = "none",
    graph: StatuteGraph | str | Path | None = None,
    *,
    k1: float = 1.2, b: float = 0.75, mode: str = "raw", stopwords: bool = True, lemmatizer: str = "simplemma",
    language: str = "", method: str = "lucene", title_weight: int = 1, dedupe_query: bool = True,
    progress: Callable[[int], None] | None = None,
) -> ChunkRetriever:
    """Chunk ``corpus.acts`` at ``level``, index the chunks with BM25, wrap with expansion.

    ``graph`` is a built :class:`StatuteGraph`, a folder it was saved in, or None (the corpus's
    graph through the graph cache on first need, :func:`lexir.structure.graph.cached_graph`: the
    one the service and ``lexir graph build`` use, found with the corpus language's citations)."""
    if level not in LEVELS:
        raise ValueError(f"unknown chunking level {level!r}; valid: {', '.join(LEVELS)}")
    if not corpus.acts:
        raise ValueError(f"corpus {corpus.name!r} holds no parsed acts: bm25-chunks needs provision trees")
    acts = list(corpus.acts.values())
    chunks = [Document(c.id, c.text, c.title) for c in chunk_acts(acts, level)]
    chunk_corpus = Corpus(f"{corpus.name}#{level}", chunks, language=corpus.language or language,
                          jurisdiction=corpus.jurisdiction)
    analyzer = make_analyzer(chunk_corpus, language, mode, stopwords, lemmatizer)
    bm25 = BM25Retriever(analyzer, k1, b, method, title_weight, dedupe_query).index(chunk_corpus, progress)
    graph_path = str(graph) if isinstance(graph, str | Path) else ""
    if isinstance(graph, str | Path):
        graph = StatuteGraph.load(graph) if str(graph) else None
    units = unit_table(corpus)
    partial = {d.id for d in chunks if d.id in units and len(d.text) < len(units[d.id].text)}
    source = {"corpus": corpus.name, "language": corpus.language, "graph": graph_path}
    return ChunkRetriever(bm25, {d.id: d.text for d in chunks}, partial, units, level, aggregate, expand,
                          graph if graph is not None else (lambda: cached_graph(_graph_corpus(corpus, language))),
                          corpus.fingerprint, source)


@register_system(
    "bm25-chunks",
    "BM25 over structure-aware chunks (level=para|abs|satz|nr|lit|words100), optional one-hop "
    "graph expansion (expand=parent|cites|both) and max-pooling to articles (aggregate=article)",
    level="para", aggregate="unit", expand="none", graph="", k1=1.2, b=0.75, mode="raw", stopwords=True,
    lemmatizer="simplemma", language="", method="lucene", title_weight=1, dedupe_query=True,
)
def build_bm25_chunks(corpus: Corpus, *, level, aggregate, expand, graph, k1, b, mode, stopwords, lemmatizer,
                      language, method, title_weight, dedupe_query, progress=None,
                      statute_graph: StatuteGraph | None = None) -> ChunkRetriever:
    return build_chunk_retriever(
        corpus, level, aggregate, expand, statute_graph if statute_graph is not None else (graph or None),
        k1=k1, b=b, mode=mode, stopwords=stopwords, lemmatizer=lemmatizer, language=language, method=method,
        title_weight=title_weight, dedupe_query=dedupe_query, progress=progress,
    )
