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
import re
import threading
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
    if "::" not in unit_id:  # a document of a corpus without acts (a JSONL file): no act, no article number
        return [{"id": unit_id, "level": "document", "label": unit.provision.title or unit_id}]
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
    terms = query_terms(query, analyze)
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

_WORD = re.compile(r"\w+")
_MAX_PARTS = 500_000  # distinct parts (whitespace-separated pieces of text) kept per analyzer, then a fresh start
_MAX_TEXTS = 4096  # texts kept ready for a snippet, per analyzer
_KEPT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # analyzer -> _Kept
_OPEN, _CLOSE = "\x02", "\x03"  # where <mark> and </mark> go, escaped with the rest and then replaced


def snippet(text: str, terms: Iterable[str], analyze: Callable[[str], list[str]], width: int = 280) -> str:
    r"""The window of ``text`` (about ``width`` characters) with the most query terms, HTML-escaped,
    its whitespace collapsed, the matched words in ``<mark>``. A word (``\w+``) matches when one
    of its index terms is in ``terms``. The window is cut from the text with its whitespace
    already collapsed, so ``width`` counts the characters shown."""
    return snippets([text], terms, analyze, width)[0]


def snippets(texts: Sequence[str], terms: Iterable[str], analyze: Callable[[str], list[str]],
             width: int = 280) -> list[str]:
    """The :func:`snippet` of each of ``texts`` (one query's hits). A text is read as its parts
    (the pieces between whitespace), each distinct part analysed once per analyzer
    (:class:`_Kept`); which words match, where each window begins and ends and what in it is
    marked are found for all the texts in one compiled loop (:func:`_windows_source`); Python
    then cuts and marks the windows."""
    if not texts:
        return []
    kept = _kept(analyze)
    ready = [kept.text(text, analyze) for text in texts]
    query = sorted({n for n in map(kept.term_ids.get, terms) if n is not None})
    packed = b"".join((array.array("i", (len(query), *query)).tobytes(), *(r[2] for r in ready)))
    found = compiled(_windows_source)(np.frombuffer(packed, dtype=np.int32), width).tolist()
    out, at = [], 0
    for collapsed, plain, _ in ready:
        start, end, n_marks = found[at], found[at + 1], found[at + 2]
        at += 3 + 2 * n_marks
        out.append(_cut(collapsed, plain, start, end, found[at - 2 * n_marks:at]))
    return out


def matched_words(text: str, terms: Iterable[str], analyze: Callable[[str], list[str]]) -> list[tuple[int, int]]:
    r"""The (start, end) of each word (``\w+``) of ``text`` one of whose index terms is in ``terms``,
    as a snippet marks them, over the whole text (the page of a provision)."""
    wanted, seen, out = frozenset(terms), {}, []
    for m in _WORD.finditer(text):
        word = m.group()
        hit = seen.get(word)
        if hit is None:
            hit = seen[word] = not wanted.isdisjoint(analyze(word))
        if hit:
            out.append(m.span())
    return out


