"""Text analysis: text -> index terms, one configurable analyzer per language (SPEC §3).

The steps, in order: hyphenated line-break repair, Unicode NFKC, case folding, (Greek)
accent stripping and final-sigma folding, tokenisation into runs of letters and digits,
(``compounds``) each compound followed by its parts (:mod:`lexir.analysis.compounds`),
stopword removal, then one of three term forms:

* ``raw``   - the folded token itself;
* ``stem``  - its Snowball stem (PyStemmer);
* ``lemma`` - its lemma (simplemma for every language; morfeusz2 for Polish on request).

Lemmas are looked up on the token as written (only lower-cased), before folding: simplemma's
dictionaries hold accented Greek forms (``δικαστηρίου`` -> ``δικαστήριο``) and ``ß``, and find
nothing for a de-accented or case-folded token. The lemma is folded afterwards, so lemma terms
and stopwords live in the same folded space as every other mode.

Everything language-specific (stopwords) is read from ``data/``; the code is the same for
every language.
"""

from __future__ import annotations

import gc
import re
import threading
import unicodedata
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from functools import cache, partial
from importlib import resources
from itertools import chain, filterfalse

from lexir.analysis.compounds import Splitter, word_counts
from lexir.analysis.languages import SNOWBALL, normalise_language

MODES = ("raw", "stem", "lemma")
COMPOUNDS = ("", "query", "both")
LEMMATIZERS = ("simplemma", "morfeusz")

_HYPHEN_BREAK = re.compile(r"(\w)-\s*\n\s*(\w)")
# Every match of _HYPHEN_BREAK contains a match of _HYPHEN_HINT, so a text without the hint
# is left unchanged by the repair. The hint is searched from its literal "-", which is an
# order of magnitude faster than trying "(\w)" at every word character.
_HYPHEN_HINT = re.compile(r"-\s*\n")


def _utf8(text: str) -> bytes:
    """``text`` in UTF-8, a lone surrogate (which JSON can carry) kept as its three bytes."""
    return text.encode("utf-8", "surrogatepass")


def _join_hyphenated(text: str) -> str:
    """``text`` with words hyphenated across a line break joined again (PDF artefacts)."""
    return _HYPHEN_BREAK.sub(r"\1\2", text) if _HYPHEN_HINT.search(text) is not None else text

_TOKEN = re.compile(r"[^\W_]+")
_WORD = re.compile(r"\w+")  # the same tokens as _TOKEN in a text without "_", and a little faster
_NORMALIZE = unicodedata.normalize
# Joins the texts of a batch (Analyzer.pieces_joined): one token of ASCII letters, which no
# normalisation, case fold or accent stripping changes, between spaces.
SENTINEL = _SENTINEL = "qxzlexirsentinelqxz"
SENTINEL_PIECE = SENTINEL.encode()  # the sentinel as a piece (Analyzer.pieces_joined)
_SEPARATOR = f" {_SENTINEL} "
# Folded text -> pieces (Analyzer.pieces): its UTF-8 bytes with every ASCII byte that is not a
# letter or a digit (whitespace, punctuation, "_") turned into a space, then split at spaces. No
# token contains such a character, so a text's tokens are its pieces' tokens in order; a piece of
# ASCII bytes is one token, and most of a text's pieces are (the rest hold a letter beyond ASCII,
# or a mark such as "§", "–" or a typographic quote). bytes.translate and bytes.split are C loops
# over a 256-byte table: 3x faster than the tokeniser's regular expression over a whole text.
PIECE_BYTES = bytes(b if b >= 128 or chr(b).isalnum() else 32 for b in range(256))


def stoplists(language: str) -> list[str]:
    """The named alternative stopword lists of ``language`` (``data/stopwords/<code>-<name>.txt``)."""
    code = normalise_language(language)
    folder = resources.files("lexir.analysis") / "data" / "stopwords"
    return sorted(p.name[len(code) + 1:-4] for p in folder.iterdir()
                  if p.name.startswith(f"{code}-") and p.name.endswith(".txt"))


