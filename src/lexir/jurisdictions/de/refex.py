"""The German legal reference benchmark of Open Legal Data ("refex"): court decisions with gold
law citations, and a scorer for citation finders.

Files (``documents.jsonl``, ``annotations.jsonl``; schemas ``*.schema.json``): one decision a
line with ``doc_id`` and ``text``; one annotation a line with ``doc_id`` and ``citations``, of
which those with ``type == "law"`` are kept: ``span{start,end,text}`` (offsets into ``text``),
``book`` (the act as refex writes it, lower case: ``"bgb"``, or a name such as
``"sozialgerichtsgesetzes"``; null for EU directives and bare numbers), ``number`` (``"823"``)
and ``structure`` (``absatz``, ``satz``, ``nummer``, …).

Scoring (:func:`score_citations`)
    Span-overlap matching, one to one, per document: a found citation matches a gold one when
    their spans overlap and their keys agree. The key is (book, number) at level
    ``"paragraph"`` and (book, number, absatz) at level ``"absatz"``. Books are compared as
    lexir act ids, lower case: a gold book is mapped through the German act table
    (``sozialgerichtsgesetzes`` -> ``sgg``, ``uwg`` -> ``uwg 2004``), a found citation's book
    is its ``act`` or, unresolved, its ``act_raw`` (so ``KostO``, an act missing from the
    2021/22 corpus, still counts when found), an unknown act without its article and
    genitive ending (``des Landesgebührengesetzes`` and ``Landesgebührengesetz`` are one
    book). Gold citations without a book are set aside (``skip_bookless``), and so are found
    citations overlapping only them. Found citations that name no act themselves are not
    scored: refex annotates only references to a named law. Those are citations with no act
    at all (a § of the text being quoted), with an act taken from the context or a default
    (``resolved_from`` ``"context"``/``"default"``: ``Nach dem SGB V ... § 240``, ``Abs. 2``
    alone after ``§ 19 KostO``), and citations of other kinds than statutes (``§ 10 des
    Vertrages``, ``SozR 3-2500 § 13 Nr 33``).

    All 7 decisions are the development set (the issue's figure); the unseen decisions are
    held by others. :func:`refex_split` splits the 7 further by the parity of the SHA-256 of
    the id (``dev`` 3, ``heldout`` 4), as session 2 did; too small to tune on by itself.
    :func:`citation_errors` lists what the score counts as false positives and negatives.

    refex annotates one citation per § (``§ 4 Nr. 9 und 10 UWG`` is one), while lexir finders
    give one per cited unit (Nr. 9 and Nr. 10). So before matching, found citations of one
    document with the same key whose spans touch or are separated only by connecting words
    (``und``, ``,``, ``bis``) are merged into one. Matching is then greedy in text order.

Silver (:func:`load_refex_silver`)
    The 5 HTML decisions of the fixtures, with juris's law links as citations: a second,
    independent development set for recall.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from lexir.citations.model import Citation
from lexir.io.errors import FormatError
from lexir.io.jsonl import read_jsonl
from lexir.types import Benchmark, Query, QuerySet


@dataclass(frozen=True)
class RefexCitation:
    """One gold law citation."""

    id: str
    start: int
    end: int
    text: str
    book: str | None
    number: str | None
    structure: dict[str, str] = field(default_factory=dict, hash=False, compare=False)

    @property
    def absatz(self) -> str | None:
        return self.structure.get("absatz")


@dataclass
class RefexDocument:
    id: str
    text: str
    citations: list[RefexCitation]
    meta: dict[str, object] = field(default_factory=dict)


def _need(obj: Mapping, key: str, kind: type | tuple[type, ...], path: Path, line: int):
    if key not in obj:
        raise FormatError(path, line, "missing field", field=key)
    value = obj[key]
    if not isinstance(value, kind):
        raise FormatError(path, line, f"expected {getattr(kind, '__name__', kind)}", field=key)
    return value


def load_refex(folder: str | Path) -> list[RefexDocument]:
    """Documents with their gold law citations, in the order of ``documents.jsonl``.

    Malformed lines raise :class:`lexir.io.FormatError` naming the file and line; so does a
    span whose offsets do not give its text.
    """
    folder = Path(folder)
    docs_path, ann_path = folder / "documents.jsonl", folder / "annotations.jsonl"
    docs: dict[str, RefexDocument] = {}
    for line, obj in read_jsonl(docs_path):
        doc_id = _need(obj, "doc_id", str, docs_path, line)
        text = _need(obj, "text", str, docs_path, line)
        meta = {k: v for k, v in obj.items() if k not in ("doc_id", "text")}
        docs[doc_id] = RefexDocument(doc_id, text, [], meta)
    for line, obj in read_jsonl(ann_path):
        doc_id = _need(obj, "doc_id", str, ann_path, line)
        if doc_id not in docs:
            raise FormatError(ann_path, line, f"unknown document {doc_id!r}", field="doc_id")
        doc = docs[doc_id]
        for cit in _need(obj, "citations", list, ann_path, line):
            if not isinstance(cit, dict):
                raise FormatError(ann_path, line, "citation is not an object", field="citations")
            if cit.get("type") != "law":
                continue
            span = _need(cit, "span", dict, ann_path, line)
            try:
                start, end, text = int(span["start"]), int(span["end"]), str(span["text"])
            except (KeyError, TypeError, ValueError):
                raise FormatError(ann_path, line, "bad span", field="span") from None
            if doc.text[start:end] != text:
                raise FormatError(ann_path, line, f"span {start}:{end} does not give {text!r}", field="span")
            structure = cit.get("structure") or {}
            if not isinstance(structure, dict):
                raise FormatError(ann_path, line, "expected an object", field="structure")
            doc.citations.append(
                RefexCitation(
                    id=str(cit.get("id", "")),
                    start=start,
                    end=end,
                    text=text,
                    book=cit.get("book") or None,
                    number=None if cit.get("number") is None else str(cit["number"]),
                    structure={k: str(v) for k, v in structure.items() if v is not None},
                )
            )
    for doc in docs.values():
        doc.citations.sort(key=lambda c: (c.start, c.end))
    return list(docs.values())


# ---------------------------------------------------------------------------
# silver: juris's own links in the HTML decisions

_BLOCK = frozenset({"p", "div", "dd", "dt", "dl", "li", "ul", "ol", "tr", "td", "th", "table", "br",
                    "h1", "h2", "h3", "h4", "h5", "h6"})
# a link that names a law: "§ 115 Abs. 2 Nr. 3 FGO", "Art. 3 GG", "42d VVG" (the second § of
# "§ 42c und 42d VVG"); not a decision ("BFH-- vom 6. April 2005 IX B 174/04", "7 LB 112/03"), a
# reporter ("BFH/NV 2005, 1354") or a marginal number ("Rn. 45", the anchors "1", "2", ...)
_LINK_KEYWORD = re.compile(r"\s*(?P<kw>§§?|Art\.|Artikel|Art)\s*(?P<n>\d+(?:\s?[a-z])?)(?![\w/])")
_LINK_BARE = re.compile(r"\s*(?P<kw>)(?P<n>\d+[a-z]?)(?![\w/])")
_LINK_BOOK = re.compile(r"[A-ZÄÖÜ][\wäöüß]*[A-ZÄÖÜ][\wäöüß]*")  # an abbreviation: two capitals, no digits
_LINK_UNITS = re.compile(
    r"(?:\s*(?:,|und|oder|bis|ff\.|f\.|(?:Abs\.?|Absatz|Satz|S\.|Nr\.?|Nummer|Alt\.?|Hs\.?|Halbsatz|lit\.|"
    r"Buchst\.)\s*\w{1,3}\)?|\d+[a-z]?(?!\w)))*"
)
_LINK_ABS = re.compile(r"(?:Abs\.?|Absatz)\s*(\d+[a-z]?)")


class _LinkedText(HTMLParser):
    """The text of an HTML decision (block elements end lines) and the spans of its links."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.length = 0
        self.links: list[tuple[int, int]] = []
        self._open: list[int | None] = []

    def _newline(self) -> None:
        if self.parts and not self.parts[-1].endswith("\n"):
            self.parts.append("\n")
            self.length += 1

    def handle_starttag(self, tag, attrs):
        if tag in _BLOCK:
            self._newline()
        elif tag == "a":  # <a name="rd_1"> is an anchor (a marginal number), not a link
            self._open.append(None if any(k == "name" for k, _ in attrs) else self.length)

    def handle_endtag(self, tag):
        if tag in _BLOCK:
            self._newline()
        elif tag == "a" and self._open:
            start = self._open.pop()
            if start is not None and self.length > start:
                self.links.append((start, self.length))

    def handle_data(self, data):
        self.parts.append(data)
        self.length += len(data)


