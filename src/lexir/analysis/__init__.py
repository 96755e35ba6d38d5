"""Text analysis: normalisation, stopwords, stemming and lemmatisation per language."""

from lexir.analysis.analyzer import (
    MODES,
    Analyzer,
    AnalyzerConfig,
    bulk_lemmas,
    release_lemmatizer,
    stopwords,
)
from lexir.analysis.defaults import LanguageDefaults, all_language_defaults, language_defaults
from lexir.analysis.languages import SNOWBALL, detect_language, normalise_language

__all__ = [
    "MODES", "SNOWBALL", "Analyzer", "AnalyzerConfig", "LanguageDefaults", "all_language_defaults", "bulk_lemmas",
    "detect_language", "language_defaults", "normalise_language", "release_lemmatizer", "stopwords",
]
