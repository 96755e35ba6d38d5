"""lexir show / diff / index update / --as-of on the real history (registered dataset: slow once)."""

import json

import pytest
from typer.testing import CliRunner

from lexir.cli.main import app

runner = CliRunner()
pytestmark = pytest.mark.slow  # the first load parses 226 law versions (about a minute), then cached


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_show_prints_the_version_in_force_and_refuses_clearly(data_dir):
    ok = invoke("show", "de-gesetze-history", "BGB::1631d", "--as-of", "2013-06-01", "--format", "json",
                "--data-dir", data_dir)
    assert ok.exit_code == 0, ok.output
    shown = json.loads(ok.output)
    assert shown["id"] == "BGB::1631d" and shown["version"] == "BGB::1631d@2013-01-11"
    assert shown["valid_from"] == "2013-01-11" and shown["valid_to"] is None
    assert "Beschneidung" in shown["text"] and shown["path"] == "bgb/2013-01-11_a0d25e33.md"
    for args, message in [
        (("BGB::1631d", "--as-of", "2012-09-01"), "BGB::1631d is not in force on 2012-09-01; in force from 2013-01-11"),
        (("BGB::1631d", "--as-of", "2010-01-01"), "no version on 2010-01-01; the first is 2012-08-02"),
        (("BGB::1631x",), "nearest: "),
    ]:
        result = invoke("show", "de-gesetze-history", *args, "--data-dir", data_dir)
        assert result.exit_code != 0 and message in " ".join(result.output.split()), result.output
    text = invoke("show", "de-gesetze-history", "StGB::103", "--as-of", "2015-01-01", "--data-dir", data_dir)
    assert text.exit_code == 0 and "until 2021-11-22" in text.output  # StGB committed 2018-11-08, dated by its header


def test_diff_is_word_level(data_dir):
    result = invoke("diff", "de-gesetze-history", "BGB::312g", "--from", "2012-08-02", "--to", "2012-08-06",
                    "--data-dir", data_dir)
    assert result.exit_code == 0, result.output
    assert "[-eines Tele- oder Mediendienstes-] {+der" in result.output
    same = invoke("diff", "de-gesetze-history", "BGB::823", "--from", "2012-08-02", "--to", "2013-01-11",
                  "--data-dir", data_dir)
    assert same.exit_code == 0 and "no change" in same.output
    # the dates the wrong way round printed the amendment backwards; ISO's other forms are no dates here
    for args, message in [(("--from", "2012-08-06", "--to", "2012-08-02"), "the earlier date comes first: 2012-08-06 is "
                                                                            "after 2012-08-02"),
                          (("--from", "20120802", "--to", "2012-08-06"), "not a date: '20120802' (expected YYYY-MM-DD)")]:
        result = invoke("diff", "de-gesetze-history", "BGB::312g", *args, "--data-dir", data_dir)
        assert result.exit_code == 2 and message in " ".join(result.output.split()), result.output
    week = invoke("show", "de-gesetze-history", "BGB::823", "--as-of", "2013-W22-6", "--data-dir", data_dir)
    assert week.exit_code == 2 and "not a date: '2013-W22-6'" in week.output, week.output


def test_index_update_prints_the_same_hits_as_a_fresh_build(data_dir, tmp_path):
    updated, rebuilt = tmp_path / "updated", tmp_path / "rebuilt"
    assert invoke("index", "de-gesetze-history", "--as-of", "2012-12-02", "-o", updated,
                  "--data-dir", data_dir).exit_code == 0
    result = invoke("index", "update", updated, "--as-of", "2013-01-11", "--data-dir", data_dir)
    assert result.exit_code == 0, result.output
    assert "174 added or replaced" in result.output  # only what changed that day
    assert invoke("index", "de-gesetze-history", "--as-of", "2013-01-11", "-o", rebuilt,
                  "--data-dir", data_dir).exit_code == 0
    outputs = []
    for folder in (updated, rebuilt):
        out = invoke("search", "de-gesetze-history", "Beschneidung des männlichen Kindes", "--as-of", "2013-01-11",
                     "--index", folder, "--format", "json", "-k", "100", "--data-dir", data_dir)
        assert out.exit_code == 0, out.output
        outputs.append(json.loads(out.output))
    assert outputs[0] == outputs[1] and outputs[0]["hits"][0]["id"] == "BGB::1631d"
    # the index is of another date than the corpus asked for: refused, not silently wrong
    stale = invoke("search", "de-gesetze-history", "Kind", "--as-of", "2012-12-02", "--index", updated,
                   "--data-dir", data_dir)
    assert stale.exit_code != 0 and "different corpus" in stale.output
    static = tmp_path / "static"
    assert invoke("index", "de-gesetze-history", "--system", "bm25", "-o", static, "--data-dir", data_dir).exit_code == 0
    refused = invoke("index", "update", static, "--as-of", "2013-01-11", "--data-dir", data_dir)
    assert refused.exit_code != 0 and "cannot be updated" in refused.output


def test_as_of_filters_before_ranking(data_dir, tmp_path):
    early = invoke("search", "de-gesetze-history", "Beschneidung des männlichen Kindes", "--as-of", "2012-12-02",
                   "--format", "json", "-k", "100", "--data-dir", data_dir)
    assert early.exit_code == 0, early.output
    assert "BGB::1631d" not in {h["id"] for h in json.loads(early.stdout)["hits"]}
    noh = invoke("search", "pl-codes", "kara", "--as-of", "2013-01-01", "--data-dir", data_dir)
    assert noh.exit_code != 0 and "has no history" in noh.output


def test_open_a_dated_name_is_the_history_as_of_that_day(data_dir):
    """``NAME@DATE`` through the one door (what lexir run, search, serve and lexir.load read): the
    provisions in force that day, the same corpus as the history's own ``as_of``; a language override
    reaches it; a day before the first version is a clear error."""
    from lexir.datasets import open as open_data

    history = open_data("de-gesetze-history", data_dir=data_dir)
    dated = open_data("de-gesetze-history@2012-12-02", data_dir=data_dir)
    assert dated.fingerprint == history.as_of("2012-12-02").fingerprint and "BGB::1631d" not in dated
    assert "BGB::1631d" in open_data("de-gesetze-history@2013-06-01", data_dir=data_dir, want="corpus")
    assert open_data("de-gesetze-history@2013-06-01", data_dir=data_dir, language="en").language == "en"
    with pytest.raises(ValueError, match="no version on 2010-01-01; the first is 2012-08-02"):
        open_data("de-gesetze-history@2010-01-01", data_dir=data_dir)
