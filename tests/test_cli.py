"""The lexir command line, end to end, through typer's runner (real files, real data)."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lexir.cli.main import app
from lexir.io import read_run
from lexir.io.generations import current

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_demo_runs_the_whole_path():
    result = invoke("demo")
    assert result.exit_code == 0, result.output
    assert "119 exam questions" in result.output and "bm25-raw" in result.output and "nDCG@10" in result.output
    assert "kk::16" in result.output  # the example question's gold, retrieved


def test_run_then_eval_on_a_registered_dataset(tmp_path):
    run_path = tmp_path / "bm25.trec"
    result = invoke("run", "demo", "--system", "bm25", "--output", run_path, "--qrels-out", tmp_path / "q.txt")
    assert result.exit_code == 0, result.output
    run = read_run(run_path)
    assert len(run) == 119 and all(len(r) <= 100 for r in run.values())
    assert "2012-adwokacki_radcowy-1" in run
    stem_path = tmp_path / "stem.trec"
    assert invoke("run", "demo", "--system", "bm25", "-p", "mode=stem", "--output", stem_path).exit_code == 0
    result = invoke("eval", run_path, stem_path, "--qrels", tmp_path / "q.txt", "--format", "markdown",
                    "--per-query", tmp_path / "pq.jsonl")
    assert result.exit_code == 0, result.output
    assert "| bm25 (baseline) |" in result.output and "exact McNemar" in result.output
    rows = [json.loads(line) for line in (tmp_path / "pq.jsonl").read_text().splitlines()]
    assert len(rows) == 2 * 119 and {"system", "qid", "nDCG@10"} <= set(rows[0])


def test_run_on_a_corpus_path_with_a_query_file(data_dir, tmp_path):
    out = tmp_path / "run.trec"
    result = invoke("run", data_dir / "pl" / "codes" / "kk.json", "--system", "bm25", "--queries",
                    data_dir / "pl" / "exams_2012_2023.jsonl", "--queries-format", "polishlawllm", "--output", out)
    assert result.exit_code == 0, result.output
    assert "detected language 'pl'" in result.output
    assert len(read_run(out)) == 119


def test_run_orycore_queries_keep_their_ids(data_dir, tmp_path):
    out = tmp_path / "run.trec"
    result = invoke("run", "pl-codes", "--system", "bm25", "--queries",
                    data_dir / "pl" / "orycore" / "exam-adw-2024-sample.json", "--queries-format", "orycore",
                    "--output", out, "--data-dir", data_dir)
    assert result.exit_code == 0, result.output
    assert set(read_run(out)) <= {str(i) for i in range(1, 11)} and "1" in read_run(out)


def test_errors_are_one_clear_line(tmp_path):
    result = invoke("run", "demo", "--system", "bm26", "--output", tmp_path / "x")
    assert result.exit_code == 2 and "unknown system 'bm26'; valid:" in result.output
    result = invoke("run", "demo", "--system", "bm25", "-p", "mode=soundex", "--output", tmp_path / "x")
    assert result.exit_code == 2 and "raw, stem, lemma" in result.output
    result = invoke("stats", "no-such-dataset")
    assert result.exit_code == 2 and "registered:" in result.output
    bad = tmp_path / "q.jsonl"
    bad.write_text('{"_id": "q1", "text": "kara"}\n{"_id": "q2"}\n')
    result = invoke("run", "demo", "--system", "bm25", "--queries", bad, "--queries-format", "beir", "--output",
                    tmp_path / "x")
    assert result.exit_code == 2 and "q.jsonl:2 (field 'text or query')" in result.output
    assert "Traceback" not in result.output


def test_search_prints_citations_and_snippets():
    result = invoke("search", "demo", "przygotowanie do popełnienia czynu zabronionego jest karalne", "-k", "3",
                    "--system", "bm25")
    assert result.exit_code == 0, result.output
    assert "kk::16" in result.output and "Przygotowanie" in result.output
    assert "art. 16 k.k." in result.output  # the hit's citation, as the service gives it
    result = invoke("search", "demo", "i w z", "--system", "bm25")
    assert result.exit_code == 0 and "no results" in result.output


def test_a_long_build_reports_progress_in_plain_lines_where_stderr_is_no_terminal(tmp_path, monkeypatch):
    """In a log or a pipe (no terminal: no bar) a build still says how far it is, every
    PLAIN_EVERY_S seconds (0 here: at each step); a quick one (the default interval) says nothing."""
    import re

    from lexir.cli import main

    monkeypatch.setenv("LEXIR_CACHE", str(tmp_path / "cache"))  # built, not loaded
    quiet = invoke("search", "demo", "obrona konieczna", "-k", "1", "-p", "mode=stem")
    assert quiet.exit_code == 0 and "indexing demo" not in quiet.output, quiet.output
    monkeypatch.setattr(main, "PLAIN_EVERY_S", 0.0)
    result = invoke("search", "demo", "obrona konieczna", "-k", "1", "-p", "mode=lemma")
    assert result.exit_code == 0, result.output
    lines = re.findall(r"indexing demo \(bm25\): ([\d,]+) of 458 \((\d+)%\), \d+:\d\d elapsed", result.output)
    assert lines, result.output
    done = [int(n.replace(",", "")) for n, _ in lines]
    assert done == sorted(done) and done[-1] == 458 and "kk::25" in result.output


def test_plain_progress_lines_come_at_most_every_interval_and_say_what_is_left(monkeypatch, capsys):
    from lexir.cli import main

    now = [0.0]
    advance = main._plain_progress("encoding x", 4_000, clock=lambda: now[0])
    for now[0], n in ((10.0, 100), (31.0, 900), (45.0, 500), (62.0, 500), (3700.0, 1_000)):
        advance(n)
    lines = capsys.readouterr().err.splitlines()
    # the time left at the pace since the tenth before (lexir.io.progress.Pace): 1,000 in 31 s,
    # then 500 in 17 s, then 1,000 in an hour
    assert lines == ["encoding x: 1,000 of 4,000 (25%), 0:31 elapsed, about 1:33 left",
                     "encoding x: 2,000 of 4,000 (50%), 1:02 elapsed, about 1:08 left",
                     "encoding x: 3,000 of 4,000 (75%), 1:01:40 elapsed, about 1:00:38 left"]


THREE_ARTICLES = [
    ("278", "Kradzież", "Kto zabiera w celu przywłaszczenia cudzą rzecz ruchomą, podlega karze pozbawienia wolności."),
    ("280", "Rozbój", "Kto kradnie, używając przemocy wobec osoby, podlega karze pozbawienia wolności."),
    ("190", "Groźba karalna", "Kto grozi innej osobie popełnieniem przestępstwa na jej szkodę, podlega karze."),
]


def test_search_answers_with_recommended_once_its_encoding_is_cached(tmp_path, monkeypatch):
    """No --system: bm25 at once while recommended would first encode the corpus, and a line
    saying how to have recommended; once its encoding is cached, recommended (and a line saying so)."""
    monkeypatch.setenv("LEXIR_CACHE", str(tmp_path / "cache"))
    corpus = tmp_path / "kk3.jsonl"
    corpus.write_text("".join(json.dumps({"_id": f"kk::{n}", "title": t, "text": x}, ensure_ascii=False) + "\n"
                              for n, t, x in THREE_ARTICLES), encoding="utf-8")
    question = ["search", corpus, "ukradłem rower koledze, co mi grozi?", "--language", "pl", "--format", "json"]
    first = invoke(*question)
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["system"] == "bm25"
    assert "recommended" in first.stderr and "first encodes 3 passages of kk3 once (seconds;" in first.stderr
    assert "add --system recommended" in first.stderr
    asked = invoke(*question, "--system", "recommended")  # encodes the three articles, once
    assert asked.exit_code == 0 and json.loads(asked.stdout)["system"] == "recommended", asked.output
    again = invoke(*question)
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout) == json.loads(asked.stdout)
    assert "recommended over kk3 (its encoding is cached)" in again.stderr
    # parameters only bm25 takes: bm25, as before
    tuned = invoke(*question, "-p", "k1=0.9")
    assert tuned.exit_code == 0 and json.loads(tuned.stdout)["system"] == "bm25", tuned.output


def test_index_then_search_with_the_saved_index(tmp_path):
    result = invoke("index", "demo", "--output", tmp_path / "idx", "-p", "mode=stem")
    assert result.exit_code == 0, result.output
    assert (current(tmp_path / "idx") / "lexir.json").is_file()  # the folder's current generation
    result = invoke("search", "demo", "obrona konieczna", "--index", tmp_path / "idx", "-k", "3")
    assert result.exit_code == 0 and "kk::25" in result.output
    # lexir run over a saved index needs no --system: the folder says what it is
    result = invoke("run", "demo", "--index", tmp_path / "idx", "--output", tmp_path / "run.trec")
    assert result.exit_code == 0, result.output
    first = (tmp_path / "run.trec").read_text(encoding="utf-8").splitlines()[0].split()
    assert first[-1] == "bm25" and len(first) == 6
    result = invoke("run", "demo", "--output", tmp_path / "other.trec")
    assert result.exit_code == 2 and "--system" in result.output


def test_datasets_and_stats(data_dir):
    result = invoke("datasets", "--data-dir", data_dir)
    assert result.exit_code == 0 and "pl-exams" in result.output and "ok" in result.output
    result = invoke("stats", "pl-exams", "--data-dir", data_dir, "--json")
    assert result.exit_code == 0, result.output
    stats = json.loads(result.output)
    assert stats["queries kept"] + stats["queries dropped"] == 2166
    assert stats["splits"]["tune"] + stats["splits"]["test"] == stats["queries kept"]
    assert stats["corpus"]["articles"] == 4318  # 4,317 keys in the five files; kks "106l" also holds art. 106ł (issue #12)


def test_missing_data_file_says_where_to_get_it(tmp_path):
    result = invoke("stats", "pl-codes", "--data-dir", tmp_path)
    assert result.exit_code == 2 and "obtain it from" in result.output and "kc.json" in result.output


@pytest.mark.slow
def test_sweep_reports_a_grid_and_best_pair(data_dir):
    result = invoke("sweep", "pl-exams", "--data-dir", data_dir, "--k1", "0.9,1.2", "--b", "0.5,0.75")
    assert result.exit_code == 0, result.output
    assert "best on pl-exams/tune: k1=" in result.output and "(762 queries)" in result.output


def test_sweep_refuses_the_test_split_and_a_parameter_both_fixed_and_swept():
    """sweep --split test ran without a word though its help says never on test; -p k1=2 beside the
    k1 grid was overridden by each k1 in silence. Both are refused with one line (exit 2) before the
    data is loaded; --allow-test sweeps the test split all the same, with a warning."""
    cases = [
        (("--split", "test"), "--split test: tune on a dev or tuning split (e.g. --split tune)"),
        (("-p", "k1=2"), "parameter k1 is both fixed (k1=2) and swept (k1 0.6, 0.9, 1.2, 1.5, 1.8, 2.1)"),
        (("--b", "0.5", "-p", "b=0.7"), "parameter b is both fixed (b=0.7) and swept (b 0.5)"),
        (("--allow-test", "--split", "test", "--k1", "1.2", "-p", "k1=2"), "parameter k1 is both fixed"),
    ]
    for args, message in cases:
        result = invoke("sweep", "demo", *args)
        assert result.exit_code == 2 and message in " ".join(result.output.split()), (args, result.output)
        assert "Traceback" not in result.output
    result = invoke("sweep", "demo", "--split", "test", "--allow-test", "--k1", "1.2", "--b", "0.75", "-p", "mode=stem")
    assert result.exit_code == 0, result.output
    assert "warning: sweeping the test split" in result.output and "best on demo/test: k1=1.2 b=0.75" in result.output
    # --split all holds the test questions too: refused as test is, swept with --allow-test and a warning
    result = invoke("sweep", "demo", "--split", "all", "--k1", "1.2", "--b", "0.75")
    assert result.exit_code == 2, result.output
    assert "--split all: 71 of its 119 queries are the test split's" in " ".join(result.output.split())
    result = invoke("sweep", "demo", "--split", "all", "--allow-test", "--k1", "1.2", "--b", "0.75")
    assert result.exit_code == 0, result.output
    assert "warning: sweeping 71 queries of the test split" in " ".join(result.output.split())
    assert "best on demo: k1=1.2 b=0.75" in result.output and "(119 queries)" in result.output
    result = invoke("sweep", "demo", "--k1", "1.2", "--b", "0.75")  # the default split, tune: no warning
    assert result.exit_code == 0 and "best on demo/tune" in result.output and "warning" not in result.output


def test_graph_build_and_neighbours(data_dir, tmp_path):
    out = tmp_path / "g"
    result = invoke("graph", "build", "el-statutes", "--data-dir", data_dir, "-o", out, "--export", "jsonl,graphml")
    assert result.exit_code == 0, result.output
    stats = json.loads(result.output[: result.output.rindex("}") + 1])
    assert stats["nodes_by_level"]["act"] == 9 and stats["edges"]["contains"] == stats["nodes"] - 9
    assert stats["edges"]["cites"] > 0
    assert (out / "graph.jsonl").is_file() and (out / "graph.graphml").is_file()
    result = invoke("graph", "neighbours", out, "PK::1", "--kind", "parent")
    assert result.exit_code == 0 and result.output.split() == ["PK"]
    result = invoke("graph", "neighbours", out, "PK::99999")
    assert result.exit_code == 2 and "no node" in result.output


def test_cite_prints_json_lines(tmp_path):
    text = tmp_path / "t.txt"
    text.write_text("Nach § 823 Abs. 1 BGB und art. 415 k.c.", encoding="utf-8")
    result = invoke("cite", text, "--jurisdiction", "de")
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert result.exit_code == 0 and rows[0]["id"] == "BGB::823" and rows[0]["path"] == {"abs": "1"}
    assert rows[0]["span"]["text"] == "§ 823 Abs. 1 BGB"
    result = invoke("cite", text, "--lang", "pl")
    assert json.loads(result.output.splitlines()[0])["id"] == "kc::415"
    result = invoke("cite", text, "-j", "xx")
    assert result.exit_code == 2 and "unknown jurisdiction 'xx'" in result.output
    assert all(code in result.output.split("valid:")[1] for code in ("pl", "de", "el"))


def test_run_with_an_llm_system_against_a_loopback_server(tmp_path, monkeypatch):
    """`lexir run` drives an LLM system through the real client and reports its accounting;
    a second identical run is answered from the cache (the server sees no new request)."""
    from lexir.llm.testing import ScriptedChatServer, schema_answer

    monkeypatch.setenv("LEXIR_CACHE", str(tmp_path / "cache"))
    with ScriptedChatServer(default=schema_answer) as server:
        args = ["run", "demo", "--system", "reform-bm25", "-p", f"base_url={server.url}", "-p", "model=scripted",
                "--output", tmp_path / "r.trec"]
        result = invoke(*args)
        assert result.exit_code == 0, result.output
        assert server.count == 119 and "LLM:" in result.output
        assert len(read_run(tmp_path / "r.trec")) == 119
        assert invoke(*args).exit_code == 0 and server.count == 119


# -- bad input: one line, exit 2 ----------------------------------------------------------------


def test_a_path_that_cannot_be_read_or_written_is_one_line_naming_it(tmp_path, monkeypatch):
    """An operating-system error (a folder where a file is read, a cache that is a file) is
    one line naming the path and the reason, exit 2, not a traceback."""
    folder = tmp_path / "DIR"
    folder.mkdir()
    qrels = tmp_path / "q.qrels"
    qrels.write_text("q1 0 kk::1 1\n", encoding="utf-8")
    run = tmp_path / "r.trec"
    run.write_text("q1 Q0 kk::1 1 1.0 x\n", encoding="utf-8")
    for args in (("cite", folder), ("eval", folder, "--qrels", qrels), ("eval", run, "--qrels", folder)):
        result = invoke(*args)
        assert result.exit_code == 2 and f"error: {folder}: Is a directory" in result.output, (args, result.output)
        assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1
    cache = tmp_path / "afile"
    cache.write_text("", encoding="utf-8")
    monkeypatch.setenv("LEXIR_CACHE", str(cache))
    result = invoke("search", "demo", "zabójstwo", "--system", "bm25")
    assert result.exit_code == 2, result.output
    assert f"error: {cache}/indexes" in result.output and "Not a directory" in result.output
    assert "set LEXIR_CACHE to a folder you can write" in result.output


def test_a_bad_output_path_is_refused_before_anything_is_loaded(tmp_path, monkeypatch):
    """run, fuse, eval --per-query, index, graph build: an output that is a folder (or a file where
    a folder goes, or under a file, or where nothing can be written) is refused before the data is
    loaded, so no work is thrown away, and no side file is left."""
    import lexir.datasets

    def loaded(*args, **kwargs):
        raise AssertionError("the data was loaded before the output path was checked")

    monkeypatch.setattr(lexir.datasets, "open", loaded)
    monkeypatch.setattr(lexir.datasets, "stream", loaded)
    folder, file = tmp_path / "DIR", tmp_path / "afile"
    folder.mkdir()
    file.write_text("", encoding="utf-8")
    runs = [tmp_path / "a.trec", tmp_path / "b.trec"]
    for path in runs:
        path.write_text("q1 Q0 kk::1 1 1.0 x\n", encoding="utf-8")
    cases = [
        (("run", "demo", "--system", "bm25", "-o", folder), f"--output {folder}: is a folder; give a file name"),
        (("run", "demo", "--system", "bm25", "-o", file / "x.trec"), f"--output {file}/x.trec: {file} is a file"),
        (("run", "demo", "--system", "bm25", "-o", tmp_path / "r.trec", "--qrels-out", folder), "--qrels-out"),
        (("fuse", *runs, "-o", folder), f"--output {folder}: is a folder"),
        (("eval", runs[0], "--dataset", "demo", "--per-query", folder), f"--per-query {folder}: is a folder"),
        (("index", "demo", "-o", file), f"--output {file}: is a file; give a folder"),
        (("graph", "build", "demo", "-o", file), f"--output {file}: is a file; give a folder"),
        (("qrels", "export", "--db", tmp_path / "j.sqlite", "-o", folder), f"--output {folder}: is a folder"),
    ]
    if Path("/sys/kernel").is_dir():  # sysfs: no file can be made there, not even by root
        cases.append((("run", "demo", "--system", "bm25", "-o", "/sys/lexir-x.trec"),
                      "--output /sys/lexir-x.trec: cannot write in /sys ("))
    for args, message in cases:
        result = invoke(*args)
        assert result.exit_code == 2 and message in result.output, (args, result.output)
        assert "Traceback" not in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["DIR", "a.trec", "afile", "b.trec"]
    assert not any(folder.iterdir())


def test_a_run_to_a_new_folder_is_still_written(tmp_path):
    out = tmp_path / "new" / "sub" / "r.trec"
    result = invoke("run", "demo", "--system", "bm25", "--split", "test", "-o", out)
    assert result.exit_code == 0, result.output
    assert len(read_run(out)) == 71 and sorted(p.name for p in out.parent.iterdir()) == ["r.trec"]


def test_serve_refuses_a_bad_system_spec_before_loading_anything(monkeypatch):
    """`lexir serve --system` is checked as --variant is, parts of a fusion too, before a corpus is
    loaded (it was a traceback after the load, exit 1); a good spec gets through to the load."""
    from lexir.cli import serve
    from lexir.cli.main import CLIError

    def load(*args, **kwargs):
        raise CLIError("loading the corpora")

    monkeypatch.setattr(serve, "_state", load)
    for spec, message in (("nope", "--system 'nope': unknown system 'nope'; valid: "),
                          ("bm25(k1=abc)", "--system 'bm25(k1=abc)': parameter k1='abc': expected float"),
                          ("bm25(k1=99)", "parameter k1=99.0 is out of range; valid: 0 to 10"),
                          ("rrf(systems=bm25+nope)", "--system 'rrf(systems=bm25+nope)': unknown system 'nope'")):
        result = invoke("serve", "demo", "--system", "bm25", "--system", spec)
        assert result.exit_code == 2 and message in result.output, (spec, result.output)
        assert "loading" not in result.output and "Traceback" not in result.output
        result = invoke("mcp", "demo", "--system", spec)
        assert result.exit_code == 2 and message in result.output, (spec, result.output)
    result = invoke("serve", "demo", "--no-request-log", "--system", "bm25", "--system",
                    "rrf(systems=bm25+bm25(mode=stem))")
    assert result.exit_code == 2 and "error: loading the corpora" in result.output, result.output


def test_serve_refuses_a_port_out_of_range_and_no_requests_in_flight(monkeypatch):
    from lexir.cli import serve

    monkeypatch.setattr(serve, "_state", lambda *a, **k: pytest.fail("loaded with a bad option"))
    for args, option in ((("--port", "99999"), "--port"), (("--port", "-1"), "--port"),
                         (("--max-in-flight", "0"), "--max-in-flight")):
        result = invoke("serve", "demo", "--system", "bm25", *args)
        assert result.exit_code == 2 and f"Invalid value for '{option}'" in result.output, (args, result.output)
    result = invoke("mcp", "demo", "--system", "bm25", "--port", "65536")
    assert result.exit_code == 2 and "Invalid value for '--port'" in result.output, result.output


def _two_runs(tmp_path):
    runs = []
    for name, docs in (("a", ["kk::1", "kk::2", "kk::3"]), ("b", ["kk::3", "kk::1", "kk::4"])):
        path = tmp_path / f"{name}.trec"
        path.write_text("".join(f"q{q} Q0 {d} {r} {10 - r}.0 {name}\n" for q in (1, 2) for r, d in enumerate(docs, 1)),
                        encoding="utf-8")
        runs.append(path)
    return runs


def test_fuse_checks_each_parameter_and_names_it(tmp_path):
    """Each -p is the method's, typed and in its range as the fusion systems declare (lexir systems
    rrf); a negative constant divided by zero, a NaN weight wrote NaN scores, a parameter of another
    method was ignored, a word for a number gave Python's message without the parameter's name."""
    runs, out = _two_runs(tmp_path), tmp_path / "f.trec"
    cases = [
        ((), ("-p", "k=-1"), "parameter k=-1.0 is out of range; valid: 0 to 1000"),
        ((), ("-p", "k=nan"), "parameter k=nan: expected a finite float"),
        ((), ("-p", "k0=-1"), "rrf fusion has no parameter 'k0'; valid: k, depth (k0 is wrrf's: --method wrrf)"),
        ((), ("-p", "depth=abc"), "parameter depth='abc': expected int"),
        ((), ("-p", "depth=0"), "parameter depth=0 is out of range; valid: 1 to 10000"),
        (("--method", "wrrf"), ("-p", "k0=abc"), "parameter k0='abc': expected float"),
        (("--method", "wrrf"), ("-p", "weights=-1,nan"), "weights '-1,nan': each weight must be a finite number"),
        (("--method", "wrrf"), ("-p", "weights=1,inf"), "weights '1,inf': each weight must be a finite number"),
        (("--method", "combsum"), ("-p", "norm=max"), "parameter norm='max' is not allowed; valid: minmax"),
        (("--method", "borda"), (), "--method 'borda': valid: rrf, wrrf, combsum"),
    ]
    for method, param, message in cases:
        result = invoke("fuse", *runs, *method, *param, "-o", out)
        assert result.exit_code == 2 and message in result.output, (method, param, result.output)
        assert "Traceback" not in result.output and not out.exists()
    result = invoke("fuse", *runs, "--method", "wrrf", "-p", "weights=1,0", "-p", "k0=0", "-o", out)
    assert result.exit_code == 0, result.output
    # weight 0: run b's documents count for nothing (kk::4: 0); k0=0: scores 1/rank
    assert read_run(out) == {q: {"kk::1": 1.0, "kk::2": 0.5, "kk::3": 0.333333, "kk::4": 0.0} for q in ("q1", "q2")}


def test_fuse_refuses_a_fused_systems_parameter_without_pointing_to_another_method(tmp_path):
    """systems (and the question-shape rules long_words, long_weights, first_person) belong to the
    fusion systems, never to fusion of run files: -p systems=x pointed to --method wrrf, which
    pointed back to rrf, in a circle. Each method now says file fusion takes no such parameter."""
    runs, out = _two_runs(tmp_path), tmp_path / "f.trec"
    for method in ("rrf", "wrrf", "combsum"):
        for param, why in (("systems=x", "the run files are the systems"),
                           ("long_words=3", "run files do not hold"), ("long_weights=1,2", "run files do not hold"),
                           ("first_person=true", "run files do not hold")):
            result = invoke("fuse", *runs, "--method", method, "-p", param, "-o", out)
            said = " ".join(result.output.split())
            key = param.partition("=")[0]
            assert result.exit_code == 2 and f"fusion of runs takes no parameter '{key}': " in said, said
            assert why in said and f"valid for {method}: " in said, said
            assert "--method" not in said and not out.exists(), said
    # a parameter another method does take still points to it
    result = invoke("fuse", *runs, "-p", "k0=3", "-o", out)
    assert result.exit_code == 2 and "(k0 is wrrf's: --method wrrf)" in result.output


def test_fusion_below_the_cli_refuses_what_would_divide_by_zero_or_make_nan():
    import lexir

    runs = [{"q1": {"kk::1": 2.0, "kk::2": 1.0}}, {"q1": {"kk::2": 2.0}}]
    with pytest.raises(ValueError, match=r"parameter k=-1.0 is out of range"):
        lexir.fuse(runs, "rrf", k=-1)
    with pytest.raises(ValueError, match=r"each weight must be a finite number, 0 or more"):
        lexir.fuse(runs, "wrrf", weights=[1.0, float("nan")])
    assert lexir.fuse(runs, "rrf", k=0) == {"q1": {"kk::2": 1.5, "kk::1": 1.0}}


def test_k_below_one_is_refused_naming_the_option(tmp_path):
    """-k 0 said "no results (the query has no indexed terms)" and wrote empty runs; fuse -k -1
    dropped each query's last hit."""
    runs = _two_runs(tmp_path)
    for k in ("0", "-1"):
        for args in (("search", "demo", "zabójstwo", "--system", "bm25"),
                     ("run", "demo", "--system", "bm25", "-o", tmp_path / "r.trec"),
                     ("fuse", *runs, "-o", tmp_path / "f.trec")):
            result = invoke(*args, "-k", k)
            assert result.exit_code == 2 and "Invalid value for '-k'" in result.output, (args, k, result.output)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.trec", "b.trec"]
    result = invoke("fuse", *runs, "-k", "1", "-o", tmp_path / "f.trec")
    best = round(1 / 61 + 1 / 62, 6)  # kk::1: first in a, second in b
    assert result.exit_code == 0 and read_run(tmp_path / "f.trec") == {"q1": {"kk::1": best}, "q2": {"kk::1": best}}


