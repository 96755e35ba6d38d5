"""The German act table, ``lexir/citations/data/acts.tsv``, built from the corpus: every
jurabk of the 2021/22 corpus index ``de/laws_index.tsv`` with the variants it derives (``AO`` for
``AO 1977``, ``SGB V`` for ``SGB 5``, ``EGBGB`` for ``BGBEG``), the names citations use (titles in
the genitive, short titles learnt from the laws' citations of each other) and those of
``data/act_variants.tsv``; the citation finder (:mod:`lexir.jurisdictions.de.citations`) only reads it.

Regenerate: ``python -m lexir.jurisdictions.de.act_table LAWS_INDEX VARIANTS TAR > data/acts.tsv``.
It reads the laws through :mod:`lexir.jurisdictions.de.statutes`, so it lives here, above the citations.
"""

from __future__ import annotations

import csv
import re
import sys
from collections import Counter
from pathlib import Path

from lexir.jurisdictions.de.citations import _ROMAN, _WORD, _data, _name_key
from lexir.jurisdictions.de.statutes import law_texts, safe_act_id


def _roman(n: int) -> str:
    return next(r for r, v in _ROMAN.items() if v == n)


def _genitives(title: str) -> list[str]:
    """The title and the genitive forms a citation uses (``des Sozialgerichtsgesetzes``)."""
    out = [title]
    words = title.split()
    if not words:
        return out
    last = words[-1]
    if len(words) == 1:
        if last.endswith("gesetz"):
            out.append(last + "es")
        elif last.endswith("gesetzbuch"):
            out += [last + "s", last + "es"]
    elif len(words) == 2 and words[0].endswith("es") and words[1] in ("Gesetzbuch", "Handelsgesetzbuch"):
        adj = words[0][:-2] + "en"
        out += [f"{adj} {words[1]}s", f"{adj} {words[1]}es"]
    if words[0] == "Gesetz" and len(words) > 1:
        out.append(" ".join(["Gesetzes", *words[1:]]))
    elif len(words) > 1 and words[0].endswith("gesetz"):  # Einführungsgesetz zum ... -> Einführungsgesetzes
        out.append(" ".join([words[0] + "es", *words[1:]]))
    return out


# Sozialgesetzbuch books as courts write them: "Fünftes Buch Sozialgesetzbuch", "des Zehnten Buches
# Sozialgesetzbuch", "Sozialgesetzbuch Fünftes Buch", "SGB V", "SGB 5"
_ORDINALS = ("Erst", "Zweit", "Dritt", "Viert", "Fünft", "Sechst", "Siebt", "Acht", "Neunt", "Zehnt", "Elft",
             "Zwölft", "Dreizehnt", "Vierzehnt")


def _sgb_names(book: int) -> list[str]:
    ordinal = _ORDINALS[book - 1]
    roman = _roman(book)
    return [
        f"{ordinal}es Buch Sozialgesetzbuch", f"{ordinal}en Buches Sozialgesetzbuch",
        f"{ordinal}en Buchs Sozialgesetzbuch", f"{ordinal}en Buch Sozialgesetzbuch",
        f"{ordinal}es Buch des Sozialgesetzbuches", f"{ordinal}en Buches des Sozialgesetzbuches",
        f"{ordinal}en Buches des Sozialgesetzbuchs", f"{ordinal}en Buch des Sozialgesetzbuches",
        f"Sozialgesetzbuch {ordinal}es Buch", f"Sozialgesetzbuches {ordinal}es Buch",
        f"Sozialgesetzbuch {roman}", f"Sozialgesetzbuches {roman}", f"Sozialgesetzbuchs {roman}",
    ]


