"""Provision versions from the real history of German federal laws (bundestag/gesetze, 2012-2022)."""

import tarfile

import pytest

from lexir.jurisdictions.de.history import (
    VersionRow,
    dated_rows,
    header_date,
    is_pending,
    read_versions,
    repair_headings,
    version_date,
)
from lexir.jurisdictions.de.history_dataset import load_german_history
from lexir.jurisdictions.de.statutes import parse_law
from lexir.structure.history import HistoryError, LawVersion, StatuteHistory, word_diff
from lexir.types import Provision


@pytest.fixture(scope="module")
def history(data_dir):
    folder = data_dir / "de" / "history"
    # BGB (11 versions) and StGB (8): enough for the cases below, a few seconds to parse.
    return load_german_history(folder / "gesetze_history.tar.xz", folder / "versions.tsv", name="bgb-stgb",
                               cache=False, slugs={"bgb", "stgb"})


def test_1631d_absent_in_2012_and_in_force_from_2013_01_11(history):
    with pytest.raises(HistoryError, match=r"BGB::1631d is not in force on 2012-09-01; in force from 2013-01-11"):
        history.version("BGB::1631d", "2012-09-01")
    assert "BGB::1631d" not in history.as_of("2012-12-31")
    version = history.version("BGB::1631d", "2013-06-01")
    assert version.valid_from == "2013-01-11" and version.version == "BGB::1631d@2013-01-11"
    assert "Beschneidung" in version.text and version.title.startswith("Beschneidung")
    assert "BGB::1631d" in history.as_of("2013-01-11")
    # its Absätze have versions of their own, from the same day
    assert history.version("BGB::1631d/abs:1", "2014-01-01").valid_from == "2013-01-11"


def test_a_paragraph_that_became_weggefallen_is_not_in_force_after(history):
    # StGB § 103 (insulting organs of foreign states) was repealed in 2017: "(weggefallen)" in the
    # version committed 2018-11-08, dated 2021-11-22 by its header (text of G v. 22.11.2021). The
    # history holds no version in between, so until then the 2013 text stands (docs/history.md).
    before = history.version("StGB::103", "2021-11-21")
    assert before.valid_to == "2021-11-22" and "ausländischen" in before.text
    with pytest.raises(HistoryError, match=r"StGB::103 is not in force on 2022-01-01; .*until 2021-11-22"):
        history.version("StGB::103", "2022-01-01")
    assert "StGB::103" in history.as_of("2021-11-21") and "StGB::103" not in history.as_of("2021-11-22")
    # a § that was "(weggefallen)" in every version was never in force
    with pytest.raises(HistoryError, match=r"BGB::10 is not in force on any date"):
        history.version("BGB::10")


def test_a_law_version_that_leaves_a_paragraph_unchanged_makes_no_new_version(history):
    # BGB changed on 2012-08-06, 2012-10-16, 2012-12-02, 2013-01-11, ... but § 823 only in the
    # version committed 2018-11-08 (dated 2021-12-21 by its header; earlier commits changed
    # formatting only: 2012-08-03, 2012-10-02).
    starts = [v.valid_from for v in history.versions("BGB::823")]
    assert starts[0] == "2012-08-02" and all(s >= "2021-12-21" for s in starts[1:])
    assert len(history.law_dates("BGB")) == 10  # 11 commits, two on 2012-08-03
    # the formatting-only commit of 2012-10-02 (headings out of footnotes) changes no provision
    changed = [pid for pid in history.ids() if any(v.valid_from == "2012-10-02" for v in history.versions(pid))]
    assert changed == []
    # versions of one provision follow each other without gaps or overlaps
    versions = history.versions("BGB::312g")
    assert len(versions) >= 2
    for a, b in zip(versions, versions[1:], strict=False):
        assert a.valid_to == b.valid_from and a.text != b.text


