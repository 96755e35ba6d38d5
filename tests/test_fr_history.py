"""The French codes through time (lexir.jurisdictions.fr.history) on the real legalize-fr history."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from lexir.jurisdictions.fr.history import VersionRow, load_french_history, read_versions, select_versions
from lexir.structure.history import HistoryError

DATA = Path("/work/shared/data/fr")
TAR, TSV = DATA / "history.tar.xz", DATA / "versions.tsv"
TORT = ("Tout fait quelconque de l'homme, qui cause à autrui un dommage, oblige celui par la faute duquel il est "
        "arrivé à le réparer.")


def _need_data() -> None:
    if not TAR.is_file() or not TSV.is_file():
        pytest.skip(f"{DATA} missing")


@pytest.fixture(scope="module")
def civil():
    _need_data()
    return load_french_history(TAR, TSV, codes=["Cciv"], cache=False)


def test_renumbering_of_2016(civil):
    before = civil.as_of("2015-06-01")
    assert before["Cciv::1382"].text == TORT
    after = civil.as_of("2017-01-01")
    assert after["Cciv::1240"].text == TORT
    assert "présomptions" in after["Cciv::1382"].text
    assert civil.version("Cciv::1240", "2017-01-01").valid_from == "2016-10-01"  # Source-Date, not publication


def test_dates_are_source_dates_and_odd_commits_are_skipped(civil):
    rows = [r for r in read_versions(TSV) if r.identifier == "LEGITEXT000006070721"]
    assert civil.first == "1803-03-27"  # git dates before 1970 are all 1970-01-02
    assert "1970-01-02" not in civil.dates or any(r.source_date == "1970-01-02" for r in rows)
    assert civil.latest == max(r.source_date for r in rows if r.source_date != "2026-12-31")
    reasons = {Path(m).name: why for m, _, why in civil.skipped}
    assert reasons["1803-03-27_7f320a87.md"].startswith("bootstrap")
    assert "superseded" in reasons["2026-12-31_063bf951.md"]
    assert len(civil.dates) == len({r.source_date for r in rows}) - 1  # less the future-dated one
    assert civil.parse_errors == ()
    # the bootstrap dump is not the 1803 text: the first version holds only a handful of articles
    assert len(civil.as_of("1803-03-27")) < 20


def test_format_switch_is_no_amendment(civil):
    # the 2026-03-25 regeneration (plain -> headings, whitespace changes) leaves 1240 as it was
    versions = civil.versions("Cciv::1240")
    assert versions[-1].valid_from == "2016-10-01" and versions[-1].valid_to is None
    assert "Cciv::427-1" not in civil.as_of(civil.latest)  # created only by the superseded 2026-12-31 commit


def test_alinea_versions(civil):
    old = civil.version("Cciv::1240/al:1", "1900-01-01")  # 1240 spoke of payment before the reform
    assert old.text != TORT and old.valid_to == "2016-10-01"
    assert civil.version("Cciv::1240/al:1", "2020-01-01").text == TORT
    with pytest.raises(HistoryError):
        civil.version("Cciv::1240/al:1", "1700-01-01")  # before the first version


def test_select_versions_rules():
    def row(date: str, commit: str, subject: str = "[reform] x", line: int = 2) -> VersionRow:
        return VersionRow("LEGITEXT1", date, commit, subject, f"history/LEGITEXT1/{date}_{commit}.md", line)
    rows = [row("1990-01-01", "a", "[bootstrap] x"), row("1990-01-01", "b"), row("1991-01-01", "c"),
            row("1991-01-01", "d"), row("2030-01-01", "e"), row("2026-01-01", "f")]
    sel = select_versions(rows)
    assert [r.commit for r in sel.kept] == ["b", "d", "f"]
    assert {r.commit for r, _ in sel.skipped} == {"a", "c", "e"}


def test_cache_and_subset(tmp_path, monkeypatch):
    _need_data()
    monkeypatch.setenv("LEXIR_CACHE", str(tmp_path))
    start = time.perf_counter()
    first = load_french_history(TAR, TSV, codes=["CPC"])
    built = time.perf_counter() - start
    assert first.law_ids() == ["CPC"]
    assert list((tmp_path / "history").glob("*.pickle"))
    start = time.perf_counter()
    again = load_french_history(TAR, TSV, codes=["CPC"])
    assert time.perf_counter() - start < built
    assert again.dates == first.dates and again.ids() == first.ids()
    with pytest.raises(ValueError):
        load_french_history(TAR, TSV, codes=["Ctrav"], cache=False)  # no history of that code
