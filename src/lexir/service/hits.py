"""How a provision is shown: a snippet with the query's terms marked, and quote verification.
Its citation and breadcrumbs come from :mod:`lexir.citations.format` (shared with the CLI)."""

from __future__ import annotations

import heapq
import html
import re
import unicodedata
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable
from difflib import SequenceMatcher
from functools import lru_cache

from lexir.citations.format import format_citation, unit_heading  # noqa: F401  (re-exported for callers)

# ---------------------------------------------------------------------------
# snippets

_WORD = re.compile(r"\w+", re.UNICODE)


_MAX_FORMS = 500_000


def snippet(text: str, terms: Iterable[str], analyze: Callable[[str], list[str]], width: int = 280) -> str:
    """The window of ``text`` (about ``width`` characters) with the most query terms, HTML-escaped,
    the matched words in ``<mark>``. A word matches when its index term is one of ``terms``."""
    terms = frozenset(terms)
    spans: list[tuple[int, int]] = []
    if terms:
        surfaces = _surfaces(text, analyze)
        matched = {w for t in terms for w in surfaces.get(t, ())}
        if matched:
            pattern = _surface_pattern(frozenset(matched))
            spans = [m.span() for m in pattern.finditer(text)]
    start = 0
    if spans and len(text) > width:
        best, best_count, j = 0, 0, 0
        for i, (s, _) in enumerate(spans):  # the window starting at a match that covers the most matches
            while j < len(spans) and spans[j][1] <= s + width:
                j += 1
            if j - i > best_count:
                best, best_count = i, j - i
        start = max(0, spans[best][0] - width // 5)
        space = text.rfind(" ", 0, start + 1)
        start = space + 1 if space > 0 and start - space < 30 else start
    end = min(len(text), start + width)
    if end < len(text):
        space = text.rfind(" ", start, end)
        end = space if space > start + width // 2 else end
    out, pos = [], start
    for s, e in spans:
        if s < start or e > end:
            continue
        out.append(html.escape(text[pos:s]))
        out.append(f"<mark>{html.escape(text[s:e])}</mark>")
        pos = e
    out.append(html.escape(text[pos:end]))
    body = " ".join("".join(out).split())
    return ("… " if start > 0 else "") + body + (" …" if end < len(text) else "")


_MAX_TEXTS = 4096  # texts whose term -> words map is kept, per analyzer
_SURFACES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _surfaces(text: str, analyze) -> dict[str, tuple[str, ...]]:
    """Index term -> the words of ``text`` that analyse to it. Analysing every word is most of a
    snippet's cost, so the map is kept for the most recent texts (and word forms for all words)."""
    try:
        cache = _SURFACES.setdefault(analyze, {"texts": OrderedDict(), "forms": {}})
    except TypeError:  # not weak-referenceable: no cache
        cache = {"texts": OrderedDict(), "forms": {}}
    texts, forms_of = cache["texts"], cache["forms"]
    key = hash(text)
    found = texts.get(key)
    if found is not None and found[0] == text:
        return found[1]
    by_term: dict[str, list[str]] = {}
    for word in set(_WORD.findall(text)):
        forms = forms_of.get(word)
        if forms is None:
            forms = tuple(analyze(word))
            if len(forms_of) < _MAX_FORMS:
                forms_of[word] = forms
        for form in forms:
            by_term.setdefault(form, []).append(word)
    mapping = {t: tuple(ws) for t, ws in by_term.items()}
    texts[key] = (text, mapping)
    while len(texts) > _MAX_TEXTS:
        texts.popitem(last=False)
    return mapping


@lru_cache(maxsize=4096)
def _surface_pattern(words: frozenset[str]) -> re.Pattern:
    alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)")


# ---------------------------------------------------------------------------
# quote verification

_MAX_WINDOWS = 200  # windows compared in full per size, chosen by words shared with the quote
_QUOTES = str.maketrans({"„": '"', "“": '"', "”": '"', "«": '"', "»": '"', "‚": "'", "‘": "'", "’": "'",
                         "–": "-", "—": "-", "\u00a0": " "})


def _words(text: str) -> list[tuple[str, int, int]]:
    """Normalised words of ``text`` with their offsets (case, accents, quote styles folded)."""
    out = []
    for m in _WORD.finditer(text.translate(_QUOTES)):
        word = unicodedata.normalize("NFKD", m.group().casefold())
        word = "".join(ch for ch in word if not unicodedata.combining(ch)).replace("ς", "σ")
        out.append((word, m.start(), m.end()))
    return out


def verify_quote(quote: str, text: str, threshold: float = 0.85) -> dict:
    """Does ``text`` contain ``quote``? Exact when its words (case, accents, punctuation and quote
    styles aside) appear in order and adjacent; else the span of ``text`` most like it, with a
    score in [0, 1] (difflib's ratio over the normalised words); verified when the score reaches
    ``threshold``. Offsets are into ``text``."""
    q = [w for w, _, _ in _words(quote)]
    t = _words(text)
    if not q:
        return {"verified": False, "match": "none", "score": 0.0, "span": None, "reason": "the quote has no words"}
    words = [w for w, _, _ in t]
    n = len(q)
    for i in range(len(words) - n + 1):
        if words[i] == q[0] and words[i:i + n] == q:
            return _result(True, "exact", 1.0, text, t[i][1], t[i + n - 1][2])
    target = " ".join(q)
    best = (0.0, 0, 0)
    sizes = sorted({max(1, n + d) for d in (-max(1, n // 5), 0, max(1, n // 5))})
    matcher = SequenceMatcher(autojunk=False)
    matcher.set_seq2(target)
    wanted = set(q)
    hit = [0]
    for w in words:  # prefix sums of "this word occurs in the quote"
        hit.append(hit[-1] + (w in wanted))
    for size in sizes:
        starts = range(0, max(1, len(words) - size + 1))
        if len(starts) > _MAX_WINDOWS:  # long provisions: only the windows sharing the most words
            starts = heapq.nlargest(_MAX_WINDOWS, starts,
                                    key=lambda i: hit[min(len(words), i + size)] - hit[i])
        for i in starts:
            window = " ".join(words[i:i + size])
            matcher.set_seq1(window)
            if matcher.real_quick_ratio() <= best[0] or matcher.quick_ratio() <= best[0]:
                continue
            score = matcher.ratio()
            if score > best[0]:
                best = (score, i, min(len(words), i + size) - 1)
    score, i, j = best
    if not t or score == 0.0:
        return {"verified": False, "match": "none", "score": 0.0, "span": None}
    return _result(score >= threshold, "fuzzy", round(score, 4), text, t[i][1], t[j][2])


def _result(verified: bool, match: str, score: float, text: str, start: int, end: int) -> dict:
    return {"verified": verified, "match": match if verified else "none", "score": score,
            "span": {"start": start, "end": end, "text": text[start:end]}}