@cache
def stopwords(language: str, stoplist: str = "") -> frozenset[str]:
    """The stopword list of ``language``: its default ``data/stopwords/<code>.txt`` (empty if none),
    or the named list ``data/stopwords/<code>-<stoplist>.txt`` (``snowball``, ``iso``, ...)."""
    code = normalise_language(language)
    name = f"{code}-{stoplist}.txt" if stoplist else f"{code}.txt"
    path = resources.files("lexir.analysis") / "data" / "stopwords" / name
    if not path.is_file():
        if stoplist:
            raise ValueError(f"no stopword list {stoplist!r} for language {code!r} (data/stopwords/{name}); "
                             f"lists for {code!r}: lexir, {', '.join(stoplists(code)) or '(no other)'}")
        return frozenset()
    words = (line.strip() for line in path.read_text(encoding="utf-8").splitlines())
    return frozenset(_fold(w, code) for w in words if w and not w.startswith("#"))


def _strip_accents(text: str) -> str:
    decomposed = unicodedata.normalize("NFD", text)
    return unicodedata.normalize("NFC", "".join(ch for ch in decomposed if not unicodedata.combining(ch)))


def fold_marks(text: str) -> str:
    """``text`` without combining marks (accents, Greek tonos and dialytika) and with final ``ς``
    as ``σ``: how Greek is searched, and how a quote is compared with a provision in any language."""
    return _strip_accents(text).replace("ς", "σ")


def _fold(text: str, language: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    if language == "el":  # Greek search ignores tonos/dialytika, and ς is σ in every position
        text = fold_marks(text)
    return text


@dataclass(frozen=True)
class AnalyzerConfig:
    """What an analyzer does; saved beside an index so queries are analysed the same way."""

    language: str
    mode: str = "raw"
    stopwords: bool = True
    lemmatizer: str = "simplemma"
    min_length: int = 1
    stoplist: str = ""  # "" (or "lexir") lexir's own list, data/stopwords/<code>.txt; else a named one
    verb_lemmas: bool = False  # stem mode: verb forms are stemmed from their simplemma lemma
    families: bool = False  # lemma mode: the lemmas of a word family (data/families/<code>.tsv) meet
    # raw and stem mode: a compound's parts follow it (data/compounds/<code>.tsv), in a question's text
    # alone ("query": Analyzer.for_queries) or in every text ("both"); "" off
    compounds: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "language", normalise_language(self.language))
        if self.mode not in MODES:
            raise ValueError(f"unknown analyzer mode {self.mode!r}; valid: {', '.join(MODES)}")
        if self.lemmatizer not in LEMMATIZERS:
            raise ValueError(f"unknown lemmatizer {self.lemmatizer!r}; valid: {', '.join(LEMMATIZERS)}")
        if self.lemmatizer == "morfeusz" and self.language != "pl":
            raise ValueError("the morfeusz lemmatizer is for Polish only (language 'pl')")
        if self.stoplist == "lexir":  # lexir's own list by name: the language's <code>.txt
            object.__setattr__(self, "stoplist", "")
        if self.stoplist:
            stopwords(self.language, self.stoplist)  # an unknown list fails here, with the known ones
        if self.verb_lemmas and self.mode != "stem":
            raise ValueError("verb_lemmas is an option of mode 'stem' (it stems a verb form's lemma)")
        if self.families:
            if self.mode != "lemma":
                raise ValueError("families is an option of mode 'lemma' (it joins the lemmas of a word family)")
            families(self.language)  # a language without a table fails here, naming the file
        if isinstance(self.compounds, bool):  # compounds=True reads as "both"
            object.__setattr__(self, "compounds", "both" if self.compounds else "")
        if self.compounds not in COMPOUNDS:
            raise ValueError(f"unknown compounds {self.compounds!r}; valid: query, both, or '' (off)")
        if self.compounds:
            if self.mode == "lemma":
                raise ValueError("compounds is an option of modes 'raw' and 'stem' (a lemmatizer reads the word whole)")
            word_counts(self.language)  # a language without a table fails here, naming the file

    @property
    def name(self) -> str:
        tail = f"-{self.lemmatizer}" if self.mode == "lemma" and self.lemmatizer != "simplemma" else ""
        stop = (f"-stop:{self.stoplist}" if self.stoplist else "") if self.stopwords else "-nostop"
        verbs = "-verbs" if self.verb_lemmas else ""
        tail += "-families" if self.families else ""
        tail += {"": "", "query": "-query-compounds", "both": "-compounds"}[self.compounds]
        return f"{self.language}-{self.mode}{verbs}{tail}{stop}"

    def to_dict(self) -> dict:
        return asdict(self)


