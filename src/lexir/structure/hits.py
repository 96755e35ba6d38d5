"""One search hit, whoever shows it: ``lexir search --format json``, the HTTP API, the web page and
the MCP tools all format a ranked document here, so a hit has one shape everywhere.

A hit is::

    {"rank", "score", "id", "act": {"id", "title"}, "path": [breadcrumbs], "citation", "title",
     "snippet", ["explain"], ["text", "docid", "doc": {"id", "title", "contents"}]}

``path`` is the act, the divisions it stands in (Buch, Abschnitt ...) and each unit from the article
down to the hit; ``citation`` is the unit as lawyers write it, with its article's level (a German
``§`` or ``Art.``), also for a unit below the article; ``snippet`` is the window of the text with
the query's terms in ``<mark>``. ``explain`` (a fused system only) gives each part's rank and score.

What does not depend on the query (act, path, citation, title) is computed once per document and
kept, within :data:`MAX_KEPT` documents per corpus; each hit is a new dict around those values,
which nobody changes.
"""

from __future__ import annotations

import bisect
import html
import re
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from lexir.citations.format import breadcrumb_trail, format_citation
from lexir.jurisdiction import code_of
from lexir.types import Act, Corpus, Provision, act_of

MAX_KEPT = 8192  # documents whose query-independent hit fields are kept, per corpus (a few MiB)


@dataclass(slots=True)
class Unit:
    """A provision with its place: its act and its parent (a million of these for German law)."""

    provision: Provision
    act: Act
    parent: str | None


def index_units(corpus: Corpus) -> tuple[dict[str, Unit], dict[str, list[str]]]:
    """Every unit of ``corpus`` by id, and each act's article ids in order. A corpus without acts
    (a BEIR folder, a JSONL file): each document is its own article."""
    units: dict[str, Unit] = {}
    order: dict[str, list[str]] = {}
    for act in corpus.acts.values():
        articles = order.setdefault(act.id, [])
        for article in act.articles:
            articles.append(article.id)
            stack: list[tuple[Provision, str | None]] = [(article, None)]
            while stack:
                unit, parent = stack.pop()
                units[unit.id] = Unit(unit, act, parent)
                stack.extend((child, unit.id) for child in unit.children)
    if not corpus.acts:
        for doc in corpus.documents:
            act_id = act_of(doc.id)
            act = Act(act_id, "", corpus.language, jurisdiction=corpus.jurisdiction)
            units[doc.id] = Unit(Provision(doc.id, "article", doc.id.split("::", 1)[-1], doc.text, doc.title),
                                 act, None)
            order.setdefault(act_id, []).append(doc.id)
    return units, order


class Units(Protocol):
    """What hits are formatted from: the corpus, its units by id, and the kept hit fields."""

    corpus: Corpus
    units: dict[str, Unit]
    kept: dict[str, dict[str, Any]]

    @property
    def language(self) -> str: ...

    @property
    def jurisdiction(self) -> str: ...


@dataclass
class UnitIndex:
    """The units of a corpus, for formatting its hits (the service's ``LoadedCorpus`` is one too)."""

    corpus: Corpus
    units: dict[str, Unit] = field(default_factory=dict)
    article_order: dict[str, list[str]] = field(default_factory=dict)
    kept: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.units:
            self.units, self.article_order = index_units(self.corpus)

    @property
    def language(self) -> str:
        return self.corpus.language

    @property
    def jurisdiction(self) -> str:
        return code_of(self.corpus)


def ancestors(units: Mapping[str, Unit], unit_id: str) -> list[str]:
    """Ids from the article down to the parent of ``unit_id``."""
    out, parent = [], units[unit_id].parent
    while parent is not None:
        out.append(parent)
        parent = units[parent].parent
    return out[::-1]


def citation(view: Units, unit_id: str) -> str:
    """``unit_id`` as cited in its jurisdiction, with the level of its article (``§`` or ``Art.``)."""
    unit = view.units.get(unit_id)
    level = "article"
    if unit is not None:
        article = view.units.get(unit_id.split("/", 1)[0])
        level = article.provision.level if article else unit.provision.level
    return format_citation(unit_id, view.jurisdiction, level)


def breadcrumbs(view: Units, unit_id: str) -> list[dict[str, str]]:
    """The act, its divisions, then each unit from the article down to ``unit_id``."""
    unit = view.units.get(unit_id)
    if unit is None:
        return []
    chain = [view.units[uid].provision for uid in [*ancestors(view.units, unit_id), unit_id]]
    return breadcrumb_trail(unit.act, unit_id, chain, view.jurisdiction)


