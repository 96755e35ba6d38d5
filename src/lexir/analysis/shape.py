"""The shape of a question: whether the asker speaks in the first person.

Statutes, headings and exam stems speak in the third person; a person telling their own case says
"I", "me", "my" ("j'ai piqué le vélo de mon voisin", "ukradłem rower koledze, co mi grozi?"). The
words per language are ``data/first_person.tsv``. Polish drops the pronoun ("ukradłem", "mogę",
"zapłaciłem": the verb's ending is the "I"), so there a verb in the first person singular counts too,
read by Morfeusz, unless the whole word is also something else ("winę", guilt; "czym", with what).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from functools import cache, lru_cache
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


# Morfeusz's verb forms that carry the person: the present/simple future (``fin``: mogę), the future
# of być (``bedzie``: będę), and the agglutinate of the past and conditional (``aglt``: ukradł+em,
# zrobiłby+m). A word read whole as anything but a verb form (a noun, a pronoun) is a homograph and
# does not count: "winę" (guilt, or winąć), "czym" (with what, or czy+m), "udziałem" (a share).
_PL_PERSON_FORMS = ("fin", "bedzie", "aglt")
_PL_VERB_FORMS = (*_PL_PERSON_FORMS, "praet")


def _polish_verbs() -> Callable[[str], bool]:
    from lexir.analysis.analyzer import morfeusz

    morf, lock = morfeusz(), threading.Lock()

    @lru_cache(maxsize=1 << 16)
    def first_person(word: str) -> bool:
        with lock:
            readings = morf.analyse(word)
        end = max(r[1] for r in readings)
        tags = [(start, stop, tag.split(":")) for start, stop, (_orth, _base, tag, *_rest) in readings]
        if any(start == 0 and stop == end and tag[0] not in _PL_VERB_FORMS for start, stop, tag in tags):
            return False
        return any(tag[0] in _PL_PERSON_FORMS and tag[1:3] == ["sg", "pri"] for _s, _e, tag in tags)

    return first_person


# Languages whose verbs say "I" without the pronoun: a word -> whether it is such a verb form.
_VERB_RULES: dict[str, Callable[[], Callable[[str], bool]]] = {"pl": _polish_verbs}


@cache
def _first_person_verb(language: str) -> Callable[[str], bool] | None:
    rule = _VERB_RULES.get(language)
    return rule() if rule else None


def in_first_person(text: str, language: str) -> bool:
    """Whether ``text`` has a first-person word of ``language`` (case-insensitive), or, in a
    language that drops the pronoun (Polish), a verb in the first person singular."""
    mine = first_person_words(language)
    words = _WORD.findall(text.casefold())
    if any(w in mine for w in words):
        return True
    verb = _first_person_verb(normalise_language(language))
    return verb is not None and any(verb(w) for w in words if not w.isdigit())