class Analyzer:
    """Callable: ``Analyzer(AnalyzerConfig("pl", "stem"))("Tekst ...") -> ["tekst", ...]``."""

    def __init__(self, config: AnalyzerConfig, queries: bool = False) -> None:
        self.config = config
        self.queries = queries  # the analyzer of questions (for_queries): compounds="query" splits here
        self.language = config.language
        self._stop = stopwords(config.language, config.stoplist) if config.stopwords else frozenset()
        self._transform = self._make_transform()
        # Lemmatisers see the token before folding (see the module docstring); folding, the
        # stopword test and the lemma then happen together, once per distinct surface token.
        self._lemma_first = config.mode == "lemma"
        # Term forms are cached per surface token: legal vocabularies are small and repetitive,
        # so stemming or lemmatising each distinct token once is the whole cost.
        self._forms: dict[str, str] = _FormCache(self._transform) if self._transform else {}
        # A compound's parts are surface tokens of their own, after the compound (compounds).
        splits = config.compounds == "both" or (config.compounds == "query" and queries)
        self._split = _FormCache(_with_parts(Splitter(word_counts(self.language)))) if splits else None
        self._for_queries: Analyzer | None = None

    def for_queries(self) -> Analyzer:
        """The analyzer of questions searched against what this one indexed: itself, but with
        ``compounds="query"`` one that splits compounds where this one does not (made once)."""
        if self.config.compounds != "query" or self.queries:
            return self
        if self._for_queries is None:
            self._for_queries = Analyzer(self.config, queries=True)
        return self._for_queries

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
            stemmer.maxCacheSize = 0  # the form cache keeps each token's stem: PyStemmer's own cache halves its speed
            if self.config.verb_lemmas:
                return _verb_lemma_stem(stemmer.stemWord, self.language)
            return stemmer.stemWord
        if self.config.lemmatizer == "morfeusz":
            readings = _morfeusz_readings()
        else:
            lemmatize = partial(SIMPLEMMA.lemmatize, language=self.language)

            def readings(token: str) -> list[str]:
                return [lemmatize(token)]

        lemma = _lemma_of(readings, families(self.language) if self.config.families else {})
        language, stop = self.language, self._stop

        def form(token: str) -> str:
            # ``token`` is only lower-cased; "" marks a stopword (no token is empty).
            if _fold(token, language) in stop:
                return ""
            return _fold(lemma(token), language)

        return form

    def forget_forms(self) -> None:
        """Empty the caches of term forms and compound parts (all German law's words take about
        40 MiB): what a build in a process of its own does once its texts are analysed. Later
        texts compute the forms of their words again."""
        self._forms.clear()
        if self._split is not None:
            self._split.clear()

    def normalise(self, text: str) -> str:
        """Folded text before tokenisation (useful for snippets and debugging)."""
        return _fold(_join_hyphenated(text), self.language)

    def tokens(self, text: str) -> list[str]:
        """Index terms of ``text`` in order, repeats kept (BM25 needs term frequencies)."""
        # This runs once per document, so it is written for speed: the per-token work
        # (stopwords, term forms) is done by C iterators (filterfalse, map), not Python loops.
        found = self.surface(text)
        if self._lemma_first:
            forms = list(map(self._forms.__getitem__, found))  # lemmatised as written, folded afterwards
            return [f for f in forms if f] if "" in forms else forms
        if self._stop:
            found = list(filterfalse(self._stop.__contains__, found))
        if self._transform is None:
            return found
        return list(map(self._forms.__getitem__, found))

    # -- queries: surface tokens, then terms ---------------------------------------------------

    def surface(self, text: str) -> list[str]:
        """The tokens of ``text`` as they are looked up, before stopwords and term forms: folded
        (lemma mode: only lower-cased, see the module docstring); with ``compounds``, each
        compound followed by its parts. The non-empty ``term(t)`` of these are ``tokens(text)``
        less its empty terms (what a query searches for). A searcher can keep what each distinct
        surface token stands for, and skip the work on repeats."""
        return self._surface_folded(self._fold_surface(_join_hyphenated(text)))

    def pieces_joined(self, texts: list[str]) -> list[bytes] | None:
        """The pieces (:meth:`pieces`) of all ``texts`` folded together, with
        :data:`SENTINEL_PIECE` between two texts; None when a text holds the sentinel (then see
        :meth:`pieces`). A searcher can keep what each distinct piece stands for (a piece
        repeats as often as a token does, and :meth:`piece_tokens` of a new one is the
        tokeniser's work)."""
        joined = _SEPARATOR.join(texts)
        if _HYPHEN_HINT.search(joined) is not None:  # each text repaired alone, as surface() does
            joined = _SEPARATOR.join(map(_join_hyphenated, texts))
        folded = self._fold_surface(joined)
        if folded.count(_SENTINEL) != len(texts) - 1:
            return None
        return _utf8(folded).translate(PIECE_BYTES).split()

    def pieces(self, text: str) -> list[bytes]:
        """The folded ``text`` as UTF-8 pieces, split at every ASCII character that is not a
        letter or a digit (see :data:`PIECE_BYTES`): its surface tokens (:meth:`surface`) are its
        pieces' :meth:`piece_tokens` in order."""
        return self.folded_bytes(text).translate(PIECE_BYTES).split()

    def folded_bytes(self, text: str) -> bytes:
        """``text`` as :meth:`surface` folds it, in UTF-8 (lone surrogates kept): what
        :meth:`pieces` splits."""
        return _utf8(self._fold_surface(_join_hyphenated(text)))

    def piece_tokens(self, piece: bytes) -> list[str]:
        """The surface tokens of a piece (:meth:`pieces`): a piece of ASCII bytes (letters and
        digits) is one token; another is tokenised as :meth:`surface` tokenises a text."""
        text = piece.decode("utf-8", "surrogatepass")  # what _utf8 encoded
        # _TOKEN, not _WORD: a piece has no "_", but it is what surface() finds in every text
        return self._refined([text] if piece.isascii() else _TOKEN.findall(text))

    def term(self, token: str) -> str:
        """The index term of a surface token; "" for a stopword (and for an empty form, which a
        question cannot search for)."""
        return self.indexed_term(token) or ""

    def indexed_term(self, token: str, keep: bool = True) -> str | None:
        """The term a surface token adds where :meth:`tokens` analyses a text, None for one it
        drops (a stopword). Unlike :meth:`term`, a form that is empty (Snowball's Greek stem of
        ``εισ``) is a term here, as it is in :meth:`tokens`. ``keep=False``: a form not cached
        yet is computed without caching it (a build that meets each word once)."""
        forms = self._forms if keep else _Uncached(self._forms, self._transform)
        if self._lemma_first:
            return forms[token] or None
        if token in self._stop:
            return None
        return forms[token] if self._transform is not None else token

    def _fold_surface(self, text: str) -> str:
        if self._lemma_first:
            return _NORMALIZE("NFKC", text).lower()  # lower(), not casefold(): keeps ß and final ς
        return _fold(text, self.language)

    def _surface_folded(self, text: str) -> list[str]:
        return self._refined((_TOKEN if "_" in text else _WORD).findall(text))

    def _refined(self, found: list[str]) -> list[str]:
        """Tokens as found -> surface tokens: ``min_length`` applied, compounds split."""
        min_len = self.config.min_length
        if min_len > 1:
            found = [t for t in found if len(t) >= min_len]
        if self._split is not None:
            found = list(chain.from_iterable(map(self._split.__getitem__, found)))
        return found

    __call__ = tokens

    def __repr__(self) -> str:
        return f"Analyzer({self.config.name})"


