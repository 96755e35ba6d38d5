"""Text analysis: text -> index terms, one configurable analyzer per language (SPEC §3).

The steps, in order: hyphenated line-break repair, Unicode NFKC, case folding, (Greek)
accent stripping and final-sigma folding, tokenisation into runs of letters and digits,
stopword removal, then one of three term forms:

* ``raw``   - the folded token itself;
* ``stem``  - its Snowball stem (PyStemmer);
* ``lemma`` - its lemma (simplemma for every language; morfeusz2 for Polish on request).

Everything language-specific (stopwords) is read from ``data/``; the code is the same for
every language.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import asdict, dataclass
from functools import cache
from importlib import resources

from lexir.analysis.languages import SNOWBALL, normalise_language

MODES = ("raw", "stem", "lemma")
LEMMATIZERS = ("simplemma", "morfeusz")

_HYPHEN_BREAK = re.compile(r"(\w)-\s*\n\s*(\w)")
_TOKEN = re.compile(r"[^\W_]+")


@cache
def stopwords(language: str) -> frozenset[str]:
    """The stopword list of ``language`` from ``data/stopwords/<code>.txt`` (empty if none)."""
    code = normalise_language(language)
    path = resources.files("lexir.analysis") / "data" / "stopwords" / f"{code}.txt"
    if not path.is_file():
        return frozenset()
    words = (line.strip() for line in path.read_text(encoding="utf-8").splitlines())
    return frozenset(_fold(w, code) for w in words if w and not w.startswith("#"))


def _strip_accents(text: str) -> str:
    decomposed = unicodedata.normalize("NFD", text)
    return unicodedata.normalize("NFC", "".join(ch for ch in decomposed if not unicodedata.combining(ch)))


def _fold(text: str, language: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    if language == "el":
        # Greek search ignores tonos/dialytika, and ς is σ in every position.
        text = _strip_accents(text).replace("ς", "σ")
    return text


@dataclass(frozen=True)
class AnalyzerConfig:
    """What an analyzer does; saved beside an index so queries are analysed the same way."""

    language: str
    mode: str = "raw"
    stopwords: bool = True
    lemmatizer: str = "simplemma"
    min_length: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "language", normalise_language(self.language))
        if self.mode not in MODES:
            raise ValueError(f"unknown analyzer mode {self.mode!r}; valid: {', '.join(MODES)}")
        if self.lemmatizer not in LEMMATIZERS:
            raise ValueError(f"unknown lemmatizer {self.lemmatizer!r}; valid: {', '.join(LEMMATIZERS)}")
        if self.lemmatizer == "morfeusz" and self.language != "pl":
            raise ValueError("the morfeusz lemmatizer is for Polish only (language 'pl')")

    @property
    def name(self) -> str:
        tail = f"-{self.lemmatizer}" if self.mode == "lemma" and self.lemmatizer != "simplemma" else ""
        stop = "" if self.stopwords else "-nostop"
        return f"{self.language}-{self.mode}{tail}{stop}"

    def to_dict(self) -> dict:
        return asdict(self)


class Analyzer:
    """Callable: ``Analyzer(AnalyzerConfig("pl", "stem"))("Tekst ...") -> ["tekst", ...]``."""

    def __init__(self, config: AnalyzerConfig) -> None:
        self.config = config
        self.language = config.language
        self._stop = stopwords(config.language) if config.stopwords else frozenset()
        # Term forms are cached per surface token: legal vocabularies are small and repetitive,
        # so stemming or lemmatising each distinct token once is the whole cost.
        self._forms: dict[str, str] = {}
        self._transform = self._make_transform()

    @classmethod
    def create(cls, language: str, mode: str = "raw", **options) -> Analyzer:
        return cls(AnalyzerConfig(language=language, mode=mode, **options))

    def _make_transform(self):
        mode = self.config.mode
        if mode == "raw":
            return None
        if mode == "stem":
            import Stemmer

            if self.language not in SNOWBALL:
                raise ValueError(f"no Snowball stemmer for language {self.language!r}")
            stemmer = Stemmer.Stemmer(SNOWBALL[self.language])
            return stemmer.stemWord
        if self.config.lemmatizer == "morfeusz":
            return _morfeusz_lemma()
        import simplemma

        language = self.language
        return lambda token: _fold(simplemma.lemmatize(token, lang=language), language)

    def normalise(self, text: str) -> str:
        """Folded text before tokenisation (useful for snippets and debugging)."""
        return _fold(_HYPHEN_BREAK.sub(r"\1\2", text), self.language)

    def tokens(self, text: str) -> list[str]:
        """Index terms of ``text`` in order, repeats kept (BM25 needs term frequencies)."""
        stop, min_len = self._stop, self.config.min_length
        raw = [t for t in _TOKEN.findall(self.normalise(text)) if t not in stop and len(t) >= min_len]
        if self._transform is None:
            return raw
        forms, transform = self._forms, self._transform
        out = []
        for token in raw:
            form = forms.get(token)
            if form is None:
                form = forms[token] = transform(token)
            out.append(form)
        return out

    __call__ = tokens

    def __repr__(self) -> str:
        return f"Analyzer({self.config.name})"


def _morfeusz_lemma():
    try:
        import morfeusz2
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("the morfeusz lemmatizer needs the 'morfeusz2' package: pip install 'lexir[polish]'") from err
    morf = morfeusz2.Morfeusz(generate=False)

    def lemma(token: str) -> str:
        # Morfeusz returns every reading; the first lemma is the most frequent one and the
        # part after ':' only disambiguates homographs.
        for _start, _end, (_orth, base, *_rest) in morf.analyse(token):
            return base.split(":", 1)[0].casefold()
        return token

    return lemma