def test_eval_refuses_an_unknown_format_and_an_empty_measure_list(tmp_path):
    """eval --format xml printed a table; --measures '' used the defaults without a word."""
    runs = _two_runs(tmp_path)
    qrels = tmp_path / "q.qrels"
    qrels.write_text("q1 0 kk::3 1\nq2 0 kk::4 1\n", encoding="utf-8")
    for args, message in ((("--format", "xml"), "--format 'xml': valid: table, markdown, latex, json"),
                          (("--measures", ""), "--measures is empty; give one or more separated by commas"),
                          (("--measures", " , "), "--measures is empty"),
                          (("--measures", "MRR,,Hit@1"), "--measures 'MRR,,Hit@1': an empty name between commas"),
                          (("--measures", "MRR,Hit@0"), "--measures 'MRR,Hit@0': cutoff of Hit must be a positive integer")):
        result = invoke("eval", *runs, "--qrels", qrels, *args)
        assert result.exit_code == 2 and message in result.output, (args, result.output)
    result = invoke("eval", *runs, "--qrels", qrels, "--measures", "MRR, Hit@1", "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["measures"] == ["MRR", "Hit@1"]


def test_eval_writes_markdown_and_latex_exactly_and_names_what_it_cannot_score(tmp_path):
    """An audit: the markdown table's rows were wrapped at 200 columns (every row with the default
    measures), a run named :smile: printed an emoji, two run files named run.trec became one system,
    a sweep's bm25_k1=0.6.trec was read as NAME=PATH, judged queries missing from a run were scored 0
    without a word, and --split with --qrels was ignored."""
    from lexir.evaluation import compare, to_latex, to_markdown
    from lexir.io import read_qrels

    a, b = _two_runs(tmp_path)
    qrels = tmp_path / "q.qrels"
    qrels.write_text("q1 0 kk::3 1\nq2 0 kk::4 1\nq3 0 kk::9 1\n", encoding="utf-8")
    smile = tmp_path / ":smile:.trec"
    smile.write_text(b.read_text(encoding="utf-8"), encoding="utf-8")
    gold = read_qrels(qrels)
    from lexir.io import read_run
    comparison = compare({"a": read_run(a), ":smile:": read_run(smile)}, gold, "a")
    for fmt, render in (("markdown", to_markdown), ("latex", to_latex)):
        result = runner.invoke(app, ["eval", str(a), str(smile), "--qrels", str(qrels), "--format", fmt])
        assert result.exit_code == 0, result.output
        assert result.stdout == render(comparison) + "\n"  # the library's string, unwrapped
        assert max(map(len, result.stdout.splitlines())) > 200
    assert "2 of 3 judged queries" not in result.stderr and "1 of 3 judged queries have no results" in result.stderr
    assert "'q3'" in result.stderr
    # two files of one name: refused, naming both; NAME=PATH tells them apart
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    for folder in ("x", "y"):
        (tmp_path / folder / "run.trec").write_text(a.read_text(encoding="utf-8"), encoding="utf-8")
    result = invoke("eval", tmp_path / "x" / "run.trec", tmp_path / "y" / "run.trec", "--qrels", qrels)
    assert result.exit_code == 2 and "two runs named 'run'" in result.output and "NAME=PATH" in result.output
    result = invoke("eval", f"x={tmp_path / 'x' / 'run.trec'}", f"y={tmp_path / 'y' / 'run.trec'}", "--qrels", qrels,
                    "--format", "json")
    assert result.exit_code == 0 and set(json.loads(result.stdout)["systems"]) == {"x", "y"}
    # a file whose name has '=' is that file
    swept = tmp_path / "bm25_k1=0.6.trec"
    swept.write_text(a.read_text(encoding="utf-8"), encoding="utf-8")
    result = invoke("eval", swept, "--qrels", qrels, "--format", "json")
    assert result.exit_code == 0, result.output
    assert list(json.loads(result.stdout)["systems"]) == ["bm25_k1=0.6"]
    result = invoke("eval", a, "--qrels", qrels, "--split", "dev")
    assert result.exit_code == 2 and "--split chooses the queries of a --dataset" in result.output


def test_a_run_is_tagged_with_its_parameters_and_qrels_out_without_gold_is_refused(tmp_path):
    result = invoke("run", "demo", "--system", "bm25", "-p", "k1=0.6", "-p", "mode=stem", "--split", "test",
                    "-k", "2", "--output", tmp_path / "r.trec")
    assert result.exit_code == 0, result.output
    tags = {line.split()[5] for line in (tmp_path / "r.trec").read_text(encoding="utf-8").splitlines()}
    assert tags == {"bm25(k1=0.6,mode=stem)"}
    topics = tmp_path / "t.tsv"
    topics.write_text("t1\tKto zabija człowieka\n", encoding="utf-8")
    result = invoke("run", "demo", "--system", "bm25", "--queries", topics, "--queries-format", "trec",
                    "--output", tmp_path / "t.trec", "--qrels-out", tmp_path / "t.qrels")
    assert result.exit_code == 2 and "carry no gold" in result.output, result.output
    assert not (tmp_path / "t.trec").exists() and not (tmp_path / "t.qrels").exists()


def test_qrels_and_runs_with_a_byte_order_mark_keep_their_first_query(tmp_path):
    """A BOM made the first qrels id '\\ufeffq1': its query scored 0, the only sign a warning."""
    from lexir.io import read_qrels, read_run

    qrels, run = tmp_path / "bom.qrels", tmp_path / "bom.trec"
    qrels.write_bytes("\ufeffq1 0 d1 2\nq2 0 d5 1\n".encode())
    run.write_bytes("\ufeffq1 Q0 d1 1 2.0 t\nq2 Q0 d2 1 2.0 t\n".encode())
    assert read_qrels(qrels) == {"q1": {"d1": 2}, "q2": {"d5": 1}} and set(read_run(run)) == {"q1", "q2"}
    result = invoke("eval", run, "--qrels", qrels, "--measures", "Hit@1", "--format", "json")
    assert result.exit_code == 0 and json.loads(result.stdout)["systems"]["bom"]["Hit@1"]["mean"] == 0.5


def test_a_beir_query_file_with_an_id_given_twice_is_refused_naming_the_line(tmp_path):
    """The second query of an id silently replaced the first."""
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"_id": "q1", "text": "kara"}\n{"_id": "q2", "text": "wina"}\n'
                       '{"_id": "q1", "text": "zabójstwo"}\n', encoding="utf-8")
    result = invoke("run", "demo", "--system", "bm25", "--queries", queries, "--queries-format", "beir",
                    "--output", tmp_path / "r.trec")
    assert result.exit_code == 2, result.output
    assert "q.jsonl:3 (field '_id'): query id 'q1' given twice (first on line 1)" in result.output
    assert not (tmp_path / "r.trec").exists()


