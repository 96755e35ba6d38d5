"""Language names: ISO 639-1 codes and the Snowball stemmer names they map to."""

from __future__ import annotations

import re
from functools import lru_cache

# ISO code -> Snowball algorithm name (PyStemmer). Only languages PyStemmer ships.
SNOWBALL = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "cs": "czech",
    "da": "danish", "nl": "dutch", "en": "english", "eo": "esperanto", "et": "estonian",
    "fi": "finnish", "fr": "french", "de": "german", "el": "greek", "hi": "hindi",
    "hu": "hungarian", "id": "indonesian", "ga": "irish", "it": "italian", "lt": "lithuanian",
    "ne": "nepali", "no": "norwegian", "fa": "persian", "pl": "polish", "pt": "portuguese",
    "ro": "romanian", "ru": "russian", "sr": "serbian", "st": "sesotho", "es": "spanish",
    "sv": "swedish", "ta": "tamil", "tr": "turkish", "yi": "yiddish",
}
_BY_NAME = {name: code for code, name in SNOWBALL.items()}


def normalise_language(language: str) -> str:
    """An ISO code for ``language`` given as code or Snowball name (``"polish"`` -> ``"pl"``)."""
    key = language.strip().lower()
    if key in SNOWBALL:
        return key
    if key in _BY_NAME:
        return _BY_NAME[key]
    valid = ", ".join(f"{c} ({n})" for c, n in sorted(SNOWBALL.items()))
    raise ValueError(f"unknown language {language!r}; valid: {valid}")


@lru_cache(maxsize=1)
def _simplemma_languages() -> frozenset[str]:
    from simplemma.strategies.dictionaries.dictionary_factory import SUPPORTED_LANGUAGES

    return frozenset(SUPPORTED_LANGUAGES)


# First-class languages are tried first: loading a simplemma dictionary takes a while, so
# the full list is consulted only when none of them fits.
FIRST_CLASS = ("pl", "de", "en")
_SCRIPTS = (
    (re.compile(r"[\u0370-\u03ff\u1f00-\u1fff]"), ("el",)),
    (re.compile(r"[\u0400-\u04ff]"), ("ru", "sr")),
    (re.compile(r"[\u0600-\u06ff]"), ("ar", "fa")),
    (re.compile(r"[\u0590-\u05ff]"), ("yi",)),
    (re.compile(r"[\u0900-\u097f]"), ("hi", "ne")),
    (re.compile(r"[\u0b80-\u0bff]"), ("ta",)),
    (re.compile(r"[\u0530-\u058f]"), ("hy",)),
)


def detect_language(texts: list[str]) -> tuple[str, float]:
    """Guess the language of a sample of texts; returns (ISO code, confidence in [0, 1]).

    The script decides non-Latin languages; among Latin-script ones simplemma's
    dictionary-based detector (no model download) scores the share of known words.
    """
    import simplemma

    sample = " ".join(texts)[:20000]
    if not sample.strip():
        raise ValueError("cannot detect the language of an empty text")
    letters = [ch for ch in sample if ch.isalpha()]
    for pattern, codes in _SCRIPTS:
        hits = sum(1 for ch in letters if pattern.match(ch))
        if letters and hits / len(letters) > 0.5:
            if len(codes) == 1:
                return codes[0], hits / len(letters)
            return _best(simplemma.langdetect(sample, lang=codes))
    best = _best(simplemma.langdetect(sample, lang=FIRST_CLASS))
    if best[1] >= 0.7:
        return best
    known = _simplemma_languages()
    others = tuple(c for c in SNOWBALL if c in known and c not in FIRST_CLASS)
    for i in range(0, len(others), 8):
        candidate = _best(simplemma.langdetect(sample, lang=others[i:i + 8]))
        if candidate[1] > best[1]:
            best = candidate
    return best


def _best(scores: list[tuple[str, float]]) -> tuple[str, float]:
    scored = [(lang, score) for lang, score in scores if lang != "unk"]
    return max(scored, key=lambda kv: kv[1]) if scored else ("unk", 0.0)