def silver_citation(text: str, start: int, end: int, link_id: str) -> RefexCitation | None:
    """The law citation a link's text gives, or None for links to decisions, reporters, marginal
    numbers. Its book is the act as written after the reference (None when the link holds only
    the reference: ``§§ 13`` of ``§§ 13 Abs. 4, 15 Abs. 3 Satz 6 LGlüG``)."""
    link = text[start:end]
    m = _LINK_KEYWORD.match(link) or _LINK_BARE.match(link)
    if not m:
        return None
    rest = link[m.end():]
    units = _LINK_UNITS.match(rest)
    book = rest[units.end():].strip(" ,.;\xa0") or None
    if not m.group("kw") and (book is None or not _LINK_BOOK.fullmatch(book)):
        return None  # a bare number is a law only with an act after it: "42d VVG", not "7 LB 112/03"
    absatz = _LINK_ABS.search(rest[: units.end()])
    structure = {"absatz": absatz.group(1)} if absatz else {}
    return RefexCitation(link_id, start, end, link, book, re.sub(r"\s", "", m.group("n")), structure)


def load_refex_silver(folder: str | Path) -> list[RefexDocument]:
    """The HTML decisions of the refex fixtures (``html_documents.jsonl``) as a silver set.

    juris wraps each law reference it resolves in a link (``<a><span>§ 115 Abs. 2 Nr. 3
    FGO</span></a>``), one link per reference. The text is the HTML's text (block elements end
    lines); each link naming a law is a silver citation (:func:`silver_citation`). Silver, not
    gold: juris leaves references it cannot resolve unlinked, so a found citation outside every
    link is not always wrong (recall is the reliable figure). Malformed lines raise
    :class:`lexir.io.FormatError` naming the file and line.
    """
    path = Path(folder) / "html_documents.jsonl"
    out: list[RefexDocument] = []
    for line, obj in read_jsonl(path):
        doc_id = _need(obj, "doc_id", str, path, line)
        html = _need(obj, "text", str, path, line)
        parser = _LinkedText()
        try:
            parser.feed(html)
            parser.close()
        except (ValueError, AssertionError) as err:  # pragma: no cover - HTMLParser is lenient
            raise FormatError(path, line, f"unreadable HTML ({err})", field="text") from None
        text = "".join(parser.parts)
        cites = [silver_citation(text, s, e, f"l_{i:03d}") for i, (s, e) in enumerate(sorted(parser.links))]
        meta = {k: v for k, v in obj.items() if k not in ("doc_id", "text")}
        out.append(RefexDocument(doc_id, text, [c for c in cites if c is not None], meta))
    return out


