"""German federal statutes (bundestag/gesetze Markdown): real provisions, ids, the whole corpus."""

from __future__ import annotations

import csv
import io
import os
import tarfile
import time
from pathlib import Path

import pytest

from lexir.jurisdictions.de.statutes import (
    LawSyntaxError,
    ParseError,
    is_range_stub,
    iter_law_files,
    iter_laws,
    law_stats,
    parse_archive,
    parse_law,
    read_law_files,
    safe_act_id,
    split_sentences,
)
from lexir.structure.packed import pack_act, unpack_act
from lexir.types import Act, Provision, UnitId

DATA = Path(os.environ.get("LEXIR_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
TAR = DATA / "de" / "gesetze_markdown_all.tar.gz"
INDEX = DATA / "de" / "laws_index.tsv"
FEW = ["b/bgb/index.md", "s/stgb/index.md", "g/gg/index.md", "b/bgbeg/index.md", "b/bverfschg/index.md"]


@pytest.fixture(scope="module")
def tar_path() -> Path:
    if not TAR.is_file():
        pytest.skip(f"German statutes not found at {TAR}")
    return TAR


@pytest.fixture(scope="module")
def laws(tar_path: Path) -> dict[str, Act]:
    """A few real laws, read from the archive without unpacking the rest."""
    texts = read_law_files(tar_path, FEW)
    return {path: parse_law(text, path) for path, text in texts.items()}


@pytest.fixture(scope="module")
def index_rows() -> dict[str, dict[str, str]]:
    if not INDEX.is_file():
        pytest.skip(f"laws_index.tsv not found at {INDEX}")
    with INDEX.open(encoding="utf-8") as f:
        return {row["path"]: row for row in csv.DictReader(f, delimiter="\t")}


def article(act: Act, label: str) -> Provision:
    matches = [a for a in act.articles if a.label == label]
    assert len(matches) == 1, f"{act.id} has {len(matches)} articles labelled {label!r}"
    return matches[0]


def child_labels(p: Provision, level: str) -> list[str]:
    return [c.label for c in p.children if c.level == level]


def find(act: Act, unit_id: str) -> Provision:
    for unit in act.units():
        if unit.id == unit_id:
            return unit
    raise AssertionError(f"no unit {unit_id}")


# ---------------------------------------------------------------------------
# real provisions


def test_bgb_823_two_absaetze(laws):
    bgb = laws["b/bgb/index.md"]
    assert bgb.id == "BGB" and bgb.title == "Bürgerliches Gesetzbuch" and bgb.language == "de"
    p823 = article(bgb, "823")
    assert p823.id == "BGB::823" and p823.level == "para" and p823.title == "Schadensersatzpflicht"
    assert child_labels(p823, "abs") == ["1", "2"]
    assert [s.id for s in p823.children[1].children] == ["BGB::823/abs:2/satz:1", "BGB::823/abs:2/satz:2"]
    satz2 = find(bgb, "BGB::823/abs:2/satz:2")
    assert satz2.text.startswith("Ist nach dem Inhalt des Gesetzes ein Verstoß")
    # the sentence ran over three hard line breaks in the Markdown
    assert "\n" not in find(bgb, "BGB::823/abs:1/satz:1").text
    assert "die Gesundheit, die Freiheit" in find(bgb, "BGB::823/abs:1/satz:1").text


def test_stgb_243_nummern_hang_under_satz_2(laws):
    stgb = laws["s/stgb/index.md"]
    abs1 = find(stgb, "StGB::243/abs:1")
    assert child_labels(abs1, "satz") == ["1", "2"]
    satz2 = abs1.children[1]
    assert child_labels(satz2, "nr") == ["1", "2", "3", "4", "5", "6", "7"]
    assert find(stgb, "StGB::243/abs:1/satz:2/nr:3").text == "3. gewerbsmäßig stiehlt,"
    assert satz2.text.startswith("Ein besonders schwerer Fall liegt in der Regel vor, wenn der Täter\n1. ")
    assert child_labels(find(stgb, "StGB::243"), "abs") == ["1", "2"]


def test_stgb_11_buchstaben_under_nummern(laws):
    stgb = laws["s/stgb/index.md"]
    satz = find(stgb, "StGB::11/abs:1/satz:1")
    assert child_labels(satz, "nr") == ["1", "2", "2a", "3", "4", "5", "6", "7", "8", "9"]
    assert child_labels(find(stgb, "StGB::11/abs:1/satz:1/nr:2"), "lit") == ["a", "b", "c"]
    assert find(stgb, "StGB::11/abs:1/satz:1/nr:1/lit:b").text == "b) Pflegeeltern und Pflegekinder;"


def test_list_sentence_goes_on_after_the_list(laws):
    # § 46a StGB: "Hat der Täter 1. … oder 2. …, so kann das Gericht …" is one sentence
    p46a = article(laws["s/stgb/index.md"], "46a")
    assert child_labels(p46a, "satz") == ["1"]
    satz = p46a.children[0]
    assert child_labels(satz, "nr") == ["1", "2"]
    assert satz.text.startswith("Hat der Täter\n1. in dem Bemühen")
    assert satz.text.endswith("so kann das Gericht die Strafe nach § 49 Abs. 1 mildern oder, wenn keine höhere "
                              "Strafe als Freiheitsstrafe bis zu einem Jahr oder Geldstrafe bis zu "
                              "dreihundertsechzig Tagessätzen verwirkt ist, von Strafe absehen.")  # fmt: skip


def test_gg_art_1_three_absaetze(laws):
    gg = laws["g/gg/index.md"]
    art1 = article(gg, "1")
    assert art1.id == "GG::1" and art1.level == "art"
    assert child_labels(art1, "abs") == ["1", "2", "3"]
    assert [s.text for s in art1.children[0].children] == [
        "Die Würde des Menschen ist unantastbar.",
        "Sie zu achten und zu schützen ist Verpflichtung aller staatlichen Gewalt.",
    ]
    assert {a.level for a in gg.articles} == {"art", "anlage"}  # "Anhang EV" (Einigungsvertrag)
    assert [a.label for a in gg.articles if is_range_stub(a)] == ["74a", "75"]  # "Art 74a und 75"


def test_lettered_paragraph(laws):
    p = article(laws["b/bverfschg/index.md"], "8a")
    assert p.id == "BVerfSchG::8a" and p.title == "Besondere Auskunftsverlangen"
    assert p.children and p.children[0].id == "BVerfSchG::8a/abs:1"
    assert article(laws["b/bgb/index.md"], "312a").title.startswith("Allgemeine Pflichten")


def test_weggefallen_stub_and_ranges(laws):
    bgb = laws["b/bgb/index.md"]
    stub = article(bgb, "2360")
    assert stub.title == "(weggefallen)" and stub.text == "" and stub.children == []
    assert not is_range_stub(stub)
    for label in ("3", "4", "5", "6"):  # "(XXXX) §§ 3 bis 6 (weggefallen)"
        p = article(bgb, label)
        assert p.title == "§§ 3 bis 6 (weggefallen)" and is_range_stub(p)
    # letters expand within one number: §§ 1615b bis 1615k
    letters = [a.label for a in bgb.articles if a.label.startswith("1615") and is_range_stub(a)]
    assert letters == [f"1615{c}" for c in "bcdefghijk"]
    labels = [a.label for a in bgb.articles]
    assert len(labels) == len(set(labels))
    assert labels.index("1615a") < labels.index("1615b") < labels.index("1615l")


def test_mixed_law_paragraphs_inside_articles(laws):
    eg = laws["b/bgbeg/index.md"]
    assert eg.id == "BGBEG"
    art229 = article(eg, "229")
    assert art229.level == "art" and art229.title == "Weitere Überleitungsvorschriften"
    p = article(eg, "229§1")
    assert p.level == "para" and p.title.startswith("Überleitungsvorschrift zum Gesetz zur Beschleunigung")
    assert find(eg, "BGBEG::229§1/abs:1/satz:2").text.startswith("Vor diesem Zeitpunkt")
    assert article(eg, "233§2a").title == "Moratorium"


def test_ids_parse_and_are_unique(laws):
    for act in laws.values():
        ids = [u.id for u in act.units()]
        assert len(ids) == len(set(ids)), act.id
        for unit in act.units():
            uid = UnitId.parse(unit.id)
            assert uid.source == act.id
            assert (uid.path[-1] if uid.path else (unit.level, uid.article))[1] == unit.label


def test_counts_agree_with_index_on_a_few_laws(laws, index_rows):
    for path, act in laws.items():
        row = index_rows[path]
        paras = [a for a in act.articles if a.level == "para" and not is_range_stub(a)]
        assert len(paras) == int(row["n_paragraph_headings"]), path
        assert act.id == safe_act_id(row["jurabk"])
    gg, eg = laws["g/gg/index.md"], laws["b/bgbeg/index.md"]
    assert sum(a.level == "art" and not is_range_stub(a) for a in gg.articles) == 200
    # the index counts the ten headings like "Art 27 bis 37 - (weggefallen)" once each; we expand them
    assert int(index_rows["b/bgbeg/index.md"]["n_article_headings"]) == 238
    assert sum(a.level == "art" and not is_range_stub(a) for a in eg.articles) == 228
    assert len({a.title for a in eg.articles if a.level == "art" and is_range_stub(a)}) == 10


# ---------------------------------------------------------------------------
# small inputs


LAW = """---
Title: Testgesetz
jurabk: TestG/Bek
slug: testg
---

# Testgesetz (TestG)

Ausfertigungsdatum
:   2001-01-01


## Eingangsformel

Der Bundestag hat das folgende Gesetz beschlossen:


### § 1 Zweck

(1) Die Frist beginnt am 1. Januar 2002 und endet nach 18. Monaten. Sie
gilt z. B. für Anträge nach § 5 Abs. 1. Die Behörde entscheidet.

(2) Ein Antrag ist zu stellen

1.  schriftlich oder

2.  elektronisch, und zwar

    a)  per E-Mail oder

    b)  über das Portal.


### (XXXX) §§ 2 und 3 (weggefallen)


### § 4

-


### Anlage 1 (zu § 1)

Tabelle
"""


def test_parse_small_law():
    act = parse_law(LAW, "t/testg/index.md")
    assert act.id == "TestG_Bek" and act.title == "Testgesetz"
    assert [a.label for a in act.articles] == ["1", "2", "3", "4", "Anlage 1"]
    assert [a.level for a in act.articles] == ["para", "para", "para", "para", "anlage"]
    abs1 = find(act, "TestG_Bek::1/abs:1")
    assert [s.text for s in abs1.children] == [
        "Die Frist beginnt am 1. Januar 2002 und endet nach 18. Monaten.",
        "Sie gilt z. B. für Anträge nach § 5 Abs. 1.",
        "Die Behörde entscheidet.",
    ]
    nr2 = find(act, "TestG_Bek::1/abs:2/satz:1/nr:2")
    assert child_labels(nr2, "lit") == ["a", "b"]
    assert find(act, "TestG_Bek::1/abs:2/satz:1/nr:2/lit:b").text == "b) über das Portal."
    assert article(act, "4").text == ""  # the converter's "-" placeholder
    assert article(act, "Anlage 1").title == "(zu § 1)" and article(act, "Anlage 1").text == "Tabelle"
    assert "beschlossen" not in " ".join(a.text for a in act.articles)  # Eingangsformel is no article


def test_law_without_paragraphs_gets_a_body_article():
    text = "---\nTitle: Bek\njurabk: BekX\n---\n\n# Bek\n\n## (XXXX)\n\nEs wird bekannt gemacht:\n\n1.  eins,\n\n2.  zwei.\n"
    act = parse_law(text)
    assert [(a.id, a.level) for a in act.articles] == [("BekX::body", "body")]
    assert child_labels(find(act, "BekX::body/satz:1"), "nr") == ["1", "2"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Das gilt nach § 5 Abs. 2 S. 1 Nr. 3 Buchst. a. Der Rest folgt.", 2),
        ("Es gilt z. B. ab dem 1. Januar 2002. Danach nicht.", 2),
        ("Er muss das 18. Lebensjahr vollendet haben. Sonst nicht.", 2),
        ("Die Gebühr beträgt 5 v. H. Sie ist fällig.", 1),  # "v. H. Sie" is ambiguous; kept together
        ("Verkündet im BGBl. I S. 1. Die Verordnung (EU) 2016/679. § 3 gilt.", 3),
        ("Siehe §§ 5 ff. BGB und Art. 3 GG. Das ist alles.", 2),
        ("Vom 1.1.2002 bis 2003. Dann endet es.", 2),
    ],
)
def test_split_sentences(text, expected):
    assert len(split_sentences(text)) == expected, split_sentences(text)


def test_safe_act_id():
    assert safe_act_id("BBesG/BesÜGBek 2010") == "BBesG_BesÜGBek 2010"
    assert safe_act_id("  AAustVorhAbk   USA ") == "AAustVorhAbk USA"
    assert safe_act_id("", "some_slug") == "some_slug"
    assert "::" not in safe_act_id("A::B")


def test_missing_front_matter_is_a_parse_error():
    with pytest.raises(LawSyntaxError) as info:
        parse_law("# Kein Gesetz\n\n### § 1\n\nText\n", "x/broken/index.md")
    assert info.value.error == ParseError("x/broken/index.md", 1, "no YAML front matter (--- ... ---)")


def _tar(tmp_path: Path, files: dict[str, str]) -> Path:
    return _write_tar(tmp_path / "laws.tar.gz", {f"./{name}": text for name, text in files.items()})


def _write_tar(path: Path, files: dict[str, str]) -> Path:
    """A gzipped tar at ``path`` holding each text under its name, as written."""
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_iter_laws_reports_errors_and_keeps_ids_unique(tmp_path):
    bad = "---\nTitle: X\njurabk: X\nthis line is no field\n---\n"
    path = _tar(tmp_path, {"t/testg/index.md": LAW, "b/broken/index.md": bad, "t/testg2/index.md": LAW})
    results = dict(iter_law_files(path))
    assert isinstance(results["b/broken/index.md"], ParseError)
    assert results["b/broken/index.md"].line == 4 and "no field" in results["b/broken/index.md"].message
    assert [a.id for a in results.values() if isinstance(a, Act)] == ["TestG_Bek", "TestG_Bek~testg2"]
    assert results["t/testg2/index.md"].articles[0].id == "TestG_Bek~testg2::1"
    stats = law_stats(results.values())
    assert stats["acts"] == 2 and stats["parse_errors"] == 1 and stats["paragraphs"] == 8
    assert len(list(iter_laws(path, limit=1))) == 1


# ---------------------------------------------------------------------------
# the whole corpus


@pytest.mark.slow
def test_whole_corpus(tar_path, index_rows):
    start, cpu_start = time.perf_counter(), time.process_time()
    results = list(iter_law_files(tar_path))
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    errors = [r for _, r in results if isinstance(r, ParseError)]
    acts = [(p, r) for p, r in results if isinstance(r, Act)]
    assert len(results) == 6636
    assert len(acts) + len(errors) == 6636 and len(errors) == 0, errors[:5]
    assert len({a.id for _, a in acts}) == len(acts)
    # measured 2026-11: § agree for 6,631 of 6,636 laws (the rest count "(XXXX) § 16 (zukünftig …)"
    # headings the index skips); Art for 6,577 (the index counts "Art 2 bis 6" as one heading)
    same_para = same_art = 0
    for path, act in acts:
        row = index_rows[path]
        same_para += sum(a.level == "para" and not is_range_stub(a) for a in act.articles) == int(
            row["n_paragraph_headings"]
        )
        same_art += sum(a.level == "art" and not is_range_stub(a) for a in act.articles) == int(
            row["n_article_headings"]
        )
    assert same_para / len(acts) > 0.995
    assert same_art / len(acts) > 0.985
    stats = law_stats(a for _, a in acts)
    assert stats["paragraphs"] > 90_000 and stats["articles"] > 5_000
    assert stats["units_per_level"]["satz"] > 400_000
    # CPU time, not wall time: the shared test machine may be busy. Measured ~20 s on 2 cores.
    assert cpu < 60, f"whole corpus took {cpu:.0f} s CPU ({seconds:.0f} s wall)"


# ---------------------------------------------------------------------------
# parallel parse, packing and the parse cache


def test_parallel_parse_matches_serial(tar_path):
    """Two worker processes give the same laws, in the same order, as one streamed parse."""
    serial = list(iter_law_files(tar_path, limit=250))
    parallel = parse_archive(tar_path, limit=250, workers=2, cache=False)
    assert [name for name, _ in parallel] == [name for name, _ in serial]
    assert parallel == serial


def test_pack_round_trip(laws):
    for act in laws.values():
        assert unpack_act(pack_act(act)) == act
    # ids off the scheme and texts that are no slice of their article's text are kept as they are
    odd = Act("X", "t", "de", [Provision("X::1", "para", "1", "(1) Eins. Zwei.", "Titel", [
        Provision("X::1/abs:1", "abs", "1", "(1) Eins. Zwei.", "", [
            Provision("X::1/abs:1/satz:1", "satz", "1", "nicht im Text"),
            Provision("X::other", "satz", "2", "Zwei.")])])])
    assert unpack_act(pack_act(odd)) == odd


@pytest.fixture()
def small_archive(tmp_path, tar_path) -> Path:
    """A real archive of three laws and one broken file."""
    texts = read_law_files(tar_path, FEW[:3])
    texts["x/broken/index.md"] = "no front matter here\n"
    return _write_tar(tmp_path / "laws.tar.gz", texts)


def test_parse_cache_round_trip(small_archive, tmp_path, monkeypatch):
    import lexir.jurisdictions.de.statutes as german

    monkeypatch.setenv("LEXIR_CACHE", str(tmp_path / "cache"))
    first = parse_archive(small_archive, workers=1)
    assert [isinstance(r, ParseError) for _, r in first] == [False, False, False, True]
    (folder,) = (tmp_path / "cache" / "parsed").iterdir()
    assert (folder / "meta.json").is_file() and (folder / "laws.pickle").is_file()

    def no_parsing(*args, **kwargs):
        raise AssertionError("parsed again although the archive is cached")

    monkeypatch.setattr(german, "_parse_packed", no_parsing)
    second = parse_archive(small_archive)
    assert second == first
    assert all(a is not b for (_, a), (_, b) in zip(first, second, strict=True))  # fresh objects

    # a damaged cache is parsed again, never an error
    (folder / "laws.pickle").write_bytes(b"not a pickle")
    monkeypatch.undo()
    monkeypatch.setenv("LEXIR_CACHE", str(tmp_path / "cache"))
    assert parse_archive(small_archive, workers=1) == first


def test_parse_cache_keyed_by_archive(small_archive, tmp_path, monkeypatch, tar_path):
    monkeypatch.setenv("LEXIR_CACHE", str(tmp_path / "cache"))
    parse_archive(small_archive, workers=1)
    other = _write_tar(tmp_path / "other.tar.gz", read_law_files(tar_path, FEW[3:4]))
    laws = parse_archive(other, workers=1)
    assert [name for name, _ in laws] == FEW[3:4]
    assert len(list((tmp_path / "cache" / "parsed").iterdir())) == 2


def test_the_german_laws_stream_as_the_loaded_corpus(small_archive, tmp_path, monkeypatch):
    """de-gesetze's document reader (lexir index de-gesetze streams it): the loaded corpus's
    documents, ids and fingerprint, a law at a time; the first pass parses and writes the cache,
    the next reads it; BM25 over the stream is BM25 over the corpus."""
    from functools import partial

    import lexir.jurisdictions.de.statutes as german
    from lexir.analysis import Analyzer
    from lexir.jurisdictions.de.datasets import german_law_documents, load_german_laws
    from lexir.retrieval.bm25 import BM25Retriever
    from lexir.types import DocumentStream

    monkeypatch.setenv("LEXIR_CACHE", str(tmp_path / "cache"))
    stream = DocumentStream("de-gesetze", partial(german_law_documents, small_archive), language="de")
    first = list(stream)
    assert len(list((tmp_path / "cache" / "parsed").iterdir())) == 1  # written once the pass ended
    corpus = load_german_laws(small_archive)
    assert first == list(corpus) and len(first) > 100
    assert stream.ids == corpus.ids and stream.fingerprint == corpus.fingerprint

    def no_parsing(*args, **kwargs):
        raise AssertionError("parsed again although the archive is cached")

    monkeypatch.setattr(german, "_parse_packed", no_parsing)
    streamed = BM25Retriever(Analyzer.create("de", "stem")).index(stream)
    loaded = BM25Retriever(Analyzer.create("de", "stem")).index(corpus)
    assert streamed.fingerprint == loaded.fingerprint and streamed.doc_ids == loaded.doc_ids
    assert streamed.matrix.data.tobytes() == loaded.matrix.data.tobytes()
    assert streamed.matrix.indices.tobytes() == loaded.matrix.indices.tobytes()
