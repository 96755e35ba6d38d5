"""The statute graph: hand-built acts (resolution rules) and real laws (BGB, StGB, GG)."""

from __future__ import annotations

import functools
import json
import tarfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from lexir.jurisdictions.de.statutes import parse_law
from lexir.structure.graph import StatuteGraph, build_graph, own_text
from lexir.types import Act, Provision

LAWS = ("bgb", "stgb", "gg")


@functools.cache
def read_laws(data_dir: Path, slugs=LAWS) -> dict[str, Act]:
    """Parse a few laws, streaming the archive once and stopping when all are found (cached:
    test_chunking reuses them; callers must not modify the acts)."""
    tar_path = data_dir / "de" / "gesetze_markdown_all.tar.gz"
    if not tar_path.is_file():
        pytest.skip(f"German laws not found at {tar_path}")
    want, acts = set(slugs), {}
    with tarfile.open(tar_path, "r:gz") as tar:
        for member in tar:
            parts = member.name.split("/")
            if member.name.endswith("/index.md") and parts[-2] in want:
                act = parse_law(tar.extractfile(member).read().decode("utf-8"), member.name)
                acts[act.id] = act
                want.discard(parts[-2])
                if not want:
                    break
    return acts


@pytest.fixture(scope="module")
def laws(data_dir: Path) -> dict[str, Act]:
    return read_laws(data_dir)


@pytest.fixture(scope="module")
def graph(laws) -> StatuteGraph:
    return build_graph(laws.values())


# ---------------------------------------------------------------------------
# hand-built acts with a scripted finder


def unit(uid: str, level: str, text: str, *children: Provision) -> Provision:
    label = uid.rsplit(":", 1)[-1]
    return Provision(uid, level, label, text, children=list(children))


def toy_acts() -> list[Act]:
    a1 = unit("A::1", "para", "(1) Satz eins. Satz zwei.\n(2) Wer\n1. x\n2. y",
              unit("A::1/abs:1", "abs", "(1) Satz eins. Satz zwei.",
                   unit("A::1/abs:1/satz:1", "satz", "Satz eins."),
                   unit("A::1/abs:1/satz:2", "satz", "Satz zwei.")),
              unit("A::1/abs:2", "abs", "(2) Wer\n1. x\n2. y",
                   unit("A::1/abs:2/satz:1", "satz", "Wer\n1. x\n2. y",
                        unit("A::1/abs:2/satz:1/nr:1", "nr", "1. x"),
                        unit("A::1/abs:2/satz:1/nr:2", "nr", "2. y"))))
    a2 = unit("A::2", "para", "REF", )
    b1 = unit("B::1", "para", "REF2")
    return [Act("A", articles=[a1, a2]), Act("B", articles=[b1])]


@dataclass
class FakeCitation:
    act: str | None
    article: str | None
    path: dict = field(default_factory=dict)
    act_raw: str = "A"  # the act as written; "" when the finder used default_act


SCRIPT = {
    ("REF", "A"): [
        FakeCitation("A", "1", {"abs": "1", "satz": "2"}),  # exact
        FakeCitation("A", "1", {"abs": "9"}),  # missing Absatz -> article
        FakeCitation("A", "1", {"nr": "2"}),  # skipped levels filled in -> A::1/abs:2/satz:1/nr:2
        FakeCitation("A", "77"),  # missing article of a named act -> act
        FakeCitation("A", "78", act_raw=""),  # missing article of the default act -> no edge
        FakeCitation("X", "1"),  # unknown act -> no edge
        FakeCitation("A", "2"),  # itself -> no edge
        FakeCitation("A", "1", {"abs": "1", "satz": "2"}),  # duplicate
        FakeCitation("B", "1"),  # cross-act
    ],
    ("REF2", "B"): [FakeCitation(None, None, {"abs": "1"}, act_raw="")],  # relative: B::1 has no Absatz 1
}