def test_as_of_is_the_law_in_force_on_that_date(history):
    early, late = history.as_of("2012-08-02"), history.as_of("2022-03-03")
    assert early.name == "bgb-stgb@2012-08-02" and set(early.act_ids()) == {"BGB", "StGB"}
    assert len(late) > len(early)
    assert history.corpus.fingerprint == late.fingerprint  # without a date: the latest
    # a day between two versions sees the earlier one
    assert history.as_of("2013-01-10")["BGB::1631"].text == history.version("BGB::1631", "2012-08-02").text
    # each document is its article's version in force, and its structure is there for units
    doc = late["BGB::823"]
    assert doc.text == history.version("BGB::823").text
    tree = next(a for a in late.acts["BGB"].articles if a.id == "BGB::823")
    assert [c.id for c in tree.children] == ["BGB::823/abs:1", "BGB::823/abs:2"]
    with pytest.raises(HistoryError, match=r"no version on 2010-01-01; the first is 2012-08-02"):
        history.as_of("2010-01-01")
    with pytest.raises(HistoryError, match=r"not a date"):
        history.as_of("2013-13-01")


def test_unknown_ids_get_the_nearest_existing_ones(history):
    with pytest.raises(HistoryError, match=r"unknown provision 'BGB::1631x'.*nearest: .*BGB::1631d"):
        history.version("BGB::1631x")
    with pytest.raises(HistoryError, match=r"no law 'BGX'.*nearest laws: BGB"):
        history.version("BGX::1")


def test_changes_between_dates_are_only_the_changed_articles(history):
    upserts, deletes = history.changes("2012-12-02", "2013-01-11")
    assert {d.id for d in upserts} == {"BGB::1631d"} and deletes == []
    upserts, deletes = history.changes("2021-11-21", "2021-11-22")  # StGB's version committed 2018-11-08
    assert "StGB::103" in deletes and len(upserts) > 100
    assert {d.id.split("::")[0] for d in upserts} == {"StGB"}


def test_word_diff_marks_removed_and_added_words():
    assert word_diff("a b c\nd", "a x c\nd e") == "a [-b-] {+x+} c\nd {+e+}"


def test_repair_puts_heading_fragments_back_but_keeps_bodies():
    old = ("---\nTitle: T\njurabk: T\n---\n\n# T\n\n## § 1\n\n(Inkrafttreten)\n\n"
           "Aufbewahrung von Unterlagen\n\n## § 2 Aufbewahrungsfristen\n\nText.\n\n\n## § 3\n\n(weggefallen)\n\n## § 4 X\n")
    act = parse_law(repair_headings(old), "t.md")
    titles = {a.label: (a.title, a.text) for a in act.articles}
    assert titles["1"] == ("", "(Inkrafttreten)")
    assert titles["2"] == ("Aufbewahrung von Unterlagen Aufbewahrungsfristen", "Text.")
    assert titles["3"][1] == "(weggefallen)"


def test_same_day_versions_count_as_that_days_last(data_dir):
    rows = read_versions(data_dir / "de" / "history" / "versions.tsv")
    same_day = [r for r in rows if r.slug == "stgb" and r.date == "2012-08-06"]
    assert len(same_day) == 2
    act = parse_law("---\nTitle: T\njurabk: T\n---\n\n# T\n\n## § 1\n\nEins.\n", "a.md")
    act2 = parse_law("---\nTitle: T\njurabk: T\n---\n\n# T\n\n## § 1\n\nZwei.\n", "b.md")
    history = StatuteHistory.build("t", "de", [LawVersion(act, "2020-01-01"), LawVersion(act2, "2020-01-01")])
    assert [v.text for v in history.versions("T::1")] == ["Zwei."]


