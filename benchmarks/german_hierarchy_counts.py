"""Node and edge counts of the German statute graph per level, with the divisions above the §.

Counts divisions (Buch, Teil, Abschnitt, Titel, ...) per level over every law of
``de/gesetze_markdown_all.tar.gz`` and the statute graph's nodes per level and ``contains``
edges (hierarchy only; ``--cites`` also finds the citation edges, several minutes), for the whole
corpus and for ``--laws`` (default BGB, StGB, ZPO, GG, with their ``cites`` edges), to set
beside the German paper's graph (168,469 nodes, 240,507 edges over 58 codes).

    python benchmarks/german_hierarchy_counts.py
    python benchmarks/german_hierarchy_counts.py --cites --output /tmp/hierarchy.json
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import write_json  # noqa: E402


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--laws", default="BGB,StGB,ZPO,GG")
    parser.add_argument("--cites", action="store_true", help="citation edges for the whole corpus too")
    parser.add_argument("--output", type=Path,
                        default=Path(__file__).resolve().parent / "results" / "german_hierarchy.json")
    args = parser.parse_args(argv)

    from lexir.datasets.registry import resolve_data_dir
    from lexir.jurisdictions.de.statutes import ParseError, parse_archive
    from lexir.structure.graph import build_graph

    tar = resolve_data_dir(args.data_dir) / "de" / "gesetze_markdown_all.tar.gz"
    t0 = time.perf_counter()
    acts = [a for _, a in parse_archive(tar) if not isinstance(a, ParseError)]
    t_parse = time.perf_counter() - t0
    divisions = Counter(d.level for act in acts for d in act.walk_divisions())
    with_divisions = sum(1 for act in acts if act.divisions)
    t0 = time.perf_counter()
    graph = build_graph(acts, cites=args.cites)
    t_graph = time.perf_counter() - t0
    stats = graph.stats()
    result = {
        "acts": len(acts),
        "acts_with_divisions": with_divisions,
        "divisions_by_level": dict(divisions.most_common()),
        "divisions": sum(divisions.values()),
        "corpus_graph": {"nodes": stats["nodes"], "edges": stats["edges"], "nodes_by_level": stats["nodes_by_level"]},
        "laws": {},
        "paper": {"nodes": 168_469, "edges": 240_507, "codes": 58},
    }
    wanted = [w for w in args.laws.split(",") if w]
    by_id = {a.id: a for a in acts}
    for law in wanted:
        act = by_id[law]
        g = build_graph([act])
        s = g.stats()
        result["laws"][law] = {"divisions": dict(Counter(d.level for d in act.walk_divisions()).most_common()),
                               "nodes": s["nodes"], "edges": s["edges"], "nodes_by_level": s["nodes_by_level"]}
    few = build_graph([by_id[w] for w in wanted]).stats()
    result["laws_together"] = {"nodes": few["nodes"], "edges": few["edges"]}
    print(f"{len(acts):,} acts, {with_divisions:,} with divisions; divisions by level: "
          + ", ".join(f"{k} {v:,}" for k, v in divisions.most_common()))
    print(f"corpus graph: {stats['nodes']:,} nodes, edges {stats['edges']}")
    for law, row in result["laws"].items():
        print(f"{law}: {row['nodes']:,} nodes, edges {row['edges']}; divisions {row['divisions']}")
    print(f"{'+'.join(wanted)}: {few['nodes']:,} nodes, edges {few['edges']} "
          f"(paper: 168,469 nodes, 240,507 edges over 58 codes)")
    print(f"parse (cached after the first run) {t_parse:.1f} s, corpus graph {t_graph:.1f} s wall")
    write_json(args.output, result)
    return result


if __name__ == "__main__":
    main()
