"""The data model: corpus, acts, provisions, queries, qrels and runs.

Ids follow one scheme everywhere (SPEC §1):

* an article's canonical id is ``SOURCE::ARTICLE`` (``kk::16``, ``kc::4^1``, ``BGB::823``);
* a deeper unit has a path id, the canonical id followed by ``/level:label`` steps
  (``kk::11/par:3``, ``BGB::823/abs:1/satz:2``).

Runs and qrels are keyed by these ids; they are plain mappings so that any
tool (pytrec_eval, ranx, pandas) can take them without conversion.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from lexir.ids import DocIds, IdsCollector

ID_SEP = "::"
PATH_SEP = "/"


# ---------------------------------------------------------------------------
# ids


def canonical_id(source: str, article: str) -> str:
    """``canonical_id("kk", "16") == "kk::16"``."""
    return f"{source}{ID_SEP}{article}"


def path_id(source: str, article: str, path: Iterable[tuple[str, str]] = ()) -> str:
    """``path_id("kk", "11", [("par", "3")]) == "kk::11/par:3"``."""
    steps = "".join(f"{PATH_SEP}{level}:{label}" for level, label in path)
    return canonical_id(source, article) + steps


@dataclass(frozen=True)
class UnitId:
    """A parsed canonical or path id."""

    source: str
    article: str
    path: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, text: str) -> UnitId:
        if ID_SEP not in text:
            raise ValueError(f"not a lexir id (expected SOURCE::ARTICLE[/level:label...]): {text!r}")
        source, rest = text.split(ID_SEP, 1)
        article, *steps = rest.split(PATH_SEP)
        path = []
        for step in steps:
            level, sep, label = step.partition(":")
            if not sep or not level or not label:
                raise ValueError(f"bad path step {step!r} in id {text!r}")
            path.append((level, label))
        if not source or not article:
            raise ValueError(f"empty source or article in id {text!r}")
        return cls(source, article, tuple(path))

    @property
    def canonical(self) -> str:
        return canonical_id(self.source, self.article)

    def __str__(self) -> str:
        return path_id(self.source, self.article, self.path)


def article_of(unit_id: str) -> str:
    """The canonical article id of any unit id (``kk::11/par:3`` -> ``kk::11``)."""
    return unit_id.split(PATH_SEP, 1)[0]


def act_of(unit_id: str) -> str:
    """The act (source) of any unit id (``kk::11/par:3`` -> ``kk``)."""
    return unit_id.split(ID_SEP, 1)[0]


# ---------------------------------------------------------------------------
# statutes


@dataclass
class Provision:
    """A node of an act's tree: an article, a paragraph, an item, ...

    ``level`` names the unit kind (``article``, ``par``, ``abs``, ``satz``, ``pkt``,
    ``nr``, ``lit``); ``label`` is its number as printed (``"3"``, ``"4^1"``, ``"a"``).
    ``text`` is the unit's own text including its children.
    """

    id: str
    level: str
    label: str
    text: str
    title: str = ""
    children: list[Provision] = field(default_factory=list)

    def walk(self) -> Iterator[Provision]:
        yield self
        for child in self.children:
            yield from child.walk()


@dataclass
class Division:
    """A grouping of articles above them (Buch, Teil, Abschnitt, Titel, ...): no text of its own.

    ``id`` is ``ACT::level:label`` then ``/level:label`` per level below
    (``BGB::buch:2/abschnitt:8/titel:27``); the first step's ``level:label`` takes the place of an
    article label, which never holds a ``:``, so a division id is never an article's.
    ``heading`` is the number part as printed (``Buch 2``, ``Erster Abschnitt``, ``I.``),
    ``articles`` the ids of the articles directly in it, in document order.
    """

    id: str
    level: str
    label: str
    title: str = ""
    heading: str = ""
    children: list[Division] = field(default_factory=list)
    articles: list[str] = field(default_factory=list)

    def walk(self) -> Iterator[Division]:
        yield self
        for child in self.children:
            yield from child.walk()


@dataclass
class Act:
    """A code or law: an ordered list of articles (each a provision tree), and the divisions
    above them where the law has any (:class:`Division`; empty for a flat law)."""

    id: str  # the SOURCE part of ids: "kk", "BGB"
    title: str = ""
    language: str = ""  # how its text is analysed (ISO code)
    articles: list[Provision] = field(default_factory=list)
    divisions: list[Division] = field(default_factory=list)
    jurisdiction: str = ""  # the legal order whose law it is (lexir.jurisdiction), "" when unknown

    def units(self) -> Iterator[Provision]:
        for article in self.articles:
            yield from article.walk()

    def walk_divisions(self) -> Iterator[Division]:
        for division in self.divisions:
            yield from division.walk()

    def division_path(self, article_id: str) -> list[Division]:
        """The divisions an article stands in, outermost first (``[]`` when it stands in none)."""
        def find(items: list[Division]) -> list[Division] | None:
            for d in items:
                if article_id in d.articles:
                    return [d]
                below = find(d.children)
                if below is not None:
                    return [d, *below]
            return None

        return find(self.divisions) or []


@dataclass(frozen=True)
class Document:
    """A retrievable unit: what an index holds. Usually one article."""

    id: str
    text: str
    title: str = ""

    @property
    def act(self) -> str:
        return act_of(self.id)


class Fingerprint:
    """:func:`documents_fingerprint` of documents given one at a time."""

    __slots__ = ("_digest", "_pending")

    def __init__(self) -> None:
        self._digest = hashlib.sha256()
        self._pending: list[str] = []

    def add(self, doc: Document) -> None:
        pending = self._pending
        pending.append(f"{doc.id}\0{doc.title}\0{doc.text}\1")
        if len(pending) >= 1024:  # a few large updates instead of three per document
            self._flush()

    def _flush(self) -> None:
        self._digest.update("".join(self._pending).encode())
        self._pending.clear()

    def hexdigest(self) -> str:
        self._flush()
        return self._digest.hexdigest()


def documents_fingerprint(docs: Iterable[Document]) -> str:
    """SHA-256 over every document's id, title and text (``id\0title\0text\1`` each, in order)."""
    fingerprint = Fingerprint()
    for doc in docs:
        fingerprint.add(doc)
    return fingerprint.hexdigest()


