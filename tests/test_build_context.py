"""One door to systems: a composite builds its parts through the BuildContext it is given, so each
part gets the same gold, LLM client, progress and cache setting as the system it is part of (the
bug: fusion built its parts with none of them, so a fused oracle failed for want of the gold, an LLM
part made its own client, and cache=False still wrote its parts' indexes)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import lexir
from lexir.retrieval.base import register_system
from lexir.retrieval.build import build_retriever
from lexir.retrieval.context import BuildContext, shared_progress

COMPOSITE_PACKAGES = ("retrieval", "llm", "learning")
FRONT_DOOR = "lexir.retrieval.build"


def _imports_in_functions(tree: ast.AST) -> list[tuple[str, int]]:
    """(function, line) of each import of lexir.retrieval.build inside a function body: an import
    statement, ``from lexir.retrieval import build``, or the module's name given to importlib."""
    found = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Import):
                named = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                named = [node.module or ""] + [f"{node.module}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                named = [node.value]
            else:
                continue
            if any(name == FRONT_DOOR or name.startswith(FRONT_DOOR + ".") for name in named):
                found.append((function.name, node.lineno))
    return found


def test_no_composite_imports_the_front_door_in_a_function():
    """Retrieval, llm and learning build parts through context.build, never by a lazy import of
    lexir.retrieval.build (a module may import it at the top, as learning.train and llm.commands do)."""
    root = Path(lexir.__file__).parent
    lazy = []
    for package in COMPOSITE_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            for function, line in _imports_in_functions(ast.parse(path.read_text(encoding="utf-8"))):
                lazy.append(f"{path.relative_to(root)}:{line} ({function})")
    assert not lazy, lazy


def test_the_check_sees_each_form_of_lazy_import():
    tree = ast.parse("from lexir.retrieval.build import build_retriever\n"  # top level: allowed
                     "def a():\n    from lexir.retrieval.build import build_retriever\n"
                     "def b():\n    from lexir.retrieval import build\n"
                     "def c():\n    import lexir.retrieval.build\n"
                     "def d():\n    importlib.import_module('lexir.retrieval.build')\n"
                     "def e():\n    from lexir.retrieval.base import get_system\n")
    assert [name for name, _ in _imports_in_functions(tree)] == ["a", "b", "c", "d"]


def test_a_factory_taking_context_loose_is_refused():
    with pytest.raises(TypeError, match="context"):
        @register_system("test-loose-qrels", "takes the gold by name")
        def build_loose(corpus, *, qrels=None):
            raise AssertionError("never built")


def test_a_fused_oracle_gets_the_gold(demo_bench):
    """The oracle as a part of a fusion gets the qrels the fusion was built with (on main: 'the oracle
    control needs the gold'), through build_retriever and through lexir.build on a benchmark."""
    queries = demo_bench.queries
    fused = build_retriever(demo_bench.corpus, "rrf", {"systems": "oracle+bm25"}, qrels=queries.qrels)
    assert fused.parts[0].qrels is queries.qrels
    run = fused.search_many(queries.queries[:5], 10)
    for query in queries.queries[:5]:
        gold = [d for d, g in queries.qrels[query.id].items() if g > 0 and d in demo_bench.corpus]
        assert set(gold) <= set(run[query.id]), query.id
    via_api = lexir.build(demo_bench, "wrrf", systems="bm25+oracle(base=bm25(mode=stem))", weights="1,2")
    assert via_api.parts[1].qrels is queries.qrels


def test_a_fused_llm_part_uses_the_given_client(demo_bench, tmp_path):
    from lexir.llm.client import LLMClient, LLMConfig
    from lexir.llm.testing import ScriptedChatServer, schema_answer

    queries = demo_bench.queries.queries[:2]
    with ScriptedChatServer(default=schema_answer) as server:
        client = LLMClient(LLMConfig(base_url=server.url, model="scripted", cache=False, timeout=10.0,
                                     backoff=0.01, max_backoff=0.1))
        fused = build_retriever(demo_bench.corpus, "rrf", {"systems": "rerank(depth=5;chars=100)+bm25"},
                                client=client)
        assert fused.parts[0].client is client
        run = fused.search_many(queries, 10)
    assert set(run) == {q.id for q in queries}
    assert server.count == len(queries)
    assert {r.system for r in client.accounting.records} == {"rerank"}


def _counter():
    calls = []
    return calls, calls.append


@pytest.mark.parametrize("system", ["rrf(systems=bm25+bm25(mode=stem))", "rrf(systems=oracle+bm25)",
                                    "explicit", "bm25-prf(bm25=bm25(k1=0.9))"])
def test_progress_reaches_the_parts(demo_bench, system):
    """What a composite's parts index is reported, once over: fused parts share the count, so it
    ends at the corpus size (on main a fusion's parts reported nothing)."""
    calls, progress = _counter()
    build_retriever(demo_bench.corpus, system, progress=progress, cache=False, qrels=demo_bench.queries.qrels)
    assert calls and sum(calls) == len(demo_bench.corpus)


def test_shared_progress_sums_to_one_total():
    calls, progress = _counter()
    share = shared_progress(progress, 3)
    for _part in range(3):
        for n in (4, 3, 3):
            share(n)
    assert sum(calls) == 10
    assert shared_progress(progress, 1) is progress and shared_progress(None, 2) is None


def _entries(cache):
    folder = cache / "indexes"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def test_cache_off_reaches_the_parts(demo_bench, tmp_path, monkeypatch):
    """cache=False builds every part afresh and writes no index (on main a fusion's parts were
    still read from and saved to the cache); with the cache, each part has its entry."""
    monkeypatch.setenv("LEXIR_CACHE", str(tmp_path / "cache"))
    spec = "rrf(systems=bm25(k1=0.8)+bm25-prf(bm25=bm25(k1=0.7)))"
    build_retriever(demo_bench.corpus, spec, cache=False)
    assert _entries(tmp_path / "cache") == []
    build_retriever(demo_bench.corpus, spec)
    entries = _entries(tmp_path / "cache")
    assert len(entries) == 2 and all(name.startswith("demo-bm25-") for name in entries), entries


def test_context_build_needs_a_builder(demo_bench):
    """A context made by hand builds no part until build_retriever gives it the builder."""
    with pytest.raises(RuntimeError, match="build_retriever"):
        BuildContext().build("bm25", demo_bench.corpus)
    context = BuildContext(qrels=demo_bench.queries.qrels, cache=False)
    oracle = build_retriever(demo_bench.corpus, "oracle", context=context)
    assert oracle.qrels is demo_bench.queries.qrels
    with pytest.raises(TypeError, match="either context"):
        build_retriever(demo_bench.corpus, "bm25", context=context, qrels={})