class _Simplemma:
    """simplemma's lemmatizers over dictionaries lexir owns, one of each per process, shared by
    every analyzer; the lemmas are ``simplemma.lemmatize``'s whichever answers.

    * The full dictionaries, decoded into memory (German: 1.1 million forms, 101 MiB, a second to
      load), answer inside :meth:`bulk` (an index's analysis: several times faster per word), and
      every lemma once they are loaded.
    * Otherwise (a question's few new words, in a process that loaded an index) the low-memory
      ones answer, read from simplemma's compressed data as needed (German: about 20 MiB).

    :meth:`release` frees the full ones, and the low-memory ones too if no lemma outside a bulk
    analysis has needed them yet; the next lemma loads what it needs again."""

    def __init__(self) -> None:
        self._full = self._low = None
        self._bulk = 0  # bulk analyses under way
        self._low_used = False  # a lemma outside a bulk analysis asked for the low-memory ones
        self._lock = threading.Lock()

    def lemmatize(self, token: str, language: str) -> str:
        lemmatizer = self._full
        if lemmatizer is None:
            if self._bulk:
                lemmatizer = self._make(full=True)
            else:
                self._low_used = True
                lemmatizer = self._low or self._make(full=False)
        return lemmatizer.lemmatize(token, language)

    def _make(self, full: bool):
        with self._lock:
            made = self._full if full else self._low
            if made is None:
                import simplemma
                from simplemma.strategies import DefaultStrategy
                from simplemma.strategies.dictionaries import (
                    DefaultDictionaryFactory,
                    StreamDictionaryFactory,
                )

                factory = DefaultDictionaryFactory() if full else StreamDictionaryFactory()
                # no cache of simplemma's own: every analyzer keeps the forms of its words
                made = simplemma.Lemmatizer(lemmatization_strategy=DefaultStrategy(dictionary_factory=factory),
                                            cache_max_size=0)
                if full:
                    self._full = made
                else:
                    self._low = made
            return made

    @contextmanager
    def bulk(self):
        """Lemmas asked for inside come from the full dictionaries (loaded by the first)."""
        with self._lock:
            self._bulk += 1
        try:
            yield
        finally:
            with self._lock:
                self._bulk -= 1

    def loaded(self) -> frozenset[str]:
        """Which dictionaries are loaded: "full", "low-memory"."""
        return frozenset(name for name, made in (("full", self._full), ("low-memory", self._low)) if made)

    def release(self) -> frozenset[str]:
        with self._lock:
            before = self.loaded()
            self._full = None  # a lemma being looked up meanwhile finishes with the lemmatizer it holds
            if not self._low_used:
                self._low = None
            freed = before - self.loaded()
        if freed:
            # simplemma's strategies hold bound methods of one another (a reference cycle): its
            # dictionaries are freed by the cycle collector, not when the last reference goes
            gc.collect()
        return freed