def _fields(view: Units, doc_id: str) -> dict[str, Any]:
    """The hit fields of ``doc_id`` that do not depend on the query, computed once."""
    found = view.kept.get(doc_id)
    if found is not None:
        return found
    doc = view.corpus.get(doc_id)
    unit = view.units.get(doc_id)
    act = unit.act if unit else None
    found = {"act": {"id": act.id if act else doc_id.split("::", 1)[0], "title": act.title if act else ""},
             "path": breadcrumbs(view, doc_id), "citation": citation(view, doc_id),
             "title": doc.title if doc else "", "text": doc.text if doc else ""}
    if len(view.kept) >= MAX_KEPT:  # bounded: start again (a whole dict operation, safe across threads)
        view.kept.clear()
    view.kept[doc_id] = found
    return found


def format_hits(view: Units, results: Sequence[tuple[str, float]], query: str,
                analyze: Callable[[str], list[str]], with_text: bool = True,
                explain: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The hits of one query's ``results`` (best first); ``analyze`` decides which words of a text
    match the query (:func:`hit_analyzer`); ``explain``: a fused system's parts per document."""
    query_side = getattr(analyze, "for_queries", None)  # an Analyzer reads questions with its query side
    terms = frozenset((query_side() if query_side is not None else analyze)(query))
    hits = []
    for rank, (doc_id, score) in enumerate(results, 1):
        fields = _fields(view, doc_id)
        text = fields["text"]
        hit: dict[str, Any] = {"rank": rank, "score": round(float(score), 6), "id": doc_id, "act": fields["act"],
                               "path": fields["path"], "citation": fields["citation"], "title": fields["title"],
                               "snippet": snippet(text, terms, analyze)}
        if explain is not None:
            hit["explain"] = explain.get(doc_id, {})
        if with_text:
            hit["text"] = text
            # Anserini / Pyserini REST candidate fields, so rerankers reading those read this too.
            hit["docid"] = doc_id
            hit["doc"] = {"id": doc_id, "title": fields["title"], "contents": text}
        hits.append(hit)
    return hits


def hit_analyzer(retriever: Any, language: str) -> Callable[[str], list[str]]:
    """The analyzer that decides which words of a hit count as matched: the retriever's own when it
    has one (BM25), else the nearest one inside it (a composite's ``inner``, ``base`` and ``parts``,
    level by level: the BM25 under ``recommended``'s act cue, fusion and exam options), else a
    stemming analyzer of the language, else plain words."""
    analyzer, level, seen = None, [retriever], set()
    while level and analyzer is None:
        analyzer = next((r.analyzer for r in level if getattr(r, "analyzer", None) is not None), None)
        seen.update(map(id, level))
        level = [c for r in level for c in (getattr(r, "inner", None), getattr(r, "base", None),
                                            *(getattr(r, "parts", None) or ()))
                 if c is not None and id(c) not in seen]
    if analyzer is None:
        from lexir.analysis import Analyzer

        try:
            analyzer = Analyzer.create(language or "en", "stem")
        except ValueError:
            analyzer = Analyzer.create(language or "en", "raw")
    return analyzer


# ---------------------------------------------------------------------------
# snippets

_WORD = re.compile(r"\w+", re.UNICODE)
_MAX_FORMS = 500_000  # word -> index terms, kept per analyzer
_MAX_TEXTS = 4096  # texts whose term -> word spans map is kept, per analyzer
_SPANS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_OPEN, _CLOSE = "\x02", "\x03"  # where <mark> and </mark> go, escaped with the rest and then replaced


def snippet(text: str, terms: Iterable[str], analyze: Callable[[str], list[str]], width: int = 280) -> str:
    """The window of ``text`` (about ``width`` characters) with the most query terms, HTML-escaped,
    its whitespace collapsed, the matched words in ``<mark>``. A word matches when one of its index
    terms is in ``terms``. The window is cut from the text with its whitespace already collapsed
    (kept with the text's words), so ``width`` counts the characters shown."""
    words = _words(text, analyze)
    text = words.text
    spans: list[tuple[int, int]] = []
    if terms:
        # The terms the text and the query share (a set intersection, in C, over the smaller side);
        # a word with two matched terms is one match
        common = words.by_term.keys() & terms
        if len(common) == 1:
            spans = list(map(words.spans.__getitem__, words.by_term[common.pop()]))
        elif common:
            by_term = words.by_term
            spans = list(map(words.spans.__getitem__, sorted(set().union(*map(by_term.__getitem__, common)))))
    start = 0
    if spans and len(text) > width:
        # the window starting at a match that covers the most matches (the first such): the
        # matches ending within ``width`` of each match's start, counted by bisection (ends grow)
        ends = [e for _, e in spans]
        right = bisect.bisect_right
        covered = [right(ends, s + width) - i for i, (s, _) in enumerate(spans)]
        best = covered.index(max(covered))
        start = max(0, spans[best][0] - width // 5)
        space = text.rfind(" ", 0, start + 1)
        start = space + 1 if space > 0 and start - space < 30 else start
    end = min(len(text), start + width)
    if end < len(text):
        space = text.rfind(" ", start, end)
        end = space if space > start + width // 2 else end
    out, pos = [], start
    plain = words.plain
    for s, e in spans[bisect.bisect_left(spans, (start, start)):]:  # the matches inside the window
        if e > end:
            break
        if plain:  # nothing to escape: the tags go in as they are
            out += (text[pos:s], "<mark>", text[s:e], "</mark>")
        else:
            out += (text[pos:s], _OPEN, text[s:e], _CLOSE)
        pos = e
    out.append(text[pos:end])
    if plain:
        body = "".join(out).strip()
    elif _OPEN in text or _CLOSE in text:  # the markers are the text's own: escape piece by piece
        tags = {1: "<mark>", 3: "</mark>"}
        body = "".join(tags.get(i % 4) or html.escape(p) for i, p in enumerate(out)).strip()
    else:  # one escape for the whole window, then the markers become the tags
        body = html.escape("".join(out)).strip().replace(_OPEN, "<mark>").replace(_CLOSE, "</mark>")
    return ("… " if start > 0 else "") + body + (" …" if end < len(text) else "")


@dataclass(slots=True, frozen=True)
class _Words:
    """What a snippet needs of a text, whatever the query: ``text``, the text with its whitespace
    collapsed (each run one space, none at the ends: the text itself when it has no other); the
    (start, end) of each word in it, in order; index term -> the positions (in ``spans``) of the
    words analysing to it; ``plain``: the text has nothing HTML escapes (``&<>"'``)."""

    text: str
    spans: tuple[tuple[int, int], ...]
    by_term: dict[str, tuple[int, ...]]
    plain: bool


_ESCAPED = frozenset("&<>\"'")


def _cache(analyze) -> dict[str, Any]:
    """What is kept for ``analyze``: ``texts`` (text hash -> (text, :class:`_Words`)) and ``forms``
    (word -> its index terms)."""
    try:
        found = _SPANS.get(analyze)
        if found is None:  # (setdefault alone would build two empty maps on every call)
            found = _SPANS.setdefault(analyze, {"texts": OrderedDict(), "forms": {}})
        return found
    except TypeError:  # not weak-referenceable: nothing kept
        return {"texts": OrderedDict(), "forms": {}}


def _forms(word: str, forms_of: dict[str, tuple[str, ...]], analyze) -> tuple[str, ...]:
    forms = forms_of.get(word)
    if forms is None:
        forms = tuple(dict.fromkeys(analyze(word)))
        if len(forms_of) < _MAX_FORMS:
            forms_of[word] = forms
    return forms


def _words(text: str, analyze) -> _Words:
    """The :class:`_Words` of ``text``. Analysing every word is most of a snippet's cost, so they
    are kept for the most recent texts (and the index terms of every word seen)."""
    cache = _cache(analyze)
    texts, forms_of = cache["texts"], cache["forms"]
    key = hash(text)
    found = texts.get(key)
    if found is not None and found[0] == text:
        return found[1]
    by_term: dict[str, list[int]] = {}
    spans = []
    collapsed = " ".join(text.split())
    if collapsed == text:
        collapsed = text  # one string kept, not two equal ones
    for i, m in enumerate(_WORD.finditer(collapsed)):
        spans.append(m.span())
        for form in _forms(m.group(), forms_of, analyze):
            by_term.setdefault(form, []).append(i)
    words = _Words(collapsed, tuple(spans), {t: tuple(at) for t, at in by_term.items()},
                   _ESCAPED.isdisjoint(text) and _OPEN not in text and _CLOSE not in text)
    texts[key] = (text, words)
    while len(texts) > _MAX_TEXTS:
        try:
            texts.popitem(last=False)
        except KeyError:  # emptied by another thread meanwhile
            break
    return words