def read_titles(tar_path: str | Path) -> dict[str, tuple[str, str]]:
    """slug -> (jurabk, full title) from the front matter of each law in the corpus tarball; the
    index ``laws_index.tsv`` keeps only the first line of a title."""
    out: dict[str, tuple[str, str]] = {}
    for _name, markdown in law_texts(tar_path):
        text = markdown[:8000]
        block = re.search(r"^---\n(.*?)\n---", text, re.S | re.M)
        if not block:
            continue
        head = block.group(1)
        before = text[: block.start()].strip()  # a title broken over the opening "---" (AufenthG)
        title = re.search(r"^Title: (.*?)(?=\n[A-Za-z]+:|\Z)", head, re.S | re.M)
        jurabk = re.search(r"^jurabk: (.*)$", head, re.M)
        slug = re.search(r"^slug: (.*)$", head, re.M)
        if slug:
            out[slug.group(1).strip()] = (
                jurabk.group(1).strip() if jurabk else "",
                " ".join(f"{before} {title.group(1) if title else ''}".split()),
            )
    return out


_BGBL_HEAD = (
    re.compile(r"^Fundstelle\n:\s+BGBl (?P<part>I|II):\s*(?P<year>\d{4}),\s*(?P<page>\d+)", re.M),
    re.compile(r"^Neugefasst durch\n:\s+Bek\. v\. \d+\.\d+\.(?P<year>\d{4}) (?P<part>I|II) (?P<page>\d+)", re.M),
)
_BGBL_CITE = re.compile(
    rf"(?P<name>(?:[A-ZÄÖÜ][{_WORD}]+(?:en|e)\s+)?[A-ZÄÖÜ][{_WORD}\-]*?(?:gesetz|gesetzbuch|ordnung|verordnung)"
    rf"(?:es|s|e)?)\s+(?:in der Fassung der Bekanntmachung\s+)?vom\s+\d{{1,2}}\.\s*[{_WORD}]+\s+(?P<year>\d{{4}})"
    r"\s*\(BGBl\.\s*(?P<part>I{1,2})\s*S\.\s*(?P<page>\d+)"
)
_GENERIC_TITLE = re.compile(r"^(?:Gesetz|Verordnung|Änderungs|Haushalts(?!struktur)|Durchführungs|Einführungs|"
                            r"Ausführungs|Begleit|Mantel|Bereinigungs|Anpassungs|Überleitungs)|reform|änderung", re.I)


def mine_short_titles(tar_path: str | Path, min_votes: int = 2, agreement: float = 0.8) -> dict[str, str]:
    """Short titles -> jurabk, learnt from the corpus itself.

    The corpus's titles are long titles (``Gesetz über das Kreditwesen``), while laws cite each
    other by short title with the promulgation: ``des Kreditwesengesetzes in der Fassung der
    Bekanntmachung vom 9. September 1998 (BGBl. I S. 2776)``. That BGBl. reference is the
    ``Fundstelle`` or ``Neugefasst durch`` of exactly one law's header (``Bek. v. 9.9.1998 I
    2776``), which names the act. A short title is kept when at least ``min_votes`` such
    citations agree and at least ``agreement`` of its citations point to the same law; generic
    words (``Änderungsgesetz``, ``Haushaltsgesetz``) are never kept.
    """
    keys: dict[tuple[str, str, str], set[str]] = {}
    texts: list[str] = []
    for _name, text in law_texts(tar_path):
        jurabk = re.search(r"^jurabk: (.*)$", text[:2000], re.M)
        if jurabk and jurabk.group(1).strip():
            for head in _BGBL_HEAD:
                for m in head.finditer(text[:6000]):
                    keys.setdefault((m["part"], m["year"], m["page"]), set()).add(jurabk.group(1).strip())
        texts.append(" ".join(text.split()))  # the Markdown is hard-wrapped
    votes: dict[str, Counter] = {}
    for text in texts:
        for m in _BGBL_CITE.finditer(text):
            laws = keys.get((m["part"], m["year"], m["page"]))
            if laws and len(laws) == 1:
                votes.setdefault(_nominative(m["name"]), Counter())[next(iter(laws))] += 1
    out = {}
    for name, counter in votes.items():
        (law, n), total = counter.most_common(1)[0], sum(counter.values())
        # an amending act (jurabk ...ÄndG) only carries its articles: its BGBl. reference is not
        # the cited law's ("Psychotherapeutengesetz" was Art. 1 of PsychThG_SGB5uaÄndG)
        if n >= min_votes and n / total >= agreement and not _GENERIC_TITLE.search(name) and "ÄndG" not in law:
            out[name] = law
    return out