class Corpus:
    """Documents (by default: articles) of one or more acts, in order, with lookup by id.

    A corpus is never changed after it is made: its name, language, jurisdiction, documents,
    acts and parse errors are read-only, and :meth:`with_language` / :meth:`renamed` return copies
    (sharing the documents, which are frozen). So a corpus handed out by a cache can be
    shared safely, and the fingerprint computed once stays true.

    ``language`` says how the text is analysed; ``jurisdiction`` which legal order's law it is
    (``de`` and ``at`` are both German-language), "" when not known: then the order at home in
    the language is assumed (:func:`lexir.jurisdiction.jurisdiction_of`).
    """

    def __init__(
        self,
        name: str,
        documents: Iterable[Document],
        language: str = "",
        acts: Iterable[Act] = (),
        parse_errors: Iterable = (),
        jurisdiction: str = "",
    ) -> None:
        self._name = name
        self._language = language
        self._jurisdiction = jurisdiction
        self._documents: tuple[Document, ...] = tuple(documents)
        self._acts: Mapping[str, Act] = MappingProxyType({act.id: act for act in acts})
        # Sources that failed to parse (file, line, message): reported, never silently dropped.
        self._parse_errors: tuple = tuple(parse_errors)
        self._by_id: dict[str, Document] = {}
        # Shared by every copy (they hold the same documents), so it is computed once for all.
        self._fingerprint_box: list[str | None] = [None]
        for doc in self._documents:
            if doc.id in self._by_id:
                raise ValueError(f"corpus {name!r}: duplicate document id {doc.id!r}")
            self._by_id[doc.id] = doc

    @property
    def name(self) -> str:
        return self._name

    @property
    def language(self) -> str:
        return self._language

    @property
    def jurisdiction(self) -> str:
        return self.__dict__.get("_jurisdiction", "")  # a corpus pickled before it had one: ""

    @property
    def documents(self) -> tuple[Document, ...]:
        return self._documents

    @property
    def acts(self) -> Mapping[str, Act]:
        return self._acts

    @property
    def parse_errors(self) -> tuple:
        return self._parse_errors

    def _copy(self, **changes) -> Corpus:
        other = object.__new__(Corpus)
        other.__dict__.update(self.__dict__)
        for key, value in changes.items():
            setattr(other, f"_{key}", value)
        return other

    def copy(self) -> Corpus:
        """An independent corpus object with the same content (documents are shared: frozen)."""
        return self._copy()

    def with_language(self, language: str) -> Corpus:
        """The same documents analysed as ``language``: a copy; this corpus is unchanged."""
        return self._copy(language=language)

    def with_jurisdiction(self, jurisdiction: str) -> Corpus:
        """The same documents read as the law of the order ``jurisdiction`` (its code): a copy."""
        return self._copy(jurisdiction=jurisdiction)

    def renamed(self, name: str) -> Corpus:
        return self._copy(name=name)

    def __len__(self) -> int:
        return len(self.documents)

    def __iter__(self) -> Iterator[Document]:
        return iter(self.documents)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._by_id

    def __getitem__(self, doc_id: str) -> Document:
        return self._by_id[doc_id]

    def get(self, doc_id: str) -> Document | None:
        return self._by_id.get(doc_id)

    @property
    def ids(self) -> list[str]:
        return [d.id for d in self.documents]

    @property
    def fingerprint(self) -> str:
        """SHA-256 of every document's id, title and text, in order; computed once.

        Index caches, saved indexes, runs and surrogate files are keyed by it (index caches
        also by the language). A corpus is not changed after it is made, so the first value
        holds, for this corpus and every copy of it.
        """
        box = self._fingerprint_box
        if box[0] is None:
            box[0] = documents_fingerprint(self._documents)
        return box[0]

    def act_ids(self) -> list[str]:
        seen: dict[str, None] = {}
        for d in self.documents:
            seen.setdefault(d.act, None)
        return list(seen)

    def units(self) -> Iterator[Provision]:
        for act in self.acts.values():
            yield from act.units()


