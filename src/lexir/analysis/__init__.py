"""Text analysis: normalisation, stopwords, stemming and lemmatisation per language."""

from lexir.analysis.analyzer import MODES, Analyzer, AnalyzerConfig, stopwords
from lexir.analysis.languages import SNOWBALL, detect_language, normalise_language

__all__ = ["MODES", "SNOWBALL", "Analyzer", "AnalyzerConfig", "detect_language", "normalise_language", "stopwords"]
