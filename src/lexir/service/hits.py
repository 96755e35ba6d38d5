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

_MAX_WINDOWS = 200  # windows compared in full per size, chosen by words shared with the quote
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