def fake_finder(text: str, act: str) -> list:
    return SCRIPT.get((text, act), [])


@pytest.fixture()
def toy() -> StatuteGraph:
    return build_graph(toy_acts(), finder=fake_finder)


def test_toy_nodes_and_contains(toy):
    assert len(toy) == 2 + 9 + 1
    assert toy.neighbours("A", "contains") == ["A::1", "A::2"]
    assert toy.neighbours("A::1", "contains") == ["A::1/abs:1", "A::1/abs:2"]
    assert toy.neighbours("A::1/abs:2/satz:1/nr:1", "parent") == ["A::1/abs:2/satz:1"]
    assert toy.neighbours("A", "parent") == []
    assert toy.level("A::1/abs:2") == "abs" and toy.level("B") == "act"
    s = toy.stats()
    assert s["nodes_by_level"] == {"act": 2, "para": 3, "abs": 2, "satz": 3, "nr": 2}
    assert s["edges"]["contains"] == len(toy) - 2


def test_toy_cites_resolution(toy):
    assert toy.neighbours("A::2", "cites") == ["A", "A::1", "A::1/abs:1/satz:2", "A::1/abs:2/satz:1/nr:2", "B::1"]
    assert toy.neighbours("A::1/abs:1/satz:2", "cited_by") == ["A::2"]
    assert toy.neighbours("B::1", "cites") == []  # relative "Absatz 1" of B::1 resolves to B::1 itself
    assert toy.stats()["edges"]["cites"] == 5
    assert toy.stats()["cites_cross_act"] == 1
    assert toy.info["cites_resolution"]["unknown_act"] == 1
    assert toy.info["cites_resolution"]["missing_article"] == 1
    assert set(toy.neighbours("A::2")) == {"A", "A::1", "A::1/abs:1/satz:2", "A::1/abs:2/satz:1/nr:2", "B::1"}


def test_cites_within_collects_subtree(toy):
    assert toy.cites_within("A") == ["B::1"]  # targets inside the subtree are left out
    assert toy.cites_within("A::2") == toy.neighbours("A::2", "cites")
    assert toy.cites_within("A::1") == []


def test_own_text_cuts_children():
    a1 = toy_acts()[0].articles[0]
    assert own_text(a1) == ""
    assert own_text(a1.children[0]) == "(1)"
    assert own_text(a1.children[1].children[0]) == "Wer"
    assert own_text(a1.children[0].children[0]) == "Satz eins."


def test_save_load_and_exports(toy, tmp_path):
    toy.save(tmp_path / "g")
    back = StatuteGraph.load(tmp_path / "g")
    assert back.ids == toy.ids
    assert np.array_equal(back.cites_dst, toy.cites_dst)
    assert back.neighbours("A::2", "cites") == toy.neighbours("A::2", "cites")
    assert back.stats() == toy.stats()

    rows = [json.loads(line) for line in toy.to_jsonl(tmp_path / "g.jsonl").read_text().splitlines()]
    assert sum(r["type"] == "node" for r in rows) == len(toy)
    edges = [(r["kind"], r["source"], r["target"]) for r in rows if r["type"] == "edge"]
    assert ("cites", "A::2", "B::1") in edges and ("contains", "A", "A::1") in edges
    assert len(edges) == len(toy) - 2 + 5

    root = ET.parse(toy.to_graphml(tmp_path / "g.graphml")).getroot()
    ns = {"g": "http://graphml.graphdrawing.org/xmlns"}
    assert len(root.findall(".//g:node", ns)) == len(toy)
    assert len(root.findall(".//g:edge", ns)) == len(edges)


def test_unknown_kind_and_missing_graph(tmp_path, toy):
    with pytest.raises(ValueError, match="unknown neighbour kind"):
        toy.neighbours("A", "sibling")
    with pytest.raises(FileNotFoundError):
        StatuteGraph.load(tmp_path)


# ---------------------------------------------------------------------------
# real laws with the German citation finder


