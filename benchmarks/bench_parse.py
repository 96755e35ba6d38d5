"""Parsing all 6,636 German laws into the full hierarchy, and the statute graph over them.

Each figure is wall and CPU seconds (harness.py); CPU well below wall x workers means other
processes competed for the machine. Rows:

* ``stream``: ``iter_law_files`` in one process (the consumer keeps every act, as a corpus does);
* ``parallel``: ``parse_archive(cache=False)`` with ``--workers`` processes (default: every CPU);
  the acts are checked identical, in the same order, to the streamed ones;
* ``cached``: ``parse_archive`` reading the parse cache (written by a first cached call, untimed);
* ``graph``: ``build_graph`` over the parsed acts in one process and with ``--workers``
  (``--graph``; the same nodes and edges checked).

    python benchmarks/bench_parse.py                 # about 1.5 minutes on an idle 2-core machine
    python benchmarks/bench_parse.py --graph --output /tmp/parse.json
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import Clock, load_note, write_json  # noqa: E402


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--graph", action="store_true", help="also time the statute graph")
    parser.add_argument("--output", type=Path, default=Path(__file__).resolve().parent / "results" / "parse.json")
    args = parser.parse_args(argv)

    import numpy as np

    from lexir.datasets.registry import resolve_data_dir
    from lexir.jurisdictions.de.statutes import ParseError, iter_law_files, parse_archive
    from lexir.structure.packed import available_cpus

    tar = resolve_data_dir(args.data_dir) / "de" / "gesetze_markdown_all.tar.gz"
    workers = args.workers or available_cpus()
    out: dict = {"workers": workers, "load_at_start": load_note()}

    def report(name: str, clock: Clock, extra: str = "") -> None:
        out[name] = {"wall": clock.wall[-1], "cpu_this_process": clock.cpu[-1],
                     "cpu_workers": clock.children_cpu[-1]}
        print(f"{name:>9}: {clock.wall[-1]:6.1f} s wall, {clock.cpu[-1]:6.1f} s CPU in this process, "
              f"{clock.children_cpu[-1]:5.1f} s in workers {extra}", flush=True)

    clock = Clock()
    stream = clock(lambda: list(iter_law_files(tar)))
    report("stream", clock, f"({len(stream):,} laws)")
    clock = Clock()
    parallel = clock(lambda: parse_archive(tar, workers=workers, cache=False))
    same = parallel == stream
    report("parallel", clock, f"({workers} workers; identical to stream: {same})")
    out["parallel"]["identical"] = same
    del stream

    with tempfile.TemporaryDirectory(prefix="lexir-parse-cache-") as folder:
        os.environ["LEXIR_CACHE"] = folder
        parse_archive(tar, workers=workers)  # writes the cache
        clock = Clock()
        cached = clock(lambda: parse_archive(tar))
        report("cached", clock, f"(identical: {cached == parallel})")
        out["cached"]["identical"] = cached == parallel
        del cached

    if args.graph:
        from lexir.structure.graph import build_graph

        acts = [a for _, a in parallel if not isinstance(a, ParseError)]
        graphs = {}
        for n in (1, workers):
            clock = Clock()
            graphs[n] = clock(lambda n=n: build_graph(acts, workers=n))
            report(f"graph-{n}", clock, str(graphs[n].stats()["edges"]))
        one, many = graphs[1], graphs[workers]
        out["graph_identical"] = bool(one.ids == many.ids and np.array_equal(one.cites_src, many.cites_src)
                                      and np.array_equal(one.cites_dst, many.cites_dst))
        print(f"graph identical across workers: {out['graph_identical']}")
    out["load_at_end"] = load_note()
    print(out["load_at_end"])
    write_json(args.output, out, indent=2)
    return out


if __name__ == "__main__":
    main()
