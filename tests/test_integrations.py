"""lexir as a LangChain and a LlamaIndex retriever, against the real packages: in process on the
shipped demo corpus and on de-gesetze-history, and over a real ``lexir serve`` on loopback. The
examples of docs/integrations.md are run as they are written."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("llama_index.core")
httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")

from langchain_core.documents import Document  # noqa: E402
from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode  # noqa: E402
from test_service import REPO, Server  # noqa: E402

import lexir  # noqa: E402
from lexir.citations.format import format_citation  # noqa: E402
from lexir.integrations import langchain as lc  # noqa: E402
from lexir.integrations import llamaindex as li  # noqa: E402
from lexir.integrations.search import LexirSearchError  # noqa: E402

KEY = "integration-key"
QUESTION = "Kto zabija człowieka, podlega karze"
HISTORY_QUESTION = "Beschneidung des männlichen Kindes"


def session_cache(tmp_path_factory) -> Path:
    """The per-session cache conftest gives every test: the server and the tests share the parsed
    history of de-gesetze-history (about a minute to parse) instead of each parsing it."""
    return tmp_path_factory.getbasetemp() / "lexir-cache"


@pytest.fixture(scope="module")
def server(tmp_path_factory, data_dir):
    srv = Server(["demo", "de-gesetze-history", "--system", "bm25", "--system", "rrf(systems=bm25+bm25(mode=stem))"],
                 session_cache(tmp_path_factory), env={"LEXIR_API_KEY": KEY})
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def demo_lc():
    return lc.LexirRetriever(corpus="demo", k=5)


def expected(bench, system: str, query: str, k: int):
    """The ids and scores lexir itself gives, through its own front door."""
    return lexir.build(bench, system).search(query, k)


# -- LangChain, in process -------------------------------------------------------------------


def test_langchain_in_process_matches_lexir_and_carries_its_metadata(demo_lc, demo_bench):
    docs = demo_lc.invoke(QUESTION)
    want = expected(demo_bench, "bm25", QUESTION, 5)
    assert [(d.id, round(d.metadata["score"], 4)) for d in docs] == [(i, round(s, 4)) for i, s in want]
    corpus = demo_bench.corpus
    for rank, doc in enumerate(docs, 1):
        assert isinstance(doc, Document) and doc.page_content == corpus[doc.id].text
        meta = doc.metadata
        assert meta["id"] == doc.id and meta["rank"] == rank and meta["system"] == "bm25" and meta["corpus"] == "demo"
        assert meta["citation"] == format_citation(doc.id, "pl")
        assert meta["breadcrumbs"][0] == corpus.acts["kk"].title and meta["breadcrumb_ids"] == ["kk", doc.id]
        assert "valid_from" not in meta and "as_of" not in meta  # the demo has no history


def test_langchain_per_call_k_async_and_batch(demo_lc):
    three = demo_lc.invoke(QUESTION, k=3)
    assert [d.id for d in three] == [d.id for d in demo_lc.invoke(QUESTION)][:3]
    assert [d.id for d in asyncio.run(demo_lc.ainvoke(QUESTION, k=3))] == [d.id for d in three]
    both = demo_lc.batch([QUESTION, "kradzież cudzej rzeczy ruchomej"])
    assert [d.id for d in both[0]] == [d.id for d in demo_lc.invoke(QUESTION)] and len(both[1]) == 5


def test_langchain_over_a_retriever_you_built(demo_bench):
    built = lexir.build(demo_bench, "bm25(mode=stem)")
    retriever = lc.LexirRetriever(retriever=built, corpus=demo_bench, k=4)
    docs = retriever.invoke("zabójstwo człowieka")
    assert [(d.id, round(d.metadata["score"], 4)) for d in docs] == \
        [(i, round(s, 4)) for i, s in built.search("zabójstwo człowieka", 4)]
    assert docs[0].metadata["citation"] == format_citation(docs[0].id, "pl")
    with pytest.raises(LexirSearchError, match="given retriever"):
        retriever.invoke("zabójstwo", as_of="2013-01-01")


def test_langchain_refusals_say_what_is_wrong(demo_lc):
    with pytest.raises(LexirSearchError, match="no history"):
        demo_lc.invoke(QUESTION, as_of="2013-06-01")
    with pytest.raises(LexirSearchError, match="k must be"):
        demo_lc.invoke(QUESTION, k=0)
    with pytest.raises(LexirSearchError, match="unknown search argument"):
        demo_lc.invoke(QUESTION, top_k=3)
    with pytest.raises(LexirSearchError, match="no-such-corpus"):
        lc.LexirRetriever(corpus="no-such-corpus")
    with pytest.raises(LexirSearchError, match="needs the Corpus"):
        lc.LexirRetriever(retriever=object(), corpus="demo")
    # an unknown system or parameter is lexir's error (a ValueError), named by its field, in both frameworks
    for retriever in (lambda **kw: lc.LexirRetriever(corpus="demo", **kw).invoke(QUESTION),
                      lambda **kw: li.LexirRetriever(corpus="demo", **kw).retrieve(QUESTION)):
        with pytest.raises(LexirSearchError, match="unknown system 'bm99'") as err:
            retriever(system="bm99")
        assert err.value.field == "system" and isinstance(err.value, ValueError)
        with pytest.raises(LexirSearchError, match="k9"):  # built as bm25(k9=0.9): the spec names it
            retriever(params={"k9": 0.9})


@pytest.mark.slow  # de-gesetze-history: its history parsed once per session, about a minute
def test_langchain_as_of_on_a_corpus_with_a_history(data_dir):
    history = lexir.load("de-gesetze-history")
    retriever = lc.LexirRetriever(corpus="de-gesetze-history", k=10)
    before = retriever.invoke(HISTORY_QUESTION, as_of="2012-09-01")
    after = retriever.invoke(HISTORY_QUESTION, as_of="2013-06-01")
    assert "BGB::1631d" not in [d.id for d in before]  # § 1631d BGB came into force on 2013-01-11
    assert "BGB::1631d" in [d.id for d in after]
    for day, docs in (("2012-09-01", before), ("2013-06-01", after)):
        for doc in docs:
            version = history.version(doc.id, day)
            assert doc.metadata["as_of"] == day and doc.metadata["version"] == version.version
            assert doc.metadata["valid_from"] == version.valid_from <= day
            assert doc.metadata["valid_to"] == version.valid_to and (version.valid_to is None or day < version.valid_to)
            assert doc.page_content == version.text
    latest = retriever.invoke(HISTORY_QUESTION, k=3)  # no as_of: the latest version, still dated
    assert all(d.metadata["valid_from"] == history.version(d.id).valid_from for d in latest)
    with pytest.raises(LexirSearchError, match="first is 2012-08-02") as err:
        retriever.invoke(HISTORY_QUESTION, as_of="2010-01-01")
    assert err.value.status == 400 and err.value.field == "as_of"


# -- LlamaIndex, in process ------------------------------------------------------------------


def test_llamaindex_in_process_matches_lexir(demo_bench):
    retriever = li.LexirRetriever(corpus="demo", k=5)
    nodes = retriever.retrieve(QUESTION)
    want = expected(demo_bench, "bm25", QUESTION, 5)
    assert [(n.node.id_, round(n.score, 4)) for n in nodes] == [(i, round(s, 4)) for i, s in want]
    first = nodes[0]
    assert isinstance(first, NodeWithScore) and isinstance(first.node, TextNode)
    assert first.node.text == demo_bench.corpus[first.node.id_].text
    assert first.node.metadata["citation"] == format_citation(first.node.id_, "pl")
    seen = first.node.get_content(MetadataMode.LLM)
    assert first.node.metadata["citation"] in seen and "score" not in seen and "rank:" not in seen
    assert [n.node.id_ for n in asyncio.run(retriever.aretrieve(QUESTION))] == [n.node.id_ for n in nodes]
    built = lexir.build(demo_bench, "bm25(mode=lemma)")
    given = li.LexirRetriever(retriever=built, corpus=demo_bench.corpus, k=3)
    assert [n.node.id_ for n in given.retrieve("zabójstwo")] == [i for i, _ in built.search("zabójstwo", 3)]


def test_llamaindex_drops_into_a_query_engine(demo_bench):
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine

    retriever = li.LexirRetriever(corpus="demo", k=3)
    response = RetrieverQueryEngine.from_args(retriever, llm=MockLLM(max_tokens=4)).query(QUESTION)
    assert [n.node.id_ for n in response.source_nodes] == [i for i, _ in expected(demo_bench, "bm25", QUESTION, 3)]
    assert all(n.node.metadata["citation"] == format_citation(n.node.id_, "pl") for n in response.source_nodes)


@pytest.mark.slow  # de-gesetze-history: its history parsed once per session, about a minute
def test_llamaindex_at_a_date(data_dir):
    retriever = li.LexirRetriever(corpus="de-gesetze-history", k=10)
    later = retriever.at("2013-06-01")
    assert later._search is retriever._search  # same corpus and indexes, nothing reloaded
    assert "BGB::1631d" in [n.node.id_ for n in later.retrieve(HISTORY_QUESTION)]
    assert "BGB::1631d" not in [n.node.id_ for n in retriever.at("2012-09-01").retrieve(HISTORY_QUESTION)]
    hit = next(n for n in later.retrieve(HISTORY_QUESTION) if n.node.id_ == "BGB::1631d")
    assert hit.node.metadata["valid_from"] == "2013-01-11" and hit.node.metadata["as_of"] == "2013-06-01"


# -- over lexir's HTTP API -------------------------------------------------------------------


@pytest.mark.slow  # de-gesetze-history: its history parsed once per session, about a minute
def test_over_http_the_same_hits_as_in_process(server, demo_lc):
    remote = lc.LexirRetriever(url=server.url, corpus="demo", api_key=KEY, k=5)
    docs = remote.invoke(QUESTION)
    local = demo_lc.invoke(QUESTION)
    assert [(d.id, d.metadata, d.page_content) for d in docs] == [(d.id, d.metadata, d.page_content) for d in local]
    assert [d.id for d in asyncio.run(remote.ainvoke(QUESTION, k=2))] == [d.id for d in local[:2]]
    nodes = li.LexirRetriever(url=server.url, corpus="demo", api_key=KEY, k=5).retrieve(QUESTION)
    assert [(n.node.id_, n.score) for n in nodes] == [(d.id, d.metadata["score"]) for d in local]
    # a question too long for a URL goes in a POST's body: the same hits, and the server's own limit
    long_question = " ".join([QUESTION] * (3_000 // len(QUESTION) + 1))
    assert len(long_question) > 2_000
    assert [d.id for d in remote.invoke(long_question)] == [d.id for d in demo_lc.invoke(long_question)]
    with pytest.raises(LexirSearchError, match="at most 10000 are accepted") as err:
        remote.invoke("kradzież " * 5_000)  # 45,000 characters: was httpx.InvalidURL, not lexir's error
    assert err.value.status == 400
    fused = lc.LexirRetriever(url=server.url, corpus="demo", api_key=KEY, system="rrf(systems=bm25+bm25(mode=stem))",
                              k=3).invoke(QUESTION)
    assert all(set(d.metadata["explain"]) <= {"bm25", "bm25(mode=stem)"} and d.metadata["explain"] for d in fused)


@pytest.mark.slow  # de-gesetze-history: its history parsed once per session, about a minute
def test_over_http_refusals_carry_the_services_error(server):
    with pytest.raises(LexirSearchError, match="401") as err:
        lc.LexirRetriever(url=server.url, corpus="demo", k=3).invoke(QUESTION)
    assert err.value.code == "unauthorised"
    with pytest.raises(LexirSearchError, match="no corpus 'nope'") as err:
        lc.LexirRetriever(url=server.url, corpus="nope", api_key=KEY).invoke(QUESTION)
    assert err.value.status == 404
    with pytest.raises(LexirSearchError, match="not served"):
        asyncio.run(li.LexirRetriever(url=server.url, corpus="demo", api_key=KEY, system="dense").aretrieve(QUESTION))
    with pytest.raises(LexirSearchError, match="cannot reach"):
        lc.LexirRetriever(url="http://127.0.0.1:9", corpus="demo").invoke(QUESTION)


@pytest.mark.slow  # de-gesetze-history: its history parsed once per session, about a minute
def test_over_http_as_of_with_validity(server, data_dir):
    history = lexir.load("de-gesetze-history")
    remote = lc.LexirRetriever(url=server.url, corpus="de-gesetze-history", api_key=KEY, k=10, timeout=240)
    docs = remote.invoke(HISTORY_QUESTION, as_of="2013-06-01")
    assert "BGB::1631d" in [d.id for d in docs]
    for doc in docs:
        version = history.version(doc.id, "2013-06-01")
        assert (doc.metadata["valid_from"], doc.metadata["valid_to"]) == (version.valid_from, version.valid_to)
    nodes = asyncio.run(li.LexirRetriever(url=server.url, corpus="de-gesetze-history", api_key=KEY, k=10,
                                          as_of="2012-09-01", timeout=240).aretrieve(HISTORY_QUESTION))
    assert nodes and "BGB::1631d" not in [n.node.id_ for n in nodes]
    assert all(n.node.metadata["valid_from"] <= "2012-09-01" for n in nodes)


# -- the documented examples, run as written -------------------------------------------------


def doc_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (REPO / "docs" / "integrations.md").read_text(encoding="utf-8"), re.S)


@pytest.mark.slow  # de-gesetze-history: its history parsed once per session, about a minute
def test_the_documented_examples_run(server, tmp_path, demo_bench):
    blocks = doc_blocks()
    assert len(blocks) == 4
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "LEXIR_URL": server.url, "LEXIR_API_KEY": KEY}
    outputs = []
    for i, block in enumerate(blocks):
        (tmp_path / f"example{i}.py").write_text(block, encoding="utf-8")
        run = subprocess.run([sys.executable, str(tmp_path / f"example{i}.py")], capture_output=True, text=True,
                             env=env, cwd=tmp_path, timeout=300)
        assert run.returncode == 0, f"example {i} failed:\n{block}\n{run.stderr[-3000:]}"
        outputs.append(run.stdout)
        print(f"--- example {i}\n{run.stdout}")
    top = expected(demo_bench, "bm25", QUESTION, 3)
    cite = lambda ids: [format_citation(i, "pl") for i, _ in ids]  # noqa: E731
    lines = outputs[0].splitlines()
    assert len(lines) == 3 and all(line.startswith(f"{rank} {c} ") for rank, (line, c) in
                                   enumerate(zip(lines, cite(top), strict=True), 1))
    # the RAG chain: the stand-in model answers with the citations lexir put into the prompt, in order
    rag = cite(expected(demo_bench, "bm25(mode=stem)", "Jaka kara grozi za zabójstwo człowieka?", 3))
    assert outputs[1].strip() == "Podstawa prawna: " + "; ".join(rag)
    theft = cite(expected(demo_bench, "bm25", "kradzież cudzej rzeczy ruchomej", 3))
    assert outputs[2].strip() == repr(theft)
    lines = outputs[3].splitlines()
    assert [line.split(" ", 1)[0] for line in lines[:3]] == [i for i, _ in top]
    assert lines[3] == f"citation: {cite(top)[0]}"