def test_real_graph_covers_every_unit(laws, graph):
    n_units = sum(1 for act in laws.values() for _ in act.units())
    n_divisions = sum(1 for act in laws.values() for _ in act.walk_divisions())
    assert len(graph) == n_units + n_divisions + len(laws)
    assert graph.stats()["edges"]["contains"] == n_units + n_divisions
    assert graph.neighbours("BGB::823", "contains") == ["BGB::823/abs:1", "BGB::823/abs:2"]
    assert graph.parent_of("BGB::823") == "BGB::buch:2/abschnitt:8/titel:27"  # Unerlaubte Handlungen


def test_real_cites_edges(graph):
    # § 829 BGB: "Wer in einem der in den §§ 823 bis 826 bezeichneten Fälle ..."
    cited = graph.cites_within("BGB::829")
    assert {"BGB::823", "BGB::824", "BGB::825", "BGB::826"} <= set(cited)
    assert "BGB::829/satz:1" in graph.neighbours("BGB::823", "cited_by")
    assert graph.stats()["edges"]["cites"] > 3000
    # every cites edge runs between existing nodes and is unique
    pairs = set(zip(graph.cites_src.tolist(), graph.cites_dst.tolist(), strict=True))
    assert len(pairs) == len(graph.cites_src)


def test_parallel_cites_match_one_process(laws, monkeypatch):
    """Citations found in two forked workers give exactly the edges one process finds."""
    import lexir.structure.graph as graph_module

    graph = build_graph(laws.values(), workers=1)
    monkeypatch.setattr(graph_module, "_PARALLEL_MIN", 0)
    parallel = build_graph(laws.values(), workers=2)
    assert parallel.ids == graph.ids
    assert np.array_equal(parallel.cites_src, graph.cites_src)
    assert np.array_equal(parallel.cites_dst, graph.cites_dst)
    assert parallel.info["cites_resolution"] == graph.info["cites_resolution"]
    assert parallel.info["cites_found"] == graph.info["cites_found"] > 1000


# -- the graph cache is keyed by the code that builds graphs ----------------------------------


def test_code_digest_follows_the_finder_tables(tmp_path):
    """A changed citation table (or finder) gives another digest, an unchanged copy the same."""
    import shutil

    from lexir.io.paths import code_digest

    source = Path(__file__).resolve().parents[1] / "src" / "lexir" / "jurisdictions" / "de"
    copy = tmp_path / "de"
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert code_digest(copy) == code_digest(source)
    table = copy / "data" / "act_variants.tsv"
    table.write_text(table.read_text(encoding="utf-8") + "BauGBX\tBBauG\ttest\n", encoding="utf-8")
    assert code_digest(copy) != code_digest(source)


def test_cached_graph_is_rebuilt_when_the_code_changes(tmp_path, monkeypatch):
    """A graph cached by older finder code is not served: the new code builds its own, and the old
    entry of the same corpus is removed."""
    from lexir.datasets import open as open_data
    from lexir.structure import graph as graph_module

    monkeypatch.setenv("LEXIR_CACHE", str(tmp_path / "cache"))
    corpus = open_data("demo").corpus
    first = graph_module.cached_graph(corpus)
    old_folder = graph_module.graph_folder(corpus)
    assert (old_folder / "graph.json").is_file()
    built = []
    real_graph_of = graph_module.graph_of
    monkeypatch.setattr(graph_module, "graph_of", lambda c, p=None: built.append(c.name) or real_graph_of(c, p))
    again = graph_module.cached_graph(corpus)  # same code: read back, not built
    assert built == [] and again.stats() == first.stats()
    monkeypatch.setattr(graph_module, "graph_code_digest", lambda: "0" * 64)  # as after editing a finder
    new_folder = graph_module.graph_folder(corpus)
    assert new_folder != old_folder
    graph_module.cached_graph(corpus)
    assert built == ["demo"] and (new_folder / "graph.json").is_file() and not old_folder.exists()
