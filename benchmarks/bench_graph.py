"""Build the statute graph of the whole German corpus; time it and one-hop neighbour look-ups.

    python benchmarks/bench_graph.py [--tar PATH] [--out FOLDER] [--acts-cache FILE] [--export]

Prints parse and build times, nodes by level, edges by type, and µs per ``neighbours`` call
over 10,000 random nodes for each kind; writes ``benchmarks/results/graph_stats.json``.
"""

from __future__ import annotations

import argparse
import json
import pickle
import random
import sys
import time
import timeit
from pathlib import Path

from lexir.jurisdictions.de.statutes import iter_laws
from lexir.structure.graph import NEIGHBOUR_KINDS, StatuteGraph, build_graph
from lexir.types import Act

ROOT = Path(__file__).resolve().parents[1]
TAR = ROOT.parent / "shared" / "data" / "de" / "gesetze_markdown_all.tar.gz"


def load_acts(tar: Path, cache: Path | None) -> tuple[list[Act], float]:
    t0 = time.perf_counter()
    if cache and cache.is_file():
        with cache.open("rb") as f:
            acts = pickle.load(f)
    else:
        acts = [a for a in iter_laws(tar) if isinstance(a, Act)]
        if cache:
            cache.parent.mkdir(parents=True, exist_ok=True)
            with cache.open("wb") as f:
                pickle.dump(acts, f, protocol=pickle.HIGHEST_PROTOCOL)
    return acts, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tar", type=Path, default=TAR)
    ap.add_argument("--out", type=Path, default=Path("/tmp/lexir-bench/graph-de"))
    ap.add_argument("--acts-cache", type=Path, default=None, help="pickle of parsed acts (read or written)")
    ap.add_argument("--export", action="store_true", help="also write graph.jsonl and graph.graphml")
    ap.add_argument("--lookups", type=int, default=10_000)
    args = ap.parse_args(argv)

    acts, t_parse = load_acts(args.tar, args.acts_cache)
    print(f"acts: {len(acts)} loaded in {t_parse:.1f} s", file=sys.stderr)
    t0 = time.perf_counter()
    graph = build_graph(acts)
    t_build = time.perf_counter() - t0
    t0 = time.perf_counter()
    graph.save(args.out)
    t_save = time.perf_counter() - t0
    t0 = time.perf_counter()
    graph = StatuteGraph.load(args.out)
    t_load = time.perf_counter() - t0
    result = {"acts": len(acts), "load_acts_s": round(t_parse, 1), "build_s": round(t_build, 1),
              "save_s": round(t_save, 1), "load_s": round(t_load, 1), **graph.stats()}
    if args.export:
        for name, write in (("jsonl", graph.to_jsonl), ("graphml", graph.to_graphml)):
            t0 = time.perf_counter()
            path = write(args.out / f"graph.{name}")
            result[f"export_{name}_s"] = round(time.perf_counter() - t0, 1)
            result[f"export_{name}_mb"] = round(path.stat().st_size / 2**20, 1)

    rng = random.Random(0)
    nodes = [graph.ids[rng.randrange(len(graph))] for _ in range(args.lookups)]
    lookup = {}
    for kind in (*NEIGHBOUR_KINDS, None):
        def run(kind=kind):
            for node in nodes:
                graph.neighbours(node, kind)

        seconds = min(timeit.repeat(run, number=1, repeat=3))
        lookup[str(kind)] = round(1e6 * seconds / len(nodes), 2)
    result["neighbours_us_per_lookup"] = lookup
    print(json.dumps(result, indent=1, ensure_ascii=False))
    out = ROOT / "benchmarks" / "results" / "graph_stats.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
