"""Per-language defaults: which analysis BM25 uses, and which pipeline is ``recommended``.

They live in ``data/defaults.tsv``, one row per language, each chosen on development data of
that language (the row names the experiment file that records the choice and its scores). A
language without a row gets the ``*`` row. The values are data, not code, so a new language
is one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources

from lexir.analysis.analyzer import MODES
from lexir.analysis.languages import normalise_language
from lexir.io.tables import table_rows

# Analyzer options a row's mode may carry after ";" (``stem;stoplist=iso;verb_lemmas=true``), with
# how each value is read.
_BOOL = {"true": True, "false": False}
OPTIONS = {"stoplist": str, "verb_lemmas": _BOOL.__getitem__, "families": _BOOL.__getitem__,
           "compounds": {"query": "query", "both": "both"}.__getitem__}


@dataclass(frozen=True)
class LanguageDefaults:
    language: str  # ISO code, or "*" for the fallback row
    mode: str
    recommended: str  # a system spec, e.g. "wrrf(systems=bm25+bm25(mode=stem))"
    chosen_on: str
    analysis: tuple[tuple[str, object], ...] = ()  # analyzer options of mode=auto beside the mode

    def options(self) -> dict[str, object]:
        """The analyzer options of ``mode=auto`` in this language, beyond the mode itself."""
        return dict(self.analysis)


@cache
def _table() -> dict[str, LanguageDefaults]:
    path = resources.files("lexir.analysis") / "data" / "defaults.tsv"
    return parse_defaults(path.read_text(encoding="utf-8"))


def parse_defaults(text: str, source: str = "defaults.tsv") -> dict[str, LanguageDefaults]:
    """Rows of a defaults table by language; a bad row is reported with its line and field."""
    rows: dict[str, LanguageDefaults] = {}
    for lineno, cells in table_rows(text, source, 4):
        language, mode, recommended, chosen = (c.strip() for c in cells)
        mode, *extra = (part.strip() for part in mode.split(";"))
        analysis = []
        for option in extra:
            key, _, value = option.partition("=")
            try:
                analysis.append((key.strip(), OPTIONS[key.strip()](value.strip())))
            except KeyError:
                raise ValueError(f"{source} line {lineno} (field 'mode'): bad analyzer option {option!r}; valid: "
                                 "stoplist=NAME, verb_lemmas=true|false, families=true|false, compounds=query|both") from None
        if mode not in MODES:
            raise ValueError(f"{source} line {lineno} (field 'mode'): {mode!r} is not one of {', '.join(MODES)}")
        try:
            code = language if language == "*" else normalise_language(language)
        except ValueError as err:
            raise ValueError(f"{source} line {lineno} (field 'language'): {err}") from None
        rows[code] = LanguageDefaults(code, mode, recommended, chosen, tuple(analysis))
    if "*" not in rows:
        raise ValueError(f"{source} has no '*' row for languages without their own")
    return rows


def language_defaults(language: str) -> LanguageDefaults:
    """The defaults of ``language`` (a code or Snowball name), or the ``*`` row."""
    table = _table()
    return table.get(normalise_language(language) if language else "*", table["*"])


def auto_analysis(language: str) -> str:
    """What ``mode=auto`` reads for ``language`` (its row's mode and analyzer options), as a string
    for cache keys: an index or run made before the row changed is never reused after ("" for no
    language or an unknown code)."""
    try:
        row = language_defaults(language) if language else None
    except ValueError:
        return ""
    return repr((row.mode, row.analysis)) if row is not None else ""


def all_language_defaults() -> list[LanguageDefaults]:
    """Every row, the fallback last (for ``lexir systems`` and docs/systems.md)."""
    return list(_table().values())
