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

import array
import html
import itertools
import re
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from lexir.citations.format import breadcrumb_trail, format_citation
from lexir.jurisdiction import code_of
from lexir.kernels import compiled
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
    found = [_fields(view, doc_id) for doc_id, _ in results]
    hits = []
    for rank, ((doc_id, score), fields, cut) in enumerate(
            zip(results, found, snippets([f["text"] for f in found], terms, analyze), strict=True), 1):
        text = fields["text"]
        hit: dict[str, Any] = {"rank": rank, "score": round(float(score), 6), "id": doc_id, "act": fields["act"],
                               "path": fields["path"], "citation": fields["citation"], "title": fields["title"],
                               "snippet": cut}
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
_MAX_FORMS = 500_000  # word -> index terms, kept per analyzer; as many term ids before a fresh start
_MAX_TEXTS = 4096  # texts whose words and terms are kept, per analyzer
_SPANS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_OPEN, _CLOSE = "\x02", "\x03"  # where <mark> and </mark> go, escaped with the rest and then replaced


def snippet(text: str, terms: Iterable[str], analyze: Callable[[str], list[str]], width: int = 280) -> str:
    """The window of ``text`` (about ``width`` characters) with the most query terms, HTML-escaped,
    its whitespace collapsed, the matched words in ``<mark>``. A word matches when one of its index
    terms is in ``terms``. The window is cut from the text with its whitespace already collapsed
    (kept with the text's words), so ``width`` counts the characters shown."""
    return snippets([text], terms, analyze, width)[0]


def snippets(texts: Sequence[str], terms: Iterable[str], analyze: Callable[[str], list[str]],
             width: int = 280) -> list[str]:
    """The :func:`snippet` of each of ``texts`` (one query's hits). Which words match, where each
    window begins and ends and what in it is marked are found for all the texts in one compiled
    loop (:func:`_windows_source`), over what is kept of each text (:class:`_Words`); Python
    then cuts and marks the windows."""
    if not texts:
        return []
    cache = _cache(analyze)  # once: the texts' term numbers and the query's come from the same map
    words = [_words(text, analyze, cache) for text in texts]
    query = sorted({n for n in map(cache["term_ids"].get, terms) if n is not None})
    packed = b"".join((array.array("i", (len(query), *query)).tobytes(), *(w.packed for w in words)))
    found = compiled(_windows_source)(np.frombuffer(packed, dtype=np.int32), width).tolist()
    out, at = [], 0
    for w in words:
        start, end, n_marks = found[at], found[at + 1], found[at + 2]
        at += 3 + 2 * n_marks
        out.append(_cut(w.text, w.plain, start, end, found[at - 2 * n_marks:at]))
    return out


def _cut(text: str, plain: bool, start: int, end: int, marks: list[int]) -> str:
    """``text[start:end]``, HTML-escaped (unless ``plain``), its ``marks`` (start, end, start,
    end ... of the matched words inside it) in ``<mark>``; "…" where it is cut."""
    out, pos = [], start
    tags = ("<mark>", "</mark>") if plain else (_OPEN, _CLOSE)
    for i in range(0, len(marks), 2):
        s, e = marks[i], marks[i + 1]
        out += (text[pos:s], tags[0], text[s:e], tags[1])
        pos = e
    out.append(text[pos:end])
    if plain:  # nothing to escape: the tags went in as they are
        body = "".join(out).strip()
    elif _OPEN in text or _CLOSE in text:  # the markers are the text's own: escape piece by piece
        tags = {1: "<mark>", 3: "</mark>"}
        body = "".join(tags.get(i % 4) or html.escape(p) for i, p in enumerate(out)).strip()
    else:  # one escape for the whole window, then the markers become the tags
        body = html.escape("".join(out)).strip().replace(_OPEN, "<mark>").replace(_CLOSE, "</mark>")
    return ("… " if start > 0 else "") + body + (" …" if end < len(text) else "")