@dataclass(frozen=True)
class DocumentStream:
    """A corpus read one document at a time, anew on each pass, never held whole: what a BM25
    build (``lexir index`` of a JSONL corpus) needs of a corpus too large to keep in memory.

    ``read`` opens a pass (a new iterator of the documents, in order). Once a pass has ended,
    ``ids`` and ``fingerprint`` are a :class:`Corpus`'s of the same documents; a repeated id is
    an error, as in a Corpus, raised when the pass ends (naming both documents' positions). The ids
    are kept as bytes (:class:`~lexir.ids.DocIds`), never as a string each: a million German units'
    ids take 26 MiB so, about 115 MiB as strings with a set to find repeats. Nothing else of a
    Corpus is here (no lookup by id, no length): a system that needs them is built over a Corpus.
    """

    name: str
    read: Callable[[], Iterable[Document]]
    language: str = ""
    jurisdiction: str = ""
    # (ids, fingerprint) of the last full pass, in a box: the stream itself is frozen
    _passed: list = field(default_factory=list, repr=False, compare=False)

    def with_language(self, language: str) -> DocumentStream:
        return replace(self, language=language, _passed=[])

    def with_jurisdiction(self, jurisdiction: str) -> DocumentStream:
        return replace(self, jurisdiction=jurisdiction, _passed=[])

    def __iter__(self) -> Iterator[Document]:
        collected = IdsCollector(hashes=True)
        fingerprint = Fingerprint()
        for doc in self.read():
            collected.add(doc.id)
            fingerprint.add(doc)
            yield doc
        repeated = collected.repeated()
        if repeated is not None:
            doc_id, first, second = repeated
            raise ValueError(f"corpus {self.name!r}: duplicate document id {doc_id!r} "
                             f"(documents {first + 1:,} and {second + 1:,} of the stream)")
        self._passed[:] = [(collected.ids(), fingerprint.hexdigest())]

    def _after_pass(self) -> tuple[DocIds, str]:
        if not self._passed:
            raise RuntimeError(f"corpus {self.name!r} is read as a stream: its ids and fingerprint are known "
                               "once a pass has ended")
        return self._passed[0]

    @property
    def ids(self) -> DocIds:
        return self._after_pass()[0]

    @property
    def fingerprint(self) -> str:
        return self._after_pass()[1]


# ---------------------------------------------------------------------------
# queries, judgements, results


@dataclass(frozen=True)
class Query:
    id: str
    text: str
    meta: Mapping[str, object] = field(default_factory=dict, hash=False, compare=False)


# qid -> doc id -> relevance grade
Qrels = dict[str, dict[str, int]]
# qid -> doc id -> score (higher is better)
Run = dict[str, dict[str, float]]


def ranked(results: Mapping[str, float]) -> list[tuple[str, float]]:
    """Results of one query best first; ties broken by id so that order is reproducible."""
    return sorted(results.items(), key=lambda kv: (-kv[1], kv[0]))


def top_k(run: Run, k: int) -> Run:
    """A new run holding only the best ``k`` results of each query."""
    return {qid: dict(ranked(res)[:k]) for qid, res in run.items()}


@dataclass
class QuerySet:
    """Queries with their gold judgements, the queries dropped on loading and why, and splits.

    ``dropped`` holds one ``(query id, reason, detail)`` per question that could not be kept,
    so statistics can report losses the way the papers do instead of hiding them.
    """

    name: str
    queries: list[Query]
    qrels: Qrels
    dropped: list[tuple[str, str, str]] = field(default_factory=list)
    splits: dict[str, list[str]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.queries)

    def copy(self) -> QuerySet:
        """An independent query set: its own lists and judgement dicts (queries are frozen)."""
        return QuerySet(self.name, list(self.queries), {q: dict(r) for q, r in self.qrels.items()},
                        list(self.dropped), {k: list(v) for k, v in self.splits.items()})

    def split(self, name: str | None) -> QuerySet:
        """The queries of one split (``None`` or ``"all"`` gives everything)."""
        if name in (None, "all"):
            return self
        if name not in self.splits:
            valid = ", ".join(["all", *self.splits])
            raise ValueError(f"query set {self.name!r} has no split {name!r}; valid: {valid}")
        keep = set(self.splits[name])
        return QuerySet(
            f"{self.name}/{name}",
            [q for q in self.queries if q.id in keep],
            {qid: rel for qid, rel in self.qrels.items() if qid in keep},
            [d for d in self.dropped if d[0] in keep],
        )


@dataclass
class Benchmark:
    """A corpus with a query set over it: what ``lexir run``, ``eval`` and ``experiment`` work on."""

    corpus: Corpus
    queries: QuerySet

    def copy(self) -> Benchmark:
        return replace(self, corpus=self.corpus.copy(), queries=self.queries.copy())