def test_cost_refuses_an_unknown_format_before_running_anything(monkeypatch):
    """cost --format xml was refused only after every system had answered every query."""
    import lexir.llm.commands

    monkeypatch.setattr(lexir.llm.commands, "cost_command", lambda *a, **k: pytest.fail("ran before the check"))
    result = invoke("cost", "demo", "--system", "bm25", "--format", "xml")
    assert result.exit_code == 2 and "--format 'xml': valid: rich, markdown" in result.output, result.output


def test_index_check_on_a_folder_that_is_no_index_says_so(tmp_path):
    """A folder with nothing that marks an index is "not a saved index", exit 2, as a missing folder
    is (it was "damaged: 1 problem(s); rebuild it", exit 1); an index whose manifest is gone is
    still damaged."""
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "readme.txt").write_text("not an index", encoding="utf-8")
    for folder in (tmp_path / "empty", tmp_path / "notes", tmp_path / "missing"):
        result = invoke("index", "check", folder)
        assert result.exit_code == 2 and f"error: {folder} is not a saved index" in result.output, result.output
        assert "damaged" not in result.output
    assert invoke("index", "demo", "-o", tmp_path / "idx").exit_code == 0
    result = invoke("index", "check", tmp_path / "idx")
    assert result.exit_code == 0 and "sound; loads as BM25Retriever" in result.output, result.output
    (tmp_path / "idx" / "lexir-current.json").unlink()
    result = invoke("index", "check", tmp_path / "idx")
    assert result.exit_code == 1 and "damaged" in result.output, result.output