def query_terms(query: str, analyze: Callable[[str], list[str]]) -> frozenset[str]:
    """The terms of ``query`` that a hit's words are matched against (an analyzer's query side)."""
    query_side = getattr(analyze, "for_queries", None)  # an Analyzer reads questions with its query side
    return frozenset((query_side() if query_side is not None else analyze)(query))


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
    then the numbers, sorted), then each text's words as :func:`_words_source` packs them.
    Returns, per text: the window's start and end and the number of matched words inside it,
    then each one's start and end. A word matches when one of its terms is the query's; the
    window starts ``width // 5`` before the first matched word whose window (``width``
    characters from its start) ends the most matched words (0 where nothing matched or the text
    fits), moved to just after a space within 30 characters before; it ends ``width``
    characters later or at the text's end, moved back to a space in its second half; the
    matched words inside it are those from its start up to the first that ends past its end."""

    n_query = packed[0]
    query = packed[1:1 + n_query]
    size = most = 0
    at = 1 + n_query
    while at < len(packed):
        n_words = packed[at]
        size += 3 + 2 * n_words
        most = max(most, n_words)
        at += 4 + 3 * n_words + packed[at + 1] + packed[at + 2]
    out = np.empty(size, np.int32)
    matched = np.empty(most, np.int32)
    o, at = 0, 1 + n_query
    while at < len(packed):
        n_words, n_spaces, n_terms, length = packed[at], packed[at + 1], packed[at + 2], packed[at + 3]
        starts = at + 4
        ends = starts + n_words
        spaces = packed[ends + n_words:ends + n_words + n_spaces]  # sorted: each space's position
        counts = ends + n_words + n_spaces
        terms = counts + n_words
        at = terms + n_terms
        n_matched = 0
        for w in range(n_words):
            for t in range(terms, terms + packed[counts + w]):
                term = packed[t]
                lo = np.searchsorted(query, term)
                if lo < n_query and query[lo] == term:
                    matched[n_matched] = w
                    n_matched += 1
                    break
            terms += packed[counts + w]
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
            before = np.searchsorted(spaces, start + 1)  # text.rfind(" ", 0, start + 1)
            space = spaces[before - 1] if before else -1
            if space > 0 and start - space < 30:
                start = space + 1
        end = min(length, start + width)
        if end < length:
            before = np.searchsorted(spaces, end)  # text.rfind(" ", start, end)
            space = spaces[before - 1] if before else -1
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


def _words_source(parts, part_length, part_words, word_start, word_end, word_terms,
                  terms):  # pragma: no cover - compiled by numba
    """A text's words, packed for :func:`_windows_source`, from its ``parts`` (their numbers; the
    text is the parts joined by single spaces) and :class:`_Kept`'s table of parts (part ``p``'s
    length and words ``part_words[p]:part_words[p + 1]``, each word's start and end in its part
    and its terms ``terms[word_terms[w]:word_terms[w + 1]]``): the numbers of words, of spaces
    and of terms, the text's length, each word's start and end in the text, each space's
    position, each word's number of terms, then the terms, word after word."""
    n_words = n_terms = 0
    for p in parts:
        for w in range(part_words[p], part_words[p + 1]):
            n_words += 1
            n_terms += word_terms[w + 1] - word_terms[w]
    n_spaces = max(len(parts) - 1, 0)
    out = np.empty(4 + 3 * n_words + n_spaces + n_terms, np.int32)
    out[0], out[1], out[2] = n_words, n_spaces, n_terms
    starts, spaces = 4, 4 + 2 * n_words
    counts = spaces + n_spaces
    t = counts + n_words
    i = position = 0
    for k in range(len(parts)):
        p = parts[k]
        if k:
            out[spaces + k - 1] = position - 1
        for w in range(part_words[p], part_words[p + 1]):
            out[starts + i] = position + word_start[w]
            out[starts + n_words + i] = position + word_end[w]
            out[counts + i] = word_terms[w + 1] - word_terms[w]
            for j in range(word_terms[w], word_terms[w + 1]):
                out[t] = terms[j]
                t += 1
            i += 1
        position += part_length[p] + 1
    out[3] = max(position - 1, 0)
    return out


_ESCAPED = ("&", "<", ">", '"', "'", _OPEN, _CLOSE)  # a text with none of these is plain