def test_versions_tsv_errors_name_file_and_line(tmp_path):
    bad = tmp_path / "versions.tsv"
    bad.write_text("slug\tjurabk\tdate\tcommit\nbgb\tBGB\t2012-13\tabc\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"versions.tsv:2: malformed row"):
        read_versions(bad)


@pytest.mark.slow
def test_registered_dataset_has_all_laws(data_dir):
    from lexir.datasets import open as open_data

    history = open_data("de-gesetze-history", data_dir=data_dir)
    stats = history.stats()
    # 14 commit dates, 2018-11-08 now only WoEigG's (its header names no amending act), and the 16
    # dates the other 35 laws' versions committed that day take from their headers (2020-09-29 to 2021-12-21)
    assert stats["laws"] == 36 and stats["dates"] == 30 and history.parse_errors == ()
    # an act named in a compound word counts: "Sozialversicherungs-Rechengrößenverordnung 2022 v. 30.11.2021"
    assert history.law_dates("SGB 6")[-1] == "2021-11-30"
    assert stats["law_versions"] == 189 and history.law_dates("WoEigG")[-1] == "2018-11-08"
    assert history.law_dates("GG")[-1] == "2020-09-29"  # Zuletzt geändert durch Art. 1 u. 2 Satz 2 G v. 29.9.2020
    assert history.version("GG::93", "2012-08-06").valid_from == "2012-08-06"  # Art. 93 GG amended


def test_dataset_names_take_a_date_and_experiments_an_as_of(tmp_path):
    from lexir.datasets import DatasetError, split_dated, with_as_of
    from lexir.experiment import Experiment, ExperimentError

    assert split_dated("de-gesetze-history@2013-06-01") == ("de-gesetze-history", "2013-06-01")
    assert split_dated("pl-exams") == ("pl-exams", None)
    assert with_as_of("x", "2013-06-01") == "x@2013-06-01" and with_as_of("x", None) == "x"
    for bad in ("x@2013-13-01", "x@June", "x@", "@2013-06-01"):
        with pytest.raises(DatasetError, match=f"'{bad}'"):
            split_dated(bad)
    with pytest.raises(DatasetError, match="'x@2013-02-30'"):
        with_as_of("x", "2013-02-30")
    with pytest.raises(DatasetError, match="already names a date"):
        with_as_of("x@2013-06-01", "2014-01-01")
    raw = {"datasets": [{"name": "de-gesetze-history", "as_of": "2013-06-01"}], "systems": ["bm25"]}
    assert Experiment.from_dict(raw, tmp_path / "e.yaml").datasets == [("de-gesetze-history@2013-06-01", None)]
    raw["datasets"] = [{"name": "de-gesetze-history@2012-09-01", "as_of": "2013-06-01"}]
    with pytest.raises(ExperimentError, match=r"datasets\[0\].as_of"):
        Experiment.from_dict(raw, tmp_path / "e.yaml")


def test_an_as_of_drops_the_expected_scores_of_the_datasets_it_dates(tmp_path):
    """experiment --as-of rewrote each undated dataset to NAME@DATE, so the scores recorded under
    NAME/SPLIT were never looked up again: regressions went unchecked in silence. Now the dated
    experiment drops them and says which; a dataset with its own date keeps its scores."""
    from lexir.experiment import Experiment

    raw = {"datasets": ["de-gesetze-history", {"name": "de-gesetze-history", "as_of": "2012-09-01"}],
           "systems": ["bm25"],
           "expected": {"de-gesetze-history/all": {"bm25": {"nDCG@10": 0.5}},
                        "de-gesetze-history@2012-09-01/all": {"bm25": {"nDCG@10": 0.4}}}}
    exp = Experiment.from_dict(raw, tmp_path / "e.yaml")
    dated, dropped = exp.dated("2013-06-01")
    assert dated.datasets == [("de-gesetze-history@2013-06-01", None), ("de-gesetze-history@2012-09-01", None)]
    assert dropped == ["de-gesetze-history/all"]
    assert dated.expected == {"de-gesetze-history@2012-09-01/all": {"bm25": {"nDCG@10": 0.4}}}
    assert exp.datasets[0] == ("de-gesetze-history", None) and len(exp.expected) == 2  # the original unchanged
    # an answer section naming the dataset follows it to its date (it was skipped in silence)
    from lexir.llm.answer import AnswerSettings

    exp.answer = AnswerSettings.from_dict({"conditions": ["none"], "dataset": "de-gesetze-history"}, ["bm25"],
                                          ["de-gesetze-history"])
    assert exp.dated("2013-06-01")[0].answer.dataset == "de-gesetze-history@2013-06-01"


def test_a_version_is_not_in_force_before_the_amending_acts_its_header_names(history, data_dir):
    # The BGB committed 2018-11-08 holds § 650 as amended for digital products (G v. 25.6.2021)
    # and names "Art. 2 G v. 21.12.2021 I 5252 ... textlich nachgewiesen" in its header: it is
    # dated 2021-12-21, not by its commit. Before that day the 2013 text stands.
    assert "BGB::650@2018-11-08" not in [v.version for v in history.versions("BGB::650")]
    old = history.version("BGB::650", "2019-01-01")
    assert "digitaler Produkte" not in old.title and old.valid_to == "2021-12-21"
    new = history.version("BGB::650", "2022-01-01")
    assert new.valid_from == "2021-12-21" and "digitaler Produkte" in new.title
    assert new.source == "bgb/2018-11-08_5710c0a6.md"  # the member keeps its commit date
    # each version's date is the later of its commit date and its header's latest amending act
    folder = data_dir / "de" / "history"
    rows = [r for r in read_versions(folder / "versions.tsv") if r.slug in ("bgb", "stgb")]
    with tarfile.open(folder / "gesetze_history.tar.xz") as tar:
        texts = {r.member: tar.extractfile(r.member).read().decode("utf-8") for r in rows}
    for slug, act in (("bgb", "BGB"), ("stgb", "StGB")):
        in_order = [version_date(r.date, texts[r.member]) for r in rows if r.slug == slug]  # commit order
        assert in_order == sorted(in_order)  # no version dated after a later commit of its law
        assert history.law_dates(act) == sorted(set(in_order))
    stgb_2018 = next(r for r in rows if r.slug == "stgb" and r.date == "2018-11-08")
    assert header_date(texts[stgb_2018.member]) == "2021-11-22"
    # the 2012 versions' headers name acts older than their commits: their dates stay
    assert history.law_dates("BGB")[:7] == sorted({r.date for r in rows if r.slug == "bgb"})[:7]


def test_header_date_reads_the_header_forms():
    head = "---\nTitle: T\n---\n\n# T\n\nAusfertigungsdatum\n:   1896-08-18\n\n"
    assert header_date(head + "Zuletzt geändert durch\n:   Art. 1 G v. 10.5.2012 I 1084\n\n## § 1\n") == "2012-05-10"
    assert header_date(head + "Zuletzt geändert durch\n:   Art. 1 G v 22.7.2011 I 1509\n") == "2011-07-22"
    # a later act named in a continuation line, and "dieser geändert durch"
    assert header_date(head + "Zuletzt geändert durch\n:   Art. 1 G v. 30.3.2021 I 441, dieser geändert\n"
                       "    durch Art. 15 Nr. 1 G v. 31.3.2021 I 448\n") == "2021-03-31"
    assert header_date(head + "Stand: Zuletzt geändert Art. 13 Abs. 14 G v. 12.4.2012 I 579\n") == "2012-04-12"
    changes = ("Zuletzt geändert durch\n:   Art. 1 G v. 10.5.2012 I 1084\n\n"
               "Änderung durch\n:   Art. 1 G v. 25.6.2012 I 1374 (Nr. 28) noch nicht berücksichtigt\n\n"
               "Mittelbare änderung durch\n:   Art. 154a G v. 20.11.2019 I 1626 ist nicht ausführbar, da\n\n")
    assert header_date(head + changes) == "2012-05-10"  # acts not in the text do not count
    assert header_date(head + changes + "Änderung durch\n:   Art. 2 G v. 21.12.2012 I 5252 (Nr. 86) textlich "
                       "nachgewiesen, dokumentarisch noch nicht abschließend bearbeitet\n") == "2012-12-21"
    assert header_date(head + "Stand: Bek. v. 18.10.2021 BAnz AT 29.10.2021 B3 ist berücksichtigt\n") == "2021-10-18"
    # a new promulgation names no amending act; a date in the text below the first heading is no header
    assert header_date(head + "Neugefasst durch\n:   Bek. v. 12.1.2021 I 34\n\n## § 1\n\nZuletzt geändert durch\n"
                       ":   Art. 1 G v. 1.1.2020 I 1\n") is None
    assert version_date("2018-11-08", head + "Zuletzt geändert durch\n:   Art. 4 G v. 7.5.2021 I 850\n") == "2021-05-07"
    assert version_date("2013-01-11", head + "Zuletzt geändert durch\n:   Art. 1 G v. 20.12.2012 I 1\n") == "2013-01-11"


def test_a_version_dated_after_a_later_one_is_left_out():
    def row(date, n):
        return VersionRow("t", "T", date, f"{n:08d}", "", n)

    head = "# T\n\nZuletzt geändert durch\n:   Art. 1 G v. {} I 1\n"
    rows = [row("2012-01-01", 1), row("2018-11-08", 2), row("2019-01-01", 3), row("2022-02-13", 4)]
    texts = {rows[0].member: head.format("1.12.2011"), rows[1].member: head.format("7.5.2021"),
             rows[2].member: head.format("1.1.2019"), rows[3].member: head.format("7.5.2021")}
    dated, dropped = dated_rows(rows, texts)
    # the 2018 commit holds a 2021 text, but the 2019 one is older law: the 2018 one never stood alone
    assert [(r.date, d) for r, d in dated] == [("2012-01-01", "2012-01-01"), ("2019-01-01", "2019-01-01"),
                                                ("2022-02-13", "2022-02-13")]
    assert dropped == [rows[1]]


def test_zukuenftig_in_kraft_is_not_in_force_until_its_text_stands(data_dir):
    # The ZPO of 2012 holds the reform of 2009 (in force 2013-01-01) as "(XXXX) §§ 802a bis 802j
    # (zukünftig in Kraft)" headings with no text, and § 802k with Abs. 1-2 marked "(zukünftig in
    # Kraft)" while Abs. 3-4 (the Verordnungsermächtigungen) were in force.
    folder = data_dir / "de" / "history"
    zpo = load_german_history(folder / "gesetze_history.tar.xz", folder / "versions.tsv", name="zpo",
                              cache=False, slugs={"zpo"})
    with pytest.raises(HistoryError, match=r"ZPO::802a is not in force on 2012-09-01; in force from 2013-01-11"):
        zpo.version("ZPO::802a", "2012-09-01")
    with pytest.raises(HistoryError, match=r"ZPO::882b is not in force on 2012-09-01; in force from 2013-01-11"):
        zpo.version("ZPO::882b", "2012-09-01")
    early = zpo.as_of("2012-09-01")
    pending = [d.id for d in early if "zukünftig in Kraft" in d.title or "zukünftig in Kraft" in d.text]
    assert pending == [] and "ZPO::802a" not in early and "ZPO::802l" not in early
    k = early["ZPO::802k"]
    assert k.text.startswith("(3) Die Landesregierungen") and "Vermögensverzeichnisse werden landesweit" not in k.text
    tree = next(a for a in early.acts["ZPO"].articles if a.id == "ZPO::802k")
    assert [c.id for c in tree.children] == ["ZPO::802k/abs:3", "ZPO::802k/abs:4"]
    with pytest.raises(HistoryError, match=r"ZPO::802k/abs:1 is not in force on 2012-09-01; in force from 2013-01-11"):
        zpo.version("ZPO::802k/abs:1", "2012-09-01")
    late = zpo.as_of("2013-01-11")
    assert late["ZPO::802a"].title.startswith("Grundsätze der Vollstreckung")
    assert late["ZPO::802k"].text.startswith("(1) Nach § 802f Abs. 6")


def test_is_pending_reads_the_marks():
    def unit(text, title="", children=()):
        return Provision("T::1", "para", "1", text, title, list(children))

    assert is_pending(unit("", "§§ 802a bis 802j (zukünftig in Kraft)"))
    assert is_pending(unit("(1) (zukünftig in Kraft) Nach § 802f Abs. 6 dieses Gesetzes"))
    assert is_pending(unit("(3a) Tritt zukünftig in Kraft")) and is_pending(unit("(4) bis (8) zukünftig in Kraft"))
    assert not is_pending(unit("(1) Dieses Gesetz tritt zukünftig in Kraft, wenn ..."))
    assert not is_pending(unit("Im Hinblick auf eine zukünftige Neuausrichtung"))
    assert not is_pending(unit("(weggefallen)", "(zukünftig in Kraft) Überschrift"))
    # a § whose text is its Absätze's is pending only when all of them are
    one, two = unit("(1) (zukünftig in Kraft) Eins."), unit("(2) Zwei.")
    assert not is_pending(unit("(1) (zukünftig in Kraft) Eins.\n(2) Zwei.", "X", [one, two]))
    assert is_pending(unit("(1) (zukünftig in Kraft) Eins.", "X", [one]))