def _nominative(name: str) -> str:
    """``Kreditwesengesetzes`` -> ``Kreditwesengesetz``, ``Allgemeinen Meisterprüfungsverordnung`` kept."""
    for end, cut in (("gesetzes", 2), ("gesetzbuches", 2), ("gesetzbuchs", 1)):
        if name.endswith(end):
            return name[:-cut]
    return name


def _short_title_forms(short: str) -> list[str]:
    """A mined short title in the forms a citation uses: nominative and genitive."""
    forms = [short]
    if short.endswith("gesetz"):
        forms.append(short + "es")
    elif short.endswith("gesetzbuch"):
        forms += [short + "s", short + "es"]
    return forms


def build_act_table(laws_index: str | Path, variants: str | Path | None = None,
                    tar: str | Path | None = None) -> list[tuple[str, list[str], list[str]]]:
    """Rows ``(source, abbreviations, names)`` of ``data/acts.tsv`` from ``laws_index.tsv``.

    Every law of the index gets a row (source: ``safe_act_id(jurabk, slug)``); its jurabk is
    an abbreviation, its title a name (with the genitive forms of short titles). Derived
    variants, each added only when no other law claims the same string: a jurabk without a
    trailing year (``AO 1977`` -> ``AO``), Roman Sozialgesetzbuch books (``SGB 5`` ->
    ``SGB V``), ``EGBGB`` style names of introductory acts (``BGBEG``), numbered ordinances as
    cited (``4. BImSchV`` for ``BImSchV 4 2013``). ``variants`` (default
    ``data/act_variants.tsv``: source<TAB>variant|variant<TAB>where the variant comes from)
    adds the listed ones. With ``tar`` (the corpus tarball) titles are read in full from each
    law's front matter, and short titles are learnt from the laws' citations of each other by their
    BGBl. reference (:func:`mine_short_titles`: ``des Kreditwesengesetzes`` -> ``KredWG``). (A title's parentheses are not read as abbreviations: the corpus's titles
    are long titles without the short title, and what they put in parentheses names
    organisations and treaties: ``(EURATOM)``, ``(WTO)``, ``(OSZE)``.) Sozialgesetzbuch books get their names in words and numerals
    (``Fünftes Buch Sozialgesetzbuch``, ``des Zehnten Buches Sozialgesetzbuch``, ``SGB V``).
    """
    full = read_titles(tar) if tar else {}
    rows: list[tuple[str, str, str]] = []
    with open(laws_index, encoding="utf-8", newline="") as f:
        for rec in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
            jurabk = " ".join((rec["jurabk"] or "").split())
            parts = (rec["path"] or "").split("/")
            slug = rec["slug"] or (parts[1] if len(parts) > 2 else "")
            title = " ".join((rec["title"] or "").split())
            if slug in full:  # the tarball's front matter: full titles (and the jurabk where the index lost it)
                jurabk = jurabk or full[slug][0]
                title = full[slug][1] or title
            rows.append((safe_act_id(jurabk, slug), jurabk, title))
    mined: dict[str, list[str]] = {}  # jurabk -> short titles
    if tar:
        for name, j in mine_short_titles(tar).items():
            mined.setdefault(j, []).append(name)
    jurabks = {j for _, j, _ in rows if j}
    derived: dict[str, list[str]] = {}
    for _, j, _ in rows:
        if not j:
            continue
        forms = []
        base = re.sub(r"\s+(?:19|20)\d\d$", "", j)
        if base != j:
            forms.append(base)
        sgb = re.fullmatch(r"SGB (\d+)", base)
        if sgb and int(sgb.group(1)) in _ROMAN.values():
            forms.append(f"SGB {_roman(int(sgb.group(1)))}")
        eg = re.fullmatch(r"(\w+)EG", base)
        if eg and eg.group(1) in jurabks:
            forms.append("EG" + eg.group(1))
        numbered = re.fullmatch(r"(\S+) (\d{1,2})", base)
        if numbered:  # "BImSchV 4 2013" is the "Vierte Verordnung …", cited "4. BImSchV"
            forms.append(f"{numbered.group(2)}. {numbered.group(1)}")
        derived[j] = forms
    claims = Counter(v for forms in derived.values() for v in forms)
    titled = {_name_key(n) for _, _, t in rows if t for n in _genitives(t)}  # titles win over mined names
    extra: dict[str, list[str]] = {}  # source id -> variants
    vpath = Path(variants) if variants else Path(str(_data("act_variants.tsv")))
    if vpath.is_file():
        for line in vpath.read_text(encoding="utf-8").splitlines():
            if line.startswith("#") or not line.strip() or line.startswith("source\t"):
                continue
            j, vs = line.split("\t")[:2]
            extra[j] = [v for v in vs.split("|") if v]
    out = []
    for source, j, title in rows:
        abbrevs = [j] if j else []
        abbrevs += [v for v in derived.get(j, []) if claims[v] == 1 and v not in jurabks]
        for v in extra.get(source, []):
            # a listed short title is also written in the genitive: "des Grundgesetzes"
            for form in (v, v + "es") if v.endswith("gesetz") else (v,):
                if form not in abbrevs:
                    abbrevs.append(form)
        names = _genitives(title) if title else []
        for short in mined.get(j, []):
            names += [n for n in _short_title_forms(short) if n not in names and _name_key(n) not in titled]
        sgb = re.fullmatch(r"SGB (\d+)", j)
        if sgb and 1 <= int(sgb.group(1)) <= len(_ORDINALS):
            names += _sgb_names(int(sgb.group(1)))
        out.append((source, abbrevs, names))
    return out


