"""benchmarks/bench_lucene.py on the demo set: both engines in the table, and Lucene on lexir's own
tokens ranking as lexir does. Skipped where pyserini (the Anserini fatjar) or a JDK is missing:
CI does not install them (benchmarks/install_lucene.sh does)."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


def _lucene_or_skip():
    if importlib.util.find_spec("pyserini") is None:
        pytest.skip("pyserini not installed (benchmarks/install_lucene.sh installs the Lucene peer)")
    for tool in ("java", "javac"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not found: the Lucene peer needs a JDK (benchmarks/install_lucene.sh)")
    sys.path.insert(0, str(BENCH))
    import bench_lucene

    try:
        bench_lucene.ensure_loop()
    except bench_lucene.LuceneMissing as exc:
        pytest.skip(str(exc))
    return bench_lucene


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """One benchmark run on the demo set (every engine, k 10 and 100): (module, output, work folder)."""
    bench_lucene = _lucene_or_skip()
    tmp = tmp_path_factory.mktemp("bench_lucene")
    out = bench_lucene.main(["--sets", "demo", "--rounds", "1", "--passes", "1", "--warmup", "0.2",
                             "--work", str(tmp / "work"), "--output", str(tmp / "out.json")])
    return bench_lucene, out, tmp / "work" / "demo"


def test_demo_table_and_pretokenised_agreement(demo):
    bench_lucene, out, _ = demo
    (result,) = out["results"]
    assert set(result["builds"]) == {"lexir", "lucene", "lucene-pretok"}
    for build in result["builds"].values():
        assert build["build_s"] > 0 and build["index_mib"] > 0 and build["peak_rss_mib"] > 0
    rows = {(r["engine"], r["queries"], r["k"]): r for r in result["search"]}
    assert {e for e, _, _ in rows} == {"lexir", "lucene", "lucene-pretok"}
    assert {k for _, _, k in rows} == {10, 100}
    for row in rows.values():
        assert row["qps"] > 0 and row["n"] == 119
    # The same tokens, the same BM25 (k1, b): Lucene's top 10 is lexir's but for ties and
    # Lucene's one-byte document lengths.
    pretok = rows[("lucene-pretok", "exam", 10)]
    assert pretok["overlap@10"] >= 0.9, pretok
    assert abs(pretok["nDCG@10"] - rows[("lexir", "exam", 10)]["nDCG@10"]) < 0.03
    # Lucene's own Polish analysis (Morfologik lemmas) finds other words: related, not the same.
    assert 0.2 < rows[("lucene", "exam", 10)]["overlap@10"] < 0.95
    table = out["table"]
    for engine in ("| lexir |", "| lucene |", "| lucene-pretok |"):
        assert engine in table


def test_pretokenised_lucene_scores_match_lexir(demo):
    """Scores, not only ids: Lucene 9's BM25Similarity and lexir's "lucene" method are the same
    formula (no (k1 + 1) factor in either), so the scores agree up to Lucene's one-byte document
    lengths (a few per cent at most)."""
    bench_lucene, _, folder = demo
    lexir_run = bench_lucene.read_run(folder, "lexir", "exam", 10)
    lucene_run = bench_lucene.read_run(folder, "lucene-pretok", "exam", 10)
    ratios = []
    for qid, hits in lexir_run.items():
        for doc, score in hits.items():
            if doc in lucene_run.get(qid, {}):
                ratios.append(lucene_run[qid][doc] / score)
    assert len(ratios) > 500
    ratios.sort()
    assert 0.99 < ratios[len(ratios) // 2] < 1.01, ratios[len(ratios) // 2]
    assert 0.9 < ratios[0] and ratios[-1] < 1.1, (ratios[0], ratios[-1])


# Run in a child process: pyserini's import needs placeholder modules (torch, transformers, openai)
# and starts a JVM, neither of which may leak into the test process (scipy, for one, inspects
# sys.modules["torch"]).
_PYSERINI_SEARCH = """
import json, sys
sys.path.insert(0, sys.argv[1])
import bench_lucene
from pathlib import Path
folder = Path(sys.argv[2])
searcher = bench_lucene.pyserini_searcher()(str(folder / "index-lucene-pretok"))
from jnius import autoclass
searcher.set_analyzer(autoclass("org.apache.lucene.analysis.core.WhitespaceAnalyzer")())
searcher.set_bm25(bench_lucene.K1, bench_lucene.B)
out = {}
for line in (folder / "queries" / "exam.pretok.tsv").read_text(encoding="utf-8").splitlines():
    qid, text = line.split("\\t", 1)
    out[qid] = {h.docid: h.score for h in searcher.search(" ".join(dict.fromkeys(text.split())), k=10)}
print(json.dumps(out))
"""


def test_loop_ranks_as_pyserini_searches(demo):
    """LuceneLoop is Lucene as pyserini runs it: pyserini's LuceneSearcher (its Python API, dense
    packages replaced by placeholders, in a child process) on the pre-tokenised index, with a
    whitespace analyzer and each query's distinct terms (pyserini boosts a repeated term by its
    count; the loop, as lexir, scores distinct terms), finds the loop's hits with the loop's scores."""
    import json
    import subprocess

    bench_lucene, _, folder = demo
    done = subprocess.run([sys.executable, "-c", _PYSERINI_SEARCH, str(BENCH), str(folder)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    searched = json.loads(done.stdout.strip().splitlines()[-1])
    loop = bench_lucene.read_run(folder, "lucene-pretok", "exam", 10)
    same = 0
    for qid, theirs in searched.items():
        ours = loop.get(qid, {})
        # the 10th place may be a tie broken differently; the scores of shared hits must agree
        same += len(set(theirs) & set(ours)) >= min(len(ours), 9)
        for doc in set(theirs) & set(ours):
            assert abs(theirs[doc] - ours[doc]) < 1e-3 * max(1.0, ours[doc]), (qid, doc)
    assert searched and same >= 0.95 * len(searched), (same, len(searched))