# ---------------------------------------------------------------------------
# scoring

_GLUE = re.compile(r"^[\s,;]*(?:(?:und|oder|sowie|bis|u\.|bzw\.)\s*)?[\s,;\-–]*$")


def _book(designation: str | None) -> str | None:
    if not designation:
        return None
    from lexir.jurisdictions.de.citations import act_source

    source = act_source(designation)
    if source:
        return source.lower()
    # an act the table does not know, compared as written, without its article and case ending:
    # "des Landesgebührengesetzes" and "Landesgebührengesetz" name one act
    words = re.sub(r"^(?:des|der|dem|den)\s+", "", " ".join(designation.split())).lower()
    return re.sub(r"(gesetz|gesetzbuch)e?s$", r"\1", words)


def _found_key(c: Citation, level: str) -> tuple:
    book = (c.act or "").lower() or _book(c.act_raw)
    key: tuple = (book, c.article)
    if level == "absatz":
        key += (c.path.get("abs"),)
    return key


def _gold_key(g: RefexCitation, level: str) -> tuple:
    key: tuple = (_book(g.book), g.number)
    if level == "absatz":
        key += (g.absatz,)
    return key


def _names_act(c: Citation) -> bool:
    """Whether a found citation names its act itself (see the module docstring)."""
    return bool(c.act or c.act_raw) and c.kind == "statute" and c.resolved_from not in ("context", "default")