SIMPLEMMA = _Simplemma()


def bulk_lemmas():
    """A context for analysing many texts (an index's): lemmas come from simplemma's full
    dictionaries, several times faster per word than the low-memory ones (:class:`_Simplemma`)."""
    return SIMPLEMMA.bulk()


def release_lemmatizer() -> frozenset[str]:
    """Free simplemma's full dictionaries (and the low-memory ones where only bulk analyses used
    them) until a lemma needs them again; which were freed. Analyzers keep the term forms they made."""
    return SIMPLEMMA.release()


def _verb_lemma_stem(stem, language: str):
    """Snowball stems that meet across verb forms: a token whose simplemma lemma is not a noun
    (German nouns are capitalised, so their lemmas are) is stemmed from that lemma, so the
    participle ``gekündigt`` (lemma ``kündigen``) and ``Kündigung`` both become ``kundig``, while
    ``Gericht`` stays ``gericht`` (a rule that cut ``ge-`` and ``-t`` would make it ``rich``)."""
    lemmatize = SIMPLEMMA.lemmatize

    def form(token: str) -> str:
        lemma = lemmatize(token, language)
        if lemma != token and lemma[:1].islower():
            return stem(_fold(lemma, language))
        return stem(token)

    return form


def _with_parts(splitter: Splitter):
    """A surface token, then the parts of the compound it is (:mod:`lexir.analysis.compounds`)."""

    def tokens(token: str) -> tuple[str, ...]:
        return (token, *splitter.parts(token))

    return tokens


# Distinct surface tokens whose forms an analyzer keeps: above all German federal law's 285k, and
# bounded, since a service analyses every new word its questions bring (for ever).
MAX_FORMS = 1 << 19


