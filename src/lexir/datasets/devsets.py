"""Development sets built from the statutes themselves, for choosing settings per language.

Greek and German have no question sets here, so settings for them are chosen on known-item
queries made from the statutes (``el-dev``, ``de-dev``), never on held-out questions:

* ``heading`` - the article's heading is the query, and the heading is taken out of the
  indexed document (its text stays): the query names the provision's subject in a few words,
  as a user would, and is never a verbatim copy of what the index holds.
* ``sentence`` - one sentence from inside the article is the query, and that sentence is
  taken out of the indexed text: the query reads like a quotation or close paraphrase of the
  provision (as exam questions and decisions are), but the exact words are not in the index.

Every other article is indexed unchanged. An article gives at most one query (of one kind).
Headings shared by several articles (``Ορισμοί``, ``Inkrafttreten``) are not used: a known-item
query needs one right answer. The sample is deterministic: articles are ordered by a hash of
their id and the first eligible ones are taken, so the sets are the same on every machine.

German queries come from the 37 major federal laws of ``de/history`` (BGB, StGB, ZPO, GG, ...)
and are searched over all of ``de-gesetze`` restricted to those laws (about 19,000 articles),
which keeps a sweep over settings within minutes on two cores.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import replace

from lexir.types import Benchmark, Corpus, Document, Query, QuerySet

KINDS = ("heading", "sentence")

# Sentence ends: ".", "!", "?" (and Greek ";" as question mark) before a capital letter,
# so "Abs. 2", "Nr. 3", "π.δ. 131" and "ν. 3669/2008" do not split a sentence.
_SENTENCE_END = re.compile(r"(?<=[.!;?])\s+(?=[A-ZÄÖÜΑ-ΩΆΈΉΊΌΎΏ«„\"(])")
_WORDS = re.compile(r"[^\W\d_]{2,}")
_DEAD = re.compile(r"weggefallen|aufgehoben|καταργ", re.IGNORECASE)

# The major federal laws of de/history/versions.tsv, by their ids in de-gesetze.


_SPACE = re.compile(r"\s+")


def safe_id(doc_id: str) -> str:
    """``doc_id`` with runs of whitespace replaced by ``_`` (TREC runs are whitespace-separated)."""
    return _SPACE.sub("_", doc_id)


def _order(doc_id: str, seed: str) -> str:
    return hashlib.sha256(f"{seed}\0{doc_id}".encode()).hexdigest()


def sentences(text: str) -> list[str]:
    """The sentences of a provision's text (line breaks are sentence breaks too)."""
    out = []
    for line in text.splitlines():
        out.extend(s.strip() for s in _SENTENCE_END.split(line) if s.strip())
    return out


def _heading_key(title: str) -> str:
    return " ".join(_WORDS.findall(title.casefold()))


def known_item_set(corpus: Corpus, name: str, n_per_kind: int = 300, seed: str = "lexir-dev",
                   acts: tuple[str, ...] | None = None, min_words: int = 8) -> Benchmark:
    """A known-item benchmark over a copy of ``corpus`` (see the module docstring).

    ``acts`` restricts both the corpus and the queries to those acts (ids missing from the
    corpus are ignored). Query ids are ``<kind>:<article id>`` (whitespace in ids as ``_``); splits are ``heading`` and
    ``sentence``; each query's meta holds its kind.
    """
    docs = [d for d in corpus if acts is None or d.act in acts]
    headings = Counter(_heading_key(d.title) for d in docs if d.title)
    ordered = sorted(range(len(docs)), key=lambda i: _order(docs[i].id, seed))
    changed: dict[int, Document] = {}
    queries: dict[str, list[Query]] = {kind: [] for kind in KINDS}
    for i in ordered:
        doc = docs[i]
        if len(queries["heading"]) >= n_per_kind and len(queries["sentence"]) >= n_per_kind:
            break
        if _DEAD.search(doc.title) or len(_WORDS.findall(doc.text)) < 3 * min_words:
            continue  # repealed or nearly empty: nothing to find it by
        key = _heading_key(doc.title)
        if len(queries["heading"]) < n_per_kind and key and headings[key] == 1:
            changed[i] = replace(doc, title="")
            queries["heading"].append(Query(f"heading:{doc.id}", doc.title, {"kind": "heading"}))
            continue
        if len(queries["sentence"]) < n_per_kind:
            parts = sentences(doc.text)
            # A sentence from inside the article (not its first), long enough to say something,
            # chosen by the same hash; the rest of the article stays indexed.
            inner = [j for j, s in enumerate(parts) if j > 0 and len(_WORDS.findall(s)) >= min_words]
            if len(parts) < 3 or not inner:
                continue
            j = inner[int(_order(doc.id, seed + ":s"), 16) % len(inner)]
            rest = "\n".join(parts[:j] + parts[j + 1:])
            changed[i] = replace(doc, text=rest)
            queries["sentence"].append(Query(f"sentence:{doc.id}", parts[j], {"kind": "sentence"}))
    # Ids with whitespace ("SGB 5::194c", "AO 1977::177") cannot be written to a TREC run; in this
    # copy they get "_" instead (the act structure, keyed by the original ids, is then left out).
    out_docs = [changed.get(i, d) for i, d in enumerate(docs)]
    renamed = any(_SPACE.search(d.id) for d in out_docs)
    if renamed:
        out_docs = [replace(d, id=safe_id(d.id)) for d in out_docs]
    out = Corpus(name, out_docs, language=corpus.language, jurisdiction=corpus.jurisdiction,
                 acts=() if renamed else [a for a in corpus.acts.values() if acts is None or a.id in acts])
    all_queries = [replace(q, id=safe_id(q.id)) for kind in KINDS for q in queries[kind]]
    qrels = {q.id: {q.id.split(":", 1)[1]: 1} for q in all_queries}
    splits = {kind: [safe_id(q.id) for q in queries[kind]] for kind in KINDS}
    return Benchmark(out, QuerySet(name, all_queries, qrels, splits=splits))
