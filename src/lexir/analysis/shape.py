"""The shape of a question: whether the asker speaks in the first person.

Statutes, headings and exam stems speak in the third person; a person telling their own case says
"I", "me", "my" ("j'ai piqué le vélo de mon voisin", "ukradłem rower koledze, co mi grozi?"). The
words per language are ``data/first_person.tsv``.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

from lexir.analysis.languages import normalise_language

_WORD = re.compile(r"\w+", re.UNICODE)
TABLE = "first_person.tsv"


def parse_first_person(text: str, source: str = TABLE) -> dict[str, frozenset[str]]:
    """Language code -> its first-person words, from lines ``code<TAB>word, word, ...`` (``#``
    starts a comment line). A line without a tab, an unknown language, an empty word or a language
    given twice are errors naming ``source`` and the line."""
    table: dict[str, frozenset[str]] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        code, tab, listed = line.partition("\t")
        if not tab:
            raise ValueError(f"{source} line {lineno}: expected 'language<TAB>word, word, ...', got {line!r}")
        try:
            code = normalise_language(code)
        except ValueError:
            raise ValueError(f"{source} line {lineno}: unknown language {code.strip()!r}") from None
        found = [w.strip().casefold() for w in listed.split(",")]
        if not all(found):
            raise ValueError(f"{source} line {lineno}: an empty word in {line!r}")
        if code in table:
            raise ValueError(f"{source} line {lineno}: language {code!r} is given twice")
        table[code] = frozenset(found)
    return table


@cache
def first_person_words(language: str) -> frozenset[str]:
    """The first-person words of ``language``; a language the table lacks is an error naming it."""
    code = normalise_language(language)
    table = parse_first_person((resources.files("lexir.analysis") / "data" / TABLE).read_text(encoding="utf-8"))
    if code not in table:
        raise ValueError(f"no first-person words for language {code!r} (lexir/analysis/data/{TABLE}; "
                         f"languages: {', '.join(sorted(table))})")
    return table[code]


def in_first_person(text: str, language: str) -> bool:
    """Whether ``text`` has a first-person word of ``language`` (case-insensitive)."""
    mine = first_person_words(language)
    return any(w in mine for w in _WORD.findall(text.casefold()))
