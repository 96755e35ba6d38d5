"""Quote verification: does a provision contain a quote, exactly or nearly. (A hit's snippet,
citation and breadcrumbs: :mod:`lexir.structure.hits`, shared with the CLI.)"""

from __future__ import annotations

import heapq
import re
import unicodedata
from difflib import SequenceMatcher

from lexir.analysis.analyzer import fold_marks

_WORD = re.compile(r"\w+", re.UNICODE)


# ---------------------------------------------------------------------------
# quote verification

_MAX_WINDOWS = 200  # windows compared word by word per size, chosen by words shared with the quote
_FINALISTS = 5  # the windows most like the quote word by word, then compared character by character
_LONG_QUOTE = 1_000  # characters: a longer quote is compared character by character with two spans only
_QUOTES = str.maketrans({"„": '"', "“": '"', "”": '"', "«": '"', "»": '"', "‚": "'", "‘": "'", "’": "'",
                         "–": "-", "—": "-", "\u00a0": " "})


def _words(text: str) -> list[tuple[str, int, int]]:
    """Normalised words of ``text`` with their offsets (case, accents, quote styles folded)."""
    out = []
    for m in _WORD.finditer(text.translate(_QUOTES)):
        out.append((fold_marks(unicodedata.normalize("NFKD", m.group().casefold())), m.start(), m.end()))
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
    # Which span is most like the quote: first word by word (each word one symbol), which ranks the
    # windows cheaply whatever the quote's length; then, for the few best, difflib's ratio over the
    # characters of the normalised words, the score reported. Comparing characters for every
    # window cost seconds a quote (26 s for 2,000 characters: benchmarks/bench_verify.py).
    symbols: dict[str, str] = {}
    quote_symbols = "".join(symbols.setdefault(w, chr(0x100 + len(symbols))) for w in q)
    text_symbols = "".join(symbols.setdefault(w, chr(0x100 + len(symbols))) for w in words)
    sizes = sorted({max(1, n + d) for d in (-max(1, n // 5), 0, max(1, n // 5))})
    by_words = SequenceMatcher(autojunk=True)  # popular words (a phrase repeated) do not blow it up
    by_words.set_seq2(quote_symbols)
    wanted = set(q)
    hit = [0]
    for w in words:  # prefix sums of "this word occurs in the quote"
        hit.append(hit[-1] + (w in wanted))
    ranked: list[tuple[float, int, int]] = []  # the _FINALISTS best (word score, start, size), a min-heap
    # A long quote's windows are compared a twentieth of its length apart (starts a word apart
    # differ by a word in hundreds); the finalists' spans are then fitted to the word (below).
    stride = max(1, n // 20)
    for size in sizes:
        starts = range(0, max(1, len(words) - size + 1))
        if len(starts) > _MAX_WINDOWS * stride:  # long provisions: only the windows sharing the most words
            starts = heapq.nlargest(_MAX_WINDOWS * stride, starts,
                                    key=lambda i: hit[min(len(words), i + size)] - hit[i])
        taken: set[int] = set()
        for i in starts:
            if stride > 1:
                if i // stride in taken:
                    continue
                taken.add(i // stride)
            by_words.set_seq1(text_symbols[i:i + size])
            floor = ranked[0][0] if len(ranked) == _FINALISTS else 0.0
            if by_words.real_quick_ratio() <= floor or by_words.quick_ratio() <= floor:
                continue
            entry = (by_words.ratio(), i, size)
            if len(ranked) < _FINALISTS:
                heapq.heappush(ranked, entry)
            elif entry > ranked[0]:
                heapq.heapreplace(ranked, entry)
    spans = set()
    for _, i, size in ranked:
        end = min(len(words), i + size)
        spans.add((i, end))
        if stride > 1:  # fitted: from the first word the quote matches around the window to its last
            lo = max(0, i - stride)
            by_words.set_seq1(text_symbols[lo:end + stride])
            blocks = [b for b in by_words.get_matching_blocks() if b.size]
            if blocks:
                spans.add((lo + blocks[0].a, lo + blocks[-1].a + blocks[-1].size))
    target = " ".join(q)
    if len(target) > _LONG_QUOTE:  # characters compared for the two spans most like it word by word
        def word_score(span: tuple[int, int]) -> float:
            by_words.set_seq1(text_symbols[span[0]:span[1]])
            return by_words.ratio()

        spans = set(sorted(spans, key=lambda span: (-word_score(span), span))[:2])
    best = (0.0, 0, 0)
    by_chars = SequenceMatcher(autojunk=False)
    by_chars.set_seq2(target)
    for i, end in sorted(spans):
        by_chars.set_seq1(" ".join(words[i:end]))
        if by_chars.real_quick_ratio() <= best[0] or by_chars.quick_ratio() <= best[0]:
            continue
        score = by_chars.ratio()
        if score > best[0]:
            best = (score, i, end - 1)
    score, i, j = best
    if not t or score == 0.0:
        return {"verified": False, "match": "none", "score": 0.0, "span": None}
    return _result(score >= threshold, "fuzzy", round(score, 4), text, t[i][1], t[j][2])


def _result(verified: bool, match: str, score: float, text: str, start: int, end: int) -> dict:
    return {"verified": verified, "match": match if verified else "none", "score": score,
            "span": {"start": start, "end": end, "text": text[start:end]}}
