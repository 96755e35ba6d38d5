"""The front door: corpora are never changed in place, and the index cache key covers
everything that changes an index (the bug: a cached index came back with the analyzer of
another language)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lexir.datasets import open as open_data
from lexir.io.generations import current
from lexir.retrieval.build import build_retriever
from lexir.types import Corpus, Document


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LEXIR_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _folder_corpus(tmp_path):
    rows = [
        {"_id": "x::1", "text": "Der Käufer ist verpflichtet, dem Verkäufer den vereinbarten Kaufpreis zu zahlen."},
        {"_id": "x::2", "text": "Ο αγοραστής υποχρεούται να καταβάλει στον πωλητή το συμφωνημένο τίμημα."},
        {"_id": "x::3", "text": "The buyer shall pay the seller the agreed price and take delivery of the goods."},
    ]
    folder = tmp_path / "holdout"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    return folder


def test_language_change_gets_its_own_index(tmp_path, cache):
    folder = _folder_corpus(tmp_path)
    english = open_data(folder, language="en")
    first = build_retriever(english, "bm25", {"mode": "stem"})
    assert first.analyzer.config.language == "en"
    greek = open_data(folder, language="el")
    assert english.language == "en"  # loading it again as Greek changed nothing of the first
    second = build_retriever(greek, "bm25", {"mode": "stem"})
    assert second.analyzer.config.language == "el"
    # the cached English index is still there and still English
    again = build_retriever(english, "bm25", {"mode": "stem"})
    assert again.analyzer.config.language == "en"
    assert len(list((cache / "indexes").iterdir())) == 2


def test_changed_analysis_code_gets_its_own_index(tmp_path, cache, monkeypatch):
    """An index cached before the analysis code or its word lists changed is not served after:
    the key holds a digest of that code (as if a stopword list had been edited)."""
    from lexir.io.paths import code_digest
    from lexir.retrieval import build

    corpus = open_data(_folder_corpus(tmp_path), language="en")
    build_retriever(corpus, "bm25", {"mode": "stem"})
    build_retriever(corpus, "bm25", {"mode": "stem"})  # read back: still one entry
    assert len(list((cache / "indexes").iterdir())) == 1
    analysis = Path(build.__file__).resolve().parents[1] / "analysis"
    # (unwrapped: the per-process cached value would differ if a file were edited during the run)
    assert build.index_code_digest.__wrapped__() == code_digest(analysis, analysis.parent / "retrieval",
                                                                analysis.parent / "structure",
                                                                analysis.parent / "jurisdictions")
    monkeypatch.setattr(build, "index_code_digest", lambda: "f" * 64)
    build_retriever(corpus, "bm25", {"mode": "stem"})
    assert len(list((cache / "indexes").iterdir())) == 2


def test_with_language_is_a_copy():
    corpus = Corpus("c", [Document("a::1", "text")], language="pl")
    other = corpus.with_language("de")
    assert (corpus.language, other.language) == ("pl", "de")
    assert other.fingerprint == corpus.fingerprint
    with pytest.raises(AttributeError):
        corpus.language = "en"  # type: ignore[misc]


def test_registry_hands_out_independent_objects():
    first = open_data("demo")
    second = open_data("demo")
    assert first is not second and first.corpus is not second.corpus
    first.queries.qrels.clear()
    assert second.queries.qrels, "clearing one caller's judgements reached another caller"
    renamed = open_data("demo", language="de", want="corpus")
    assert renamed.language == "de" and open_data("demo").corpus.language == "pl"


def test_damaged_cache_entry_is_rebuilt(tmp_path, cache):
    corpus = Corpus("c", [Document("a::1", "kupujący płaci cenę"), Document("a::2", "sprzedawca wydaje rzecz")],
                    language="pl")
    build_retriever(corpus, "bm25")
    (folder,) = (cache / "indexes").iterdir()
    (current(folder) / "lexir-cache.json").write_text("{not json", encoding="utf-8")
    again = build_retriever(corpus, "bm25")
    assert again.search("cenę", 1)[0][0] == "a::1"
    assert json.loads((current(folder) / "lexir-cache.json").read_text())["format"] >= 2


# -- one import --------------------------------------------------------------------------------


def test_one_import_gives_the_verbs(tmp_path, cache):
    import lexir
    from lexir.evaluation import Measure

    bench = lexir.load("demo")
    bm25 = lexir.retrieve(lexir.build(bench, "bm25"), bench.queries)
    stem = lexir.retrieve(lexir.build(bench, "bm25", mode="stem"), bench.queries)
    assert bm25 != stem and set(bm25) == {q.id for q in bench.queries.queries}
    fused = lexir.fuse([bm25, stem], "rrf", k=60)
    ndcg = Measure.parse("nDCG@10")
    scores = {n: lexir.evaluate(r, bench, [ndcg]).mean(ndcg) for n, r in
              {"bm25": bm25, "stem": stem, "fused": fused}.items()}
    table = lexir.compare({"bm25": bm25, "stem": stem, "fused": fused}, bench.queries)
    assert table.baseline == "bm25" and table.estimates["fused"][ndcg].mean == pytest.approx(scores["fused"])
    oracle = lexir.retrieve(lexir.build(bench, "oracle"), bench.queries)  # the gold comes with the benchmark
    assert lexir.evaluate(oracle, bench, [ndcg]).mean(ndcg) == 1.0
    (found,) = lexir.find_citations("zgodnie z art. 148 § 1 k.k.", "pl")
    assert found.id == "kk::148"
    assert lexir.find_citations("nach § 823 Abs. 1 BGB", "de")[0].id == "BGB::823"


def test_the_verbs_say_what_is_wrong_with_their_arguments(cache):
    """Mistakes a newcomer makes with the Python API (an audit): each a ValueError or TypeError
    naming the argument and what it takes, never an AttributeError from deep inside, and nothing
    silently dropped (a repeated query id, a parameter of another fusion method)."""
    import lexir
    from lexir.types import Query

    bench = lexir.load("demo")
    bm25 = lexir.build("demo", "bm25")  # a dataset's name is loaded, as lexir.load does
    assert bm25.search("zabójstwo", 3) == lexir.build(bench, "bm25").search("zabójstwo", 3)
    test = bench.queries.split("test")
    run = lexir.retrieve(bm25, test, k=10)
    refused = [
        (lambda: bm25.search("zabójstwo", k="5"), ValueError, "k: the number of results, a whole number of at least 1"),
        (lambda: bm25.search("zabójstwo", k=0), ValueError, "got 0"),
        (lambda: bm25.search(None), TypeError, "text: a question as a string; got NoneType"),
        (lambda: lexir.retrieve(bm25, "zabójstwo"), TypeError, "one question: retriever.search"),
        (lambda: lexir.retrieve(bm25, [Query("q", "zabójstwo"), Query("q", "kradzież")]), ValueError,
         "query id 'q' is given twice"),
        (lambda: lexir.retrieve(bm25, [("q", "zabójstwo")]), TypeError, r"queries\[0\]: a Query"),
        (lambda: lexir.evaluate(bm25, test), TypeError, "run: a run"),
        (lambda: lexir.compare([run, run], test), TypeError, "runs: {name: run}"),
        (lambda: lexir.fuse({"a": run, "b": run}), TypeError, "runs: a list of runs"),
        (lambda: lexir.fuse([run, run], "rrf", weights="5,0"), ValueError,
         "rrf fusion has no parameter 'weights'.*weights is wrrf and combsum's"),
        (lambda: lexir.fuse([run, run], "wrrf", k=3), ValueError, "wrrf fusion has no parameter 'k'"),
        (lambda: lexir.build(bench, None), ValueError, "system: a name or a spec"),
    ]
    for call, kind, message in refused:
        with pytest.raises(kind, match=message):
            call()
    ndcg = lexir.evaluate(run, test, "nDCG@10")  # one measure as a string: that measure, not its letters
    assert [m.name for m in ndcg.measures] == ["nDCG"]
    assert lexir.fuse([run, run], "wrrf", weights=[1.0, 0.5])  # weights as numbers, from Python


# -- fusion of runs ----------------------------------------------------------------------------


def test_fuse_runs_by_hand_and_leaves_inputs_alone():
    from lexir.retrieval.fusion import fuse

    a = {"q1": {"x": 3.0, "y": 2.0}, "q2": {"z": 1.0}}
    b = {"q1": {"y": 5.0, "w": 4.0}}
    before = json.dumps([a, b], sort_keys=True)
    fused = fuse([a, b], "wrrf", weights="2,1", k0=10)
    assert fused["q1"]["y"] == pytest.approx(2 / 12 + 1 / 11)
    assert fused["q1"]["x"] == pytest.approx(2 / 11) and fused["q1"]["w"] == pytest.approx(1 / 12)
    assert list(fused["q1"]) == ["y", "x", "w"] and set(fused) == {"q1", "q2"}
    assert json.dumps([a, b], sort_keys=True) == before
    with pytest.raises(ValueError, match="2 weights for 3"):
        fuse([a, b, a], "wrrf", weights="1,1")
    with pytest.raises(ValueError, match="valid: rrf, wrrf, combsum"):
        fuse([a, b], "borda")


def test_fused_retriever_is_fuse_over_its_parts(cache):
    import lexir

    bench = lexir.load("demo")
    parts = [lexir.retrieve(lexir.build(bench, s), bench.queries) for s in ("bm25", "bm25(mode=stem)")]
    system = lexir.retrieve(lexir.build(bench, "wrrf", systems="bm25+bm25(mode=stem)", weights="1,0.7", k0=20),
                            bench.queries)
    by_hand = lexir.fuse(parts, "wrrf", weights="1,0.7", k0=20)
    assert system == {q: dict(list(r.items())[:100]) for q, r in by_hand.items()}


def test_cli_fuse_and_trec_errors(tmp_path, cache):
    from typer.testing import CliRunner

    from lexir.cli.main import app
    from lexir.io import FormatError, read_run

    def invoke(*args):
        return CliRunner().invoke(app, [str(a) for a in args])

    for name, params in (("a", []), ("b", ["-p", "mode=stem"])):
        assert invoke("run", "demo", "--system", "bm25", *params, "--output", tmp_path / f"{name}.trec").exit_code == 0
    result = invoke("fuse", tmp_path / "a.trec", tmp_path / "b.trec", "--method", "wrrf", "-p", "weights=1,0.7",
                    "-p", "k0=20", "--output", tmp_path / "f.trec")
    assert result.exit_code == 0, result.output
    fused = read_run(tmp_path / "f.trec")
    assert len(fused) == 119 and all(0 < len(r) <= 100 for r in fused.values())
    assert invoke("fuse", tmp_path / "a.trec", tmp_path / "b.trec", "-p", "alpha=1", "--output",
                  tmp_path / "g.trec").exit_code == 2
    lines = (tmp_path / "a.trec").read_text().splitlines()
    (tmp_path / "dup.trec").write_text("\n".join([lines[0], lines[1], lines[0]]) + "\n")
    with pytest.raises(FormatError, match=r"dup.trec:3: document .* listed twice .* \(first on line 1\)"):
        read_run(tmp_path / "dup.trec")
    result = invoke("fuse", tmp_path / "a.trec", tmp_path / "dup.trec", "--output", tmp_path / "h.trec")
    assert result.exit_code == 2 and "dup.trec:3" in result.output and not (tmp_path / "h.trec").exists()


# -- typed parameters --------------------------------------------------------------------------


def test_typed_parameters_refuse_with_the_valid_values():
    from lexir.retrieval.base import get_system, system_names

    bm25 = get_system("bm25")
    assert bm25.resolve({"k1": "0.9", "stopwords": "no"})["k1"] == 0.9
    with pytest.raises(ValueError, match="mode=.soundex. is not allowed; valid: auto, raw, stem, lemma"):
        bm25.resolve({"mode": "soundex"})
    with pytest.raises(ValueError, match="expected float"):
        bm25.resolve({"k1": "high"})
    assert get_system("wrrf").spec_params() == {"systems": "specs"}
    assert get_system("cascade").spec_params() == {"bm25": "spec"}
    # every parameter of every system says what it is
    undocumented = [(s, k) for s in system_names() for k, p in get_system(s).params.items() if not p.help]
    assert not undocumented, undocumented


def test_feedback_and_cascade_take_a_bm25_spec(cache):
    import lexir

    bench = lexir.load("demo")
    prf = lexir.build(bench, "bm25-prf", bm25="bm25(k1=0.9;mode=stem)")
    assert prf.bm25.k1 == 0.9 and prf.bm25.analyzer.config.mode == "stem"
    with pytest.raises(ValueError, match="needs a bm25 system"):
        lexir.build(bench, "cascade", bm25="random")


# -- layers ------------------------------------------------------------------------------------


# Every package (or top-level module) of lexir and its layer, bottom first. A module may import its
# own package and the layers below its own, nothing at or above (``lexir`` itself: the package's
# __init__, the top).
LAYERS = [
    {"_version", "kernels"},  # kernels: numba compilation, for every layer
    {"arrays"},  # saved arrays read back, checked (every index's .npy files)
    {"ids"},  # DocIds: document ids kept compactly (an index's, a stream's)
    {"types"},
    {"jurisdiction"},  # the record and registry of legal orders (filled from lexir.jurisdictions)
    {"io"},
    {"analysis", "citations", "evaluation", "encoders", "dataset_stats"},
    {"structure"},  # structure/graph.py finds citations
    {"datasets"},
    {"jurisdictions"},  # one folder per legal order: parsers, finders, datasets (registered above)
    {"retrieval"},
    {"llm", "learning", "tuning"},
    {"systems"},
    {"api", "experiment", "service", "demo"},
    {"distributed", "integrations"},
    {"ray_routing"},  # how Ray Serve's callers pick a replica (imports ray.serve)
    {"ray_serve"},  # lexir serve on Ray Serve: the service over distributed's runtime
    {"cli"},
    {"lexir"},
]


def _lexir_module(name, root):
    """``name``'s lexir package (its first part below ``lexir``; "lexir" for the package itself),
    or None where ``name`` is no lexir module (a file name such as ``lexir.json``, a docstring)."""
    import re

    name = name.partition(":")[0]  # module:Class, as a cached index names its class
    if not re.fullmatch(r"lexir(\.[A-Za-z_]\w*)+", name):
        return None
    parts = name.split(".")[1:]
    for n in range(len(parts), 0, -1):  # lexir.a.b.Name: the longest prefix that is a module
        path = root.joinpath(*parts[:n])
        if path.with_suffix(".py").is_file() or (path / "__init__.py").is_file():
            return parts[0]
    return None


def _imported(tree, root):
    """The lexir packages a module's syntax tree names: import statements (also inside functions),
    ``from lexir import x``, and string constants naming a lexir module (what ``importlib.import_module``,
    ``__import__`` or a list of modules to import is given)."""
    import ast

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: inside its own package
                names = []
            elif node.module == "lexir":  # a module of lexir, else a name of lexir/__init__
                yield from (_lexir_module(f"lexir.{a.name}", root) or "lexir" for a in node.names)
                names = []
            else:
                names = [node.module or ""]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = [node.value]
        else:
            names = []
        yield from (_lexir_module(name, root) for name in names)


def _upward_edges(root):
    import ast

    layer = {package: i for i, packages in enumerate(LAYERS) for package in packages}
    found, unplaced = [], set()
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        own = "lexir" if relative.name == "__init__.py" and len(relative.parts) == 1 else \
            relative.parts[0].removesuffix(".py")
        if own not in layer:
            unplaced.add(own)
            continue
        for package in _imported(ast.parse(path.read_text(encoding="utf-8")), root):
            if package is None or package == own:
                continue
            if package not in layer:
                unplaced.add(package)
            elif layer[package] >= layer[own]:
                found.append((relative.as_posix(), package))
    return found, unplaced


def test_layers_point_down():
    """No module imports (by statement, importlib or a module name in a string) a package at or
    above its own layer, other than its own package: retrieval never names llm or learning; only
    lexir.systems, above them, completes the catalogue."""
    from pathlib import Path

    import lexir

    found, unplaced = _upward_edges(Path(lexir.__file__).parent)
    assert not unplaced, f"packages with no layer in LAYERS: {sorted(unplaced)}"
    assert not found, found


def test_layer_check_sees_imports_by_name(tmp_path):
    """The check counts a module named in a string (importlib) and an import inside a function, and
    not a docstring that mentions a module."""
    import ast
    from pathlib import Path

    import lexir

    root = Path(lexir.__file__).parent
    tree = ast.parse('"""see lexir.llm.systems."""\nimport importlib\n'
                     'def f():\n    importlib.import_module("lexir.llm.systems")\n'
                     '    from lexir.learning.systems import trained_spec\n'
                     'MODULES = ["lexir.retrieval.bm25", "lexir.json"]\n')
    assert sorted(p for p in _imported(tree, root) if p and p != "retrieval") == ["learning", "llm"]


def test_the_catalogue_holds_every_layers_systems():
    """get_system (what build_retriever looks a composite's parts up with) finds the systems that
    llm and learning register, although retrieval never names them."""
    import ast
    from pathlib import Path

    import lexir
    from lexir.retrieval.base import get_system, system_names

    root = Path(lexir.__file__).parent
    registered = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "register_system" and node.args \
                    and isinstance(node.args[0], ast.Constant):
                registered.add((path.relative_to(root).parts[0], node.args[0].value))
    assert {package for package, _ in registered} >= {"retrieval", "llm", "learning"}
    assert {name for _, name in registered} <= set(system_names())
    for package, name in registered:
        assert get_system(name).name == name, package


# -- a BEIR folder is a benchmark --------------------------------------------------------------


def _beir_from_demo(folder):
    from lexir.io import write_beir

    bench = open_data("demo")
    queries = bench.queries.queries
    write_beir(folder, list(bench.corpus.documents), queries[:80],
               {q.id: bench.queries.qrels[q.id] for q in queries[:80]}, split="test")
    write_beir(folder / "tmp-dev", [], [], {q.id: bench.queries.qrels[q.id] for q in queries[80:100]}, split="dev")
    (folder / "tmp-dev" / "qrels" / "dev.tsv").replace(folder / "qrels" / "dev.tsv")
    with open(folder / "queries.jsonl", "a", encoding="utf-8") as out:
        for q in queries[80:100]:
            out.write(json.dumps({"_id": q.id, "text": q.text}, ensure_ascii=False) + "\n")
    return bench


def test_beir_folder_runs_and_evaluates_without_query_flags(tmp_path, cache):
    from typer.testing import CliRunner

    from lexir.cli.main import app
    from lexir.io import read_run

    def invoke(*args):
        return CliRunner().invoke(app, [str(a) for a in args])

    folder = tmp_path / "kk-beir"
    _beir_from_demo(folder)
    result = invoke("run", folder, "--system", "bm25", "--output", tmp_path / "all.trec")
    assert result.exit_code == 0, result.output
    assert len(read_run(tmp_path / "all.trec")) == 100
    result = invoke("run", folder, "--system", "bm25", "--split", "test", "--output", tmp_path / "test.trec")
    assert result.exit_code == 0, result.output
    assert len(read_run(tmp_path / "test.trec")) == 80
    result = invoke("eval", tmp_path / "test.trec", "--dataset", folder, "--split", "test", "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["n_queries"] == 80
    result = invoke("run", folder, "--system", "bm25", "--split", "train", "--output", tmp_path / "x.trec")
    assert result.exit_code == 2 and "valid: all, dev, test" in result.output


def test_search_json_for_scripts():
    from typer.testing import CliRunner

    from lexir.cli.main import app

    result = CliRunner().invoke(app, ["search", "demo", "Kto zabija człowieka", "-k", "3", "--format", "json",
                                         "--system", "bm25"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["system"] == "bm25" and [h["rank"] for h in body["hits"]] == [1, 2, 3]
    top = body["hits"][0]
    assert top["id"] == "kk::148" and top["citation"] == "art. 148 k.k." and "zabija" in top["text"]


# -- no legal order named outside its folder --------------------------------------------------------


def _order_codes():
    """The registered orders' codes and languages, English, French and Italian (``id``, Indonesian,
    would be every ``"id"`` key)."""
    from lexir.jurisdiction import jurisdictions

    return {j.code for j in jurisdictions()} | {j.language for j in jurisdictions()} | {"en", "fr", "it"}


def _code_comparisons(tree, order_codes):
    """(line, code) of every comparison with a jurisdiction or language code (``lang == "pl"``,
    ``x in ("de", "el")``, ``match`` cases) and every dict entry keyed by one."""
    import ast

    def codes_in(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in order_codes:
            return [node.value]
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return [c for elt in node.elts for c in codes_in(elt)]
        return []

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                yield from ((node.lineno, c) for c in codes_in(side))
        elif isinstance(node, ast.Dict):
            yield from ((node.lineno, c) for key in node.keys if key is not None for c in codes_in(key))
        elif isinstance(node, ast.MatchValue):
            yield from ((node.lineno, c) for c in codes_in(node.value))


def test_no_jurisdiction_or_language_comparison_outside_their_packages():
    """What knows one legal order lives in its folder (lexir/jurisdictions/<code>/), what knows one
    language in lexir/analysis: no other module compares with a jurisdiction or language code or
    keys a dict by one (the if/elif chains and per-language dicts that made adding an order touch
    fourteen files)."""
    import ast
    from pathlib import Path

    import lexir

    root = Path(lexir.__file__).parent
    order_codes = _order_codes()
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if relative.parts[0] in ("jurisdictions", "analysis"):
            continue
        for line, code in _code_comparisons(ast.parse(path.read_text(encoding="utf-8")), order_codes):
            found.append(f"{relative.as_posix()}:{line} {code!r}")
    assert not found, found


def test_the_code_check_sees_comparisons_and_keys():
    import ast

    tree = ast.parse('if lang == "pl": pass\nx = lang in ("de", "el")\nd = {"fr": 1, "other": 2}\n'
                     'match lang:\n    case "it": pass\ny = lang == "pirate"\n')
    assert sorted(c for _, c in _code_comparisons(tree, _order_codes())) == ["de", "el", "fr", "it", "pl"]
