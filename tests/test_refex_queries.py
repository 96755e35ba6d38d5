"""de-refex as a retrieval benchmark: decisions as queries, their law citations as gold."""

from lexir.datasets.statutes import corpus_of
from lexir.jurisdictions.de.refex import decision_query, load_refex, refex_queries
from lexir.jurisdictions.de.statutes import parse_law, read_law_files

LAWS = ["s/sgg/index.md", "z/zpo/index.md", "h/hgb/index.md", "g/gg/index.md", "b/bgb/index.md"]


def test_decisions_become_masked_queries_with_corpus_gold(data_dir):
    docs = load_refex(data_dir / "de" / "refex")
    texts = read_law_files(data_dir / "de" / "gesetze_markdown_all.tar.gz", LAWS)
    corpus = corpus_of("five-laws", [parse_law(text, path) for path, text in texts.items()], "de")
    qs = refex_queries(docs, corpus)
    assert qs.queries, "some decisions cite SGG/ZPO/HGB/GG/BGB"
    for query in qs.queries:
        doc = next(d for d in docs if d.id == query.id)
        # the answers are not in the question
        assert not any(c.text in query.text for c in doc.citations if len(c.text) > 8)
        assert all(g.split("::")[0] in corpus.acts for g in qs.qrels[query.id])
    reasons = {r for _, r, _ in qs.dropped}
    assert "citation: act unknown" in reasons  # e.g. acts outside these five laws


def test_tatbestand_is_preferred_and_offsets_hold():
    text = "Tenor\nDie Klage wird abgewiesen.\nTatbestand\nDer Kläger verlangt nach § 823 BGB Ersatz.\nGründe\nx"
    start = text.index("§ 823 BGB")
    query, kind = decision_query(text, [(start, start + len("§ 823 BGB"))])
    assert kind == "tatbestand" and query.startswith("Der Kläger verlangt nach") and "§" not in query
    assert "abgewiesen" not in query
    query, kind = decision_query("Kein Abschnitt. § 1 GG", [(16, 22)])
    assert kind == "full-masked" and query.strip() == "Kein Abschnitt."