class _Kept:
    r"""What snippets keep for one analyzer. Every distinct part of the texts seen (a piece between
    whitespace, such as ``"Kündigung,"``) is numbered and analysed once: its ``\w+`` words (their
    start and end in the part) and each word's index terms, numbered too. They are kept in growing
    arrays (``table``, read by :func:`_windows_source`), so a text is its parts' numbers, found by
    one dictionary look-up each; the most recent texts are kept ready as well (the collapsed text,
    whether it is ``plain``, its words packed). Parts are added under a lock; ``table`` is
    replaced whole when it grows, so a reader holding it sees every part numbered before."""

    def __init__(self) -> None:
        self.parts: dict[str, int] = {}
        self.term_ids: dict[str, int] = {}
        self.texts: OrderedDict[int, tuple[str, tuple[str, bool, bytes]]] = OrderedDict()
        self.lock = threading.Lock()
        self.table = (np.zeros(1024, np.int32), np.zeros(1025, np.int32), np.zeros(1024, np.int32),
                      np.zeros(1024, np.int32), np.zeros(1025, np.int32), np.zeros(1024, np.int32))

    def text(self, text: str, analyze) -> tuple[str, bool, bytes]:
        """``text`` ready for :func:`_windows_source`: its whitespace collapsed, whether it is
        plain (nothing to escape), its words packed (:func:`_words_source`, int32 bytes)."""
        key = hash(text)
        found = self.texts.get(key)
        if found is not None and found[0] == text:
            return found[1]
        parts = text.split()
        collapsed = " ".join(parts)
        if collapsed == text:
            collapsed = text  # one string kept, not two equal ones
        numbers = list(map(self.parts.get, parts))
        if None in numbers:
            with self.lock:
                for i, part in enumerate(parts):
                    if numbers[i] is None:
                        numbers[i] = self.parts.get(part)
                        if numbers[i] is None:
                            numbers[i] = self._add(part, analyze)
        ready = (collapsed, not any(c in text for c in _ESCAPED),
                 compiled(_words_source)(np.array(numbers, dtype=np.int32), *self.table).tobytes())
        self.texts[key] = (text, ready)
        while len(self.texts) > _MAX_TEXTS:
            try:
                self.texts.popitem(last=False)
            except KeyError:  # emptied by another thread meanwhile
                break
        return ready

    def _add(self, part: str, analyze) -> int:
        """Number ``part`` and add its words and their terms to the table (under the lock)."""
        words = [(m.start(), m.end(), [self._term(t) for t in dict.fromkeys(analyze(m.group()))])
                 for m in _WORD.finditer(part)]
        table = self.table
        # what the table holds so far: its parts are the numbered ones, their words and terms end
        # where the last part's do
        n_parts = len(self.parts)
        n_words = int(table[1][n_parts])
        n_terms = int(table[4][n_words])
        n_words_after = n_words + len(words)
        lengths = (n_parts + 1, n_parts + 2, n_words_after, n_words_after, n_words_after + 1,
                   n_terms + sum(len(t) for _, _, t in words))
        if any(len(a) < n for a, n in zip(table, lengths, strict=True)):  # a new table, each short array doubled
            table = self.table = tuple(a if len(a) >= n else _grown(a, n) for a, n in zip(table, lengths, strict=True))
        part_length, part_words, word_start, word_end, word_terms, terms = table
        part_length[n_parts] = len(part)
        part_words[n_parts + 1] = n_words_after
        for w, (start, end, numbers) in enumerate(words, n_words):
            word_start[w], word_end[w] = start, end
            word_terms[w + 1] = word_terms[w] + len(numbers)
            terms[word_terms[w]:word_terms[w + 1]] = numbers
        self.parts[part] = n_parts  # last: a reader finds the number once its rows are there
        return n_parts

    def _term(self, term: str) -> int:
        number = self.term_ids.get(term)
        if number is None:
            number = self.term_ids[term] = len(self.term_ids)  # under the lock
        return number


def _grown(a: np.ndarray, n: int) -> np.ndarray:
    """``a`` followed by zeros, at least ``n`` long and at least twice as long as before."""
    return np.concatenate((a, np.zeros(max(len(a), n - len(a)), a.dtype)))


def snippet_cache(sizes: bool = False) -> dict[str, int]:
    """What the snippets keep in this process, summed over analyzers: ``parts`` (distinct parts
    analysed) and ``texts`` (texts kept laid out); with ``sizes``, also ``table_bytes`` (the
    arrays of the parts' words and terms)."""
    kept = list(_KEPT.values())
    found = {"parts": sum(len(k.parts) for k in kept), "texts": sum(len(k.texts) for k in kept)}
    if sizes:
        found["table_bytes"] = sum(a.nbytes for k in kept for a in k.table)
    return found


def _kept(analyze) -> _Kept:
    """The :class:`_Kept` of ``analyze``, begun afresh once it holds :data:`_MAX_PARTS` parts
    (nothing kept where ``analyze`` cannot be weakly referenced)."""
    try:
        found = _KEPT.get(analyze)
        if found is None or len(found.parts) >= _MAX_PARTS:
            found = _KEPT[analyze] = _Kept()
        return found
    except TypeError:
        return _Kept()