def act_units(laws_index: str | Path) -> dict[str, str]:
    """source -> ``§``, ``Art`` or ``§|Art``: how the act numbers its articles (the index counts
    its ``§`` and ``Art`` headings). The Grundgesetz has Artikel, the BGB Paragraphen: a bare
    ``§ 5`` never refers to the Grundgesetz."""
    out: dict[str, str] = {}
    with open(laws_index, encoding="utf-8", newline="") as f:
        for rec in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
            jurabk = " ".join((rec["jurabk"] or "").split())
            kinds = [k for k, n in (("§", rec["n_paragraph_headings"]), ("Art", rec["n_article_headings"]))
                     if n and n.isdigit() and int(n) > 0]
            out[safe_act_id(jurabk, rec["slug"])] = "|".join(kinds)
    return out


def write_act_table(rows: list[tuple[str, list[str], list[str]]], out=None,
                    units: dict[str, str] | None = None) -> None:
    out = out or sys.stdout
    units = units or {}
    out.write("# German federal acts: lexir source id (safe_act_id(jurabk)), abbreviations, names, and how\n")
    out.write("# the act numbers its articles (units: § and/or Art, from the index's heading counts).\n")
    out.write("# Generated by lexir.jurisdictions.de.act_table from de/laws_index.tsv\n")
    out.write("# (bundestag/gesetze, 2021/22) and the titles in gesetze_markdown_all.tar.gz; do not edit, edit\n")
    out.write("# data/act_variants.tsv and regenerate: python -m lexir.jurisdictions.de.act_table LAWS_INDEX VARIANTS TAR\n")
    out.write("source\tabbreviations\tnames\tunits\n")
    for source, abbrevs, names in rows:
        clean = [n.replace("\t", " ").replace("|", " ") for n in names]
        out.write(f"{source}\t{'|'.join(abbrevs)}\t{'|'.join(clean)}\t{units.get(source, '')}\n")


if __name__ == "__main__":  # pragma: no cover
    write_act_table(build_act_table(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None,
                                    sys.argv[3] if len(sys.argv) > 3 else None), units=act_units(sys.argv[1]))
