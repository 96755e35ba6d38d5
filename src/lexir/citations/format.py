"""Ids written the way lawyers of each jurisdiction cite them, used by the CLI and the service.

German ``§ 823 Abs. 1 S. 2 BGB`` (``Art. 1 GG`` for article-numbered laws, ``Art. 232 § 10
EGBGB``), Polish ``art. 415 § 1 pkt 2 k.c.`` (``art. 4¹`` for inserted articles), Greek
``άρθρο 914 παρ. 1 ΑΚ``, ``άρθρο 5 ν. 4624/2019``. The act is written with its usual
abbreviation from the citation finder's act table of that language (else a short name, else
the act id).
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

from lexir.types import Corpus, UnitId

# level -> how the unit is written inside a citation, per language ({} is the label)
_LEVELS = {
    "de": {"abs": "Abs. {}", "satz": "S. {}", "nr": "Nr. {}", "lit": "Buchst. {}", "dlit": "Doppelbuchst. {}",
           "tlit": "Dreifachbuchst. {}"},
    "pl": {"par": "§ {}", "ust": "ust. {}", "pkt": "pkt {}", "lit": "lit. {}", "tiret": "tiret {}", "zd": "zd. {}"},
    "el": {"par": "παρ. {}", "item": "περ. {}"},
}
_ARTICLE = {"de": "§ {}", "pl": "art. {}", "el": "άρθρο {}"}
_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


@lru_cache(maxsize=4)
def act_abbreviations(language: str) -> dict[str, str]:
    """Act id -> its usual abbreviation (the first one in the act table), else its short name."""
    from lexir.citations.model import read_act_table

    name = {"de": "de_acts.tsv", "pl": "pl_acts.tsv", "el": "el_acts.tsv"}.get(language)
    if not name:
        return {}
    table = read_act_table(resources.files("lexir.citations") / "data" / name)
    out: dict[str, str] = {}
    for entry in table:
        short = entry.abbreviations[0] if entry.abbreviations else (entry.names[0] if entry.names else "")
        if short and len(short) <= 40:
            out.setdefault(entry.source, short)
    return out


def _label(label: str, language: str) -> str:
    if language == "pl" and "^" in label:
        head, _, sup = label.partition("^")
        return head + sup.translate(_SUPERSCRIPT)
    return label


@lru_cache(maxsize=1 << 16)
def format_citation(unit_id: str, language: str, article_level: str = "article") -> str:
    """The citation of a unit id as written in its jurisdiction (see the module doc)."""
    try:
        parsed = UnitId.parse(unit_id)
    except ValueError:
        return unit_id
    act = act_abbreviations(language).get(parsed.source, parsed.source)
    article = _label(parsed.article, language)
    if language == "de":
        if article_level == "body":
            head = ""  # a law without § / Art: its text is cited by the act (and Satz) alone
        elif "§" in article:  # EGBGB-style "Art. 232 § 10", stored as the label "232§10"
            head = "Art. {} § {}".format(*article.split("§", 1))
        elif article_level == "art":
            head = f"Art. {article}"
        elif article_level == "anlage" or not article[:1].isdigit():
            head = article  # "Anlage 1", "Anhang"
        else:
            head = f"§ {article}"
    else:
        head = _ARTICLE.get(language, "{}").format(article)
    levels = _LEVELS.get(language, {})
    steps = [levels.get(level, f"{level} {{}}").format(_label(label, language)) for level, label in parsed.path]
    return " ".join(part for part in (head, *steps, act) if part)


@lru_cache(maxsize=1 << 16)
def unit_heading(level: str, label: str, language: str, title: str = "") -> str:
    """One breadcrumb: ``§ 823 Schadensersatzpflicht``, ``Abs. 1``, ``art. 415``."""
    if level == "body":
        return "Text"
    if level in ("article", "para", "art", "anlage"):
        text = format_citation(f"x::{label}", language, level).rsplit(" ", 1)[0]
    else:
        text = _LEVELS.get(language, {}).get(level, f"{level} {{}}").format(_label(label, language))
    return f"{text} {title}".strip() if title and len(title) <= 120 else text


def article_levels(corpus: Corpus) -> dict[str, str]:
    """Article id -> its level (``para`` for §, ``art`` for Art, ``anlage`` ...): what
    :func:`format_citation` needs to tell a German § from an Art."""
    return {a.id: a.level for act in corpus.acts.values() for a in act.articles}
