"""Ids written the way lawyers of each jurisdiction cite them.

``BGB::823/abs:1/satz:2`` -> ``§ 823 Abs. 1 S. 2 BGB``; ``GG::1/abs:1`` -> ``Art. 1 Abs. 1 GG``;
``kk::11/par:3/pkt:2`` -> ``art. 11 § 3 pkt 2 k.k.``; ``CivC::914`` -> ``άρθρο 914 ΑΚ``;
``N4624_2019::5/par:2`` -> ``άρθρο 5 παρ. 2 ν. 4624/2019``.

The act abbreviations come from the act tables in ``data/`` (the first abbreviation of a
row); an act the tables do not know is written by its id.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

from lexir.citations.model import read_act_table
from lexir.types import Corpus, UnitId

_DE_STEPS = {"abs": "Abs.", "satz": "S.", "nr": "Nr.", "lit": "Buchst.", "dlit": "Buchst.", "tlit": "Buchst."}
_PL_STEPS = {"par": "§", "ust": "ust.", "pkt": "pkt", "lit": "lit.", "tiret": "tiret"}
_EL_STEPS = {"par": "παρ.", "item": "περ.", "subitem": "υποπερ."}
_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
_GREEK_LAW = re.compile(r"^N(\d+)_(\d{4})$")


@lru_cache(maxsize=4)
def _abbreviations(language: str) -> dict[str, str]:
    table = resources.files("lexir.citations") / "data" / f"{language}_acts.tsv"
    if not table.is_file():
        return {}
    return {e.source: e.abbreviations[0] for e in read_act_table(table) if e.abbreviations}


def _language(unit: UnitId, corpus: Corpus | None) -> str:
    if corpus is not None and corpus.language:
        return corpus.language
    if unit.source in _abbreviations("pl"):
        return "pl"
    if unit.source in _abbreviations("el") or _GREEK_LAW.match(unit.source):
        return "el"
    return "de"


def _article_level(unit: UnitId, corpus: Corpus | None) -> str:
    if corpus is None:
        return ""
    act = corpus.acts.get(unit.source)
    if act is None:
        return ""
    for article in act.articles:
        if article.id == unit.canonical:
            return article.level
    return ""


def format_citation(unit_id: str, corpus: Corpus | None = None, language: str | None = None) -> str:
    """``unit_id`` as a citation; ``corpus`` (when given) supplies the language and whether a
    German article is a § or an Art."""
    try:
        unit = UnitId.parse(unit_id)
    except ValueError:
        return unit_id
    lang = language or _language(unit, corpus)
    if lang == "pl":
        article = unit.article.replace("^", "")
        if "^" in unit.article:
            base, sup = unit.article.split("^", 1)
            article = base + sup.translate(_SUPERSCRIPT)
        steps = " ".join(f"{_PL_STEPS.get(level, level)} {label}" for level, label in unit.path)
        act = _abbreviations("pl").get(unit.source, unit.source)
        return " ".join(part for part in (f"art. {article}", steps, act) if part)
    if lang == "el":
        steps = " ".join(f"{_EL_STEPS.get(level, level)} {label}" for level, label in unit.path)
        law = _GREEK_LAW.match(unit.source)
        act = _abbreviations("el").get(unit.source) or (f"ν. {law.group(1)}/{law.group(2)}" if law else unit.source)
        return " ".join(part for part in (f"άρθρο {unit.article}", steps, act) if part)
    level = _article_level(unit, corpus)
    if level in ("anlage", "body") or unit.article.startswith("Anlage"):
        head = unit.article if unit.article != "body" else ""
    else:
        head = f"Art. {unit.article}" if level == "art" else f"§ {unit.article}"
    steps = " ".join(f"{_DE_STEPS.get(level, level)} {label}" for level, label in unit.path)
    return " ".join(part for part in (head, steps, unit.source) if part)