class _FormCache(dict):
    """Surface token -> what it becomes (a term form, or the token and its parts), computed (and
    kept) on first use; emptied when it holds ``limit`` tokens (then it fills again)."""

    __slots__ = ("limit", "transform")

    def __init__(self, transform, limit: int = MAX_FORMS) -> None:
        super().__init__()
        self.transform, self.limit = transform, limit

    def __missing__(self, token: str):
        if len(self) >= self.limit:
            self.clear()  # one whole-dict operation: a reader meanwhile finds the form or computes it
        form = self[token] = self.transform(token)
        return form


class _Uncached:
    """A form cache's forms, read without adding to it."""

    __slots__ = ("forms", "transform")

    def __init__(self, forms: dict, transform) -> None:
        self.forms, self.transform = forms, transform

    def __getitem__(self, token: str):
        form = self.forms.get(token)
        return self.transform(token) if form is None else form


@cache
def families(language: str) -> dict[str, str]:
    """Lemma -> the head of its word family, from ``data/families/<code>.tsv``
    (:func:`parse_families`); a language without a table is an error naming the file."""
    code = normalise_language(language)
    path = resources.files("lexir.analysis") / "data" / "families" / f"{code}.tsv"
    if not path.is_file():
        raise ValueError(f"no word families for language {code!r} (lexir/analysis/data/families/{code}.tsv)")
    return parse_families(path.read_text(encoding="utf-8"), f"families/{code}.tsv")


def parse_families(text: str, source: str = "families.tsv") -> dict[str, str]:
    """Lemma -> family head from a table of one family a line: the head, a tab, its other lemmas
    comma-separated (``#`` starts a comment line). A line without a tab or with an empty lemma, and
    a lemma in two families, are errors naming ``source`` and the line."""
    heads: dict[str, str] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        head, tab, members = line.partition("\t")
        if not tab or not head.strip():
            raise ValueError(f"{source} line {lineno}: expected 'head<TAB>lemma, lemma, ...', got {line!r}")
        head = head.strip().casefold()
        for word in [head, *(m.strip().casefold() for m in members.split(","))]:
            if not word:
                raise ValueError(f"{source} line {lineno}: an empty lemma in {line!r}")
            if heads.get(word, head) != head:
                raise ValueError(f"{source} line {lineno}: {word!r} is already in the family of {heads[word]!r}")
            heads[word] = head
    return heads


def _lemma_of(readings, heads: dict[str, str]):
    """A token's lemma from its ``readings`` (a lemmatizer's lemmas, the likeliest first): the
    first; with word families (``heads``), the head of the first reading whose lemma is in a
    family, if any (``zniszczenie`` reads first as ``zniszczeć``, to wear out, then as
    ``zniszczyć`` and the noun ``zniszczenie``: the family is what matters)."""
    if not heads:
        return lambda token: readings(token)[0]

    def lemma(token: str) -> str:
        found = readings(token)
        return next((heads[h] for h in map(str.casefold, found) if h in heads), found[0])

    return lemma


def morfeusz():
    """A new Morfeusz analyser (morfeusz2, generation off); each user keeps its own."""
    try:
        # faiss first: with morfeusz2's library loaded before faiss's, Morfeusz crashes the process
        # (a segmentation fault) on its next call, in whichever order the two are used afterwards
        # (faiss-cpu 1.15, morfeusz2 1.99; tests/test_families.py runs the order in a child process)
        import faiss  # noqa: F401
        import morfeusz2
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("the morfeusz lemmatizer needs the 'morfeusz2' package (a dependency of lexir): pip install morfeusz2") from err
    return morfeusz2.Morfeusz(generate=False)


def _morfeusz_readings():
    """Morfeusz's lemmas of a token, in its order (the token itself when it knows none)."""
    morf = morfeusz()

    def readings(token: str) -> list[str]:
        # Morfeusz returns every reading; the first lemma is the most frequent one and the part
        # after ':' only disambiguates homographs. A word it splits (``ukradłem``: the verb
        # ``ukradł`` and the agglutinate ``em``) is read from its first segment.
        found = [base.split(":", 1)[0].casefold() for start, _end, (_orth, base, *_rest) in morf.analyse(token)
                 if start == 0]
        return found or [token]

    return readings