def _windows_source(packed, width):  # pragma: no cover - compiled by numba
    """The windows of one query's snippets. ``packed``: the query's term numbers (their count,
    then the numbers, sorted), then one :attr:`_Words.packed` per text. Returns, per text: the
    window's start and end and the number of matched words inside it, then each one's start and
    end. A word matches when one of its terms is the query's; the window starts ``width // 5``
    before the first matched word whose window (``width`` characters from its start) ends the
    most matched words (0 where nothing matched or the text fits), moved to just after a space
    within 30 characters before; it ends ``width`` characters later or at the text's end, moved
    back to a space in its second half; the matched words inside it are those from its start
    up to the first that ends past its end."""

    def last_space(spaces, n_spaces, before):
        """The last of the ``n_spaces`` sorted positions at ``packed[spaces:]`` below ``before``
        (-1: none)."""
        lo, hi = 0, n_spaces
        while lo < hi:
            mid = (lo + hi) >> 1
            if packed[spaces + mid] < before:
                lo = mid + 1
            else:
                hi = mid
        return packed[spaces + lo - 1] if lo else -1

    n_query = packed[0]
    query = packed[1:1 + n_query]
    first_text = 1 + n_query
    size = most = 0
    at = first_text
    while at < len(packed):
        n_words = packed[at]
        size += 3 + 2 * n_words
        most = max(most, n_words)
        at += 4 + 2 * n_words + packed[at + 1] + 2 * packed[at + 2]
    out = np.empty(size, np.int32)
    hit = np.zeros(most, np.bool_)
    matched = np.empty(most, np.int32)
    o, at = 0, first_text
    while at < len(packed):
        n_words, n_spaces, n_pairs, length = packed[at], packed[at + 1], packed[at + 2], packed[at + 3]
        starts = at + 4
        ends = starts + n_words
        spaces = ends + n_words
        pair_words = spaces + n_spaces
        pair_terms = pair_words + n_pairs
        at = pair_terms + n_pairs
        hit[:n_words] = False
        for p in range(n_pairs):
            term = packed[pair_terms + p]
            lo, hi = 0, n_query
            while lo < hi:
                mid = (lo + hi) >> 1
                if query[mid] < term:
                    lo = mid + 1
                else:
                    hi = mid
            if lo < n_query and query[lo] == term:
                hit[packed[pair_words + p]] = True
        n_matched = 0
        for w in range(n_words):
            if hit[w]:
                matched[n_matched] = w
                n_matched += 1
        start = 0
        if n_matched and length > width:
            # ends grow with starts, so the first match past each window only moves right
            best, best_count, j = 0, -1, 0
            for i in range(n_matched):
                limit = packed[starts + matched[i]] + width
                j = max(j, i)
                while j < n_matched and packed[ends + matched[j]] <= limit:
                    j += 1
                if j - i > best_count:
                    best, best_count = i, j - i
            start = max(0, packed[starts + matched[best]] - width // 5)
            space = last_space(spaces, n_spaces, start + 1)  # text.rfind(" ", 0, start + 1)
            if space > 0 and start - space < 30:
                start = space + 1
        end = min(length, start + width)
        if end < length:
            space = last_space(spaces, n_spaces, end)  # text.rfind(" ", start, end)
            if space >= start and space > start + width // 2:
                end = space
        out[o], out[o + 1] = start, end
        n_marks = 0
        for i in range(n_matched):
            s, e = packed[starts + matched[i]], packed[ends + matched[i]]
            if s < start:
                continue
            if e > end:
                break
            out[o + 3 + 2 * n_marks], out[o + 4 + 2 * n_marks] = s, e
            n_marks += 1
        out[o + 2] = n_marks
        o += 3 + 2 * n_marks
    return out[:o]


@dataclass(slots=True, frozen=True)
class _Words:
    """What a snippet needs of a text, whatever the query: ``text``, the text with its whitespace
    collapsed (each run one space, none at the ends: the text itself when it has no other);
    ``packed``, for the compiled loop (int32, as bytes): the numbers of words, of spaces and of
    (word, term) pairs, the text's length, each word's start, each word's end, each space's
    position, then each pair's word number and its term's number (a word's index terms, numbered
    per analyzer); ``plain``: the text has nothing HTML escapes (``&<>"'``)."""

    text: str
    packed: bytes
    plain: bool


_ESCAPED = frozenset("&<>\"'")


def _cache(analyze) -> dict[str, Any]:
    """What is kept for ``analyze``: ``texts`` (text hash -> (text, :class:`_Words`)), ``forms``
    (word -> its index terms), ``term_ids`` (index term -> its number in the texts' ``packed``)
    and ``numbers`` (the next numbers: ``next`` is atomic, so two threads adding terms at once
    never share one). Begun afresh once it holds :data:`_MAX_FORMS` term ids."""
    try:
        found = _SPANS.get(analyze)
        if found is None or len(found["term_ids"]) >= _MAX_FORMS:
            found = _SPANS[analyze] = _fresh_cache()
        return found
    except TypeError:  # not weak-referenceable: nothing kept
        return _fresh_cache()


def _fresh_cache() -> dict[str, Any]:
    return {"texts": OrderedDict(), "forms": {}, "term_ids": {}, "numbers": itertools.count()}


def _forms(word: str, forms_of: dict[str, tuple[str, ...]], analyze) -> tuple[str, ...]:
    forms = forms_of.get(word)
    if forms is None:
        forms = tuple(dict.fromkeys(analyze(word)))
        if len(forms_of) < _MAX_FORMS:
            forms_of[word] = forms
    return forms


def _words(text: str, analyze, cache: dict[str, Any]) -> _Words:
    """The :class:`_Words` of ``text``, kept in ``cache`` (:func:`_cache`) for the most recent
    texts: analysing every word is most of a new text's cost (each word's terms are kept too)."""
    texts, forms_of, term_ids, numbers = cache["texts"], cache["forms"], cache["term_ids"], cache["numbers"]
    key = hash(text)
    found = texts.get(key)
    if found is not None and found[0] == text:
        return found[1]
    parts = text.split()
    collapsed = " ".join(parts)
    if collapsed == text:
        collapsed = text  # one string kept, not two equal ones
    starts, ends, pair_words, pair_terms = [], [], [], []
    for i, m in enumerate(_WORD.finditer(collapsed)):
        starts.append(m.start())
        ends.append(m.end())
        for form in _forms(m.group(), forms_of, analyze):
            number = term_ids.get(form)
            if number is None:
                number = term_ids.setdefault(form, next(numbers))
            pair_words.append(i)
            pair_terms.append(number)
    spaces = list(itertools.accumulate((len(p) + 1 for p in parts[:-1]), initial=-1))[1:]
    packed = array.array("i", (len(starts), len(spaces), len(pair_words), len(collapsed)))
    for values in (starts, ends, spaces, pair_words, pair_terms):
        packed.extend(values)
    words = _Words(collapsed, packed.tobytes(), _ESCAPED.isdisjoint(text) and _OPEN not in text and _CLOSE not in text)
    texts[key] = (text, words)
    while len(texts) > _MAX_TEXTS:
        try:
            texts.popitem(last=False)
        except KeyError:  # emptied by another thread meanwhile
            break
    return words