def refex_split(documents: Iterable[RefexDocument], part: str) -> list[RefexDocument]:
    """The ``dev`` or ``heldout`` half of the decisions (by the parity of the SHA-256 of the id:
    stable when decisions are added), or all of them for ``all``."""
    if part not in ("dev", "heldout", "all"):
        raise ValueError(f"part must be 'dev', 'heldout' or 'all', not {part!r}")
    docs = list(documents)
    if part == "all":
        return docs
    want = 0 if part == "dev" else 1
    return [d for d in docs if int(hashlib.sha256(d.id.encode("utf-8")).hexdigest(), 16) % 2 == want]


def _merge(found: Sequence[Citation], text: str, level: str) -> list[tuple[int, int, tuple]]:
    spans: list[tuple[int, int, tuple]] = []
    for c in sorted(found, key=lambda c: (c.start, c.end)):
        key = _found_key(c, level)
        if spans and spans[-1][2] == key and (
            c.start <= spans[-1][1] or _GLUE.match(text[spans[-1][1] : c.start])
        ):
            s, e, k = spans[-1]
            spans[-1] = (s, max(e, c.end), k)
        else:
            spans.append((c.start, c.end, key))
    return spans


@dataclass(frozen=True)
class CitationErrors:
    """The unmatched items of one document: found spans (start, end, key) no gold matched, and gold
    citations nothing found matched."""

    doc_id: str
    false_positives: list[tuple[int, int, tuple]]
    false_negatives: list[RefexCitation]
    true_positives: int


def _match(doc: RefexDocument, found: Sequence[Citation], level: str, skip_bookless: bool) -> CitationErrors:
    golds = [g for g in doc.citations if g.book or not skip_bookless]
    skipped = [g for g in doc.citations if not (g.book or not skip_bookless)]
    named = [c for c in found if _names_act(c)]
    preds = _merge(named, doc.text, level)
    used = [False] * len(golds)
    gkeys = [_gold_key(g, level) for g in golds]
    fps: list[tuple[int, int, tuple]] = []
    tp = 0
    for start, end, key in preds:
        hit = next(
            (i for i, g in enumerate(golds)
             if not used[i] and gkeys[i] == key and g.start < end and start < g.end),
            None,
        )
        if hit is not None:
            used[hit] = True
            tp += 1
        elif any(g.start < end and start < g.end for g in skipped) and not any(
            g.start < end and start < g.end for g in golds
        ):
            continue
        else:
            fps.append((start, end, key))
    return CitationErrors(doc.id, fps, [g for g, u in zip(golds, used, strict=True) if not u], tp)


def citation_errors(
    found: Mapping[str, Sequence[Citation]],
    gold: Iterable[RefexDocument],
    level: str = "paragraph",
    skip_bookless: bool = True,
) -> list[CitationErrors]:
    """Per document, what :func:`score_citations` counts as false positives and negatives."""
    if level not in ("paragraph", "absatz"):
        raise ValueError(f"level must be 'paragraph' or 'absatz', not {level!r}")
    return [_match(doc, found.get(doc.id, ()), level, skip_bookless) for doc in gold]


def score_citations(
    found: Mapping[str, Sequence[Citation]],
    gold: Iterable[RefexDocument],
    level: str = "paragraph",
    skip_bookless: bool = True,
) -> dict[str, float]:
    """Precision, recall and F1 of found citations (document id -> citations) against gold.

    ``level`` is ``"paragraph"`` (book + §) or ``"absatz"`` (book + § + Absatz). See the
    module docstring for the matching rule. Returns ``precision, recall, f1, tp, fp, fn``.
    """
    errors = citation_errors(found, gold, level, skip_bookless)
    tp = sum(e.true_positives for e in errors)
    fp = sum(len(e.false_positives) for e in errors)
    fn = sum(len(e.false_negatives) for e in errors)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "tp": tp, "fp": fp, "fn": fn}


# ---------------------------------------------------------------------------
# decisions as queries against the German federal corpus (case-to-statute retrieval)

_SECTION = re.compile(r"(?m)^(Tatbestand|Entscheidungsgründe|Gründe|Tenor|Leitsatz|Orientierungssatz)\s*$")


def decision_query(text: str, spans: Sequence[tuple[int, int]]) -> tuple[str, str]:
    """(query text, kind): the Tatbestand where the decision has one, else the whole decision;
    in both, the decision's own law citations are blanked out (same length, so offsets hold),
    so that no query names its answers."""
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    masked = "".join(chars)
    heads = list(_SECTION.finditer(masked))
    for i, m in enumerate(heads):
        if m.group(1) == "Tatbestand":
            end = heads[i + 1].start() if i + 1 < len(heads) else len(masked)
            return masked[m.end():end].strip(), "tatbestand"
    return masked, "full-masked"


def refex_queries(documents: Sequence[RefexDocument], corpus) -> QuerySet:
    """One query per decision; gold = the cited articles that exist in ``corpus``.

    Gold citations without a book, of an act the table does not know, or of an article the
    corpus lacks are counted in ``dropped`` (per citation); a decision left with no gold is
    dropped as a query.
    """
    from lexir.jurisdictions.de.citations import act_source

    queries, qrels, dropped = [], {}, []
    for doc in documents:
        gold: dict[str, int] = {}
        for c in doc.citations:
            act = act_source(c.book) if c.book else None
            if not c.book or not c.number:
                dropped.append((f"{doc.id}/{c.id}", "citation: no statute named", c.text))
            elif act is None:
                dropped.append((f"{doc.id}/{c.id}", "citation: act unknown", c.text))
            elif f"{act}::{c.number}" not in corpus:
                dropped.append((f"{doc.id}/{c.id}", "citation: article not in corpus", f"{act}::{c.number}"))
            else:
                gold[f"{act}::{c.number}"] = 1
        text, kind = decision_query(doc.text, [(c.start, c.end) for c in doc.citations])
        if not gold:
            dropped.append((doc.id, "no gold in corpus", ""))
            continue
        queries.append(Query(doc.id, text, {"query": kind}))
        qrels[doc.id] = gold
    return QuerySet("de-refex", queries, qrels, dropped)


def _load_de_refex(data_dir: Path) -> Benchmark:
    from lexir.datasets.generic import open as open_data

    corpus = open_data("de-gesetze", data_dir=data_dir)
    return Benchmark(corpus, refex_queries(load_refex(data_dir / "de" / "refex"), corpus))


def _register() -> None:
    from lexir.datasets.registry import Dataset, register

    register(Dataset("de-refex", "7 German decisions with 172 gold law citations; as queries (Tatbestand, "
                     "citations masked) against de-gesetze", "de", _load_de_refex, ("docs", "queries", "qrels"),
                     needs=("de-gesetze",)))


_register()
