"""Parse time of the 68 French codes (lexir.jurisdictions.fr.statutes) and of the four codes'
histories (lexir.jurisdictions.fr.history) against a bare read of the same archives.

The bare read decompresses the archive, decodes every member and splits it into lines; the parse
does that and builds every Act (divisions, articles, alinéas, items), and for the histories every
provision's versions (no cache). Goal: parse <= 10x the bare read. Usage::

    python benchmarks/bench_parse_fr.py [DATA_DIR] [--repeat 3] [--no-history]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from lexir.datasets import resolve_data_dir
from lexir.jurisdictions.fr.history import load_french_history
from lexir.jurisdictions.fr.statutes import bare_read, load_french_codes
from lexir.structure.packed import gc_paused


def best_of(repeat: int, fn) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir", nargs="?", default=None, help="the data folder (default: lexir's)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-history", action="store_true", help="the codes only")
    args = parser.parse_args()
    folder = Path(resolve_data_dir(args.data_dir)) / "fr"
    tar = folder / "codes.tar.xz"
    bare, lines = best_of(args.repeat, lambda: bare_read(tar))

    def parse():
        with gc_paused():
            return load_french_codes(tar)

    parsed, (acts, errors) = best_of(args.repeat, parse)
    articles = sum(len(a.articles) for a in acts)
    print(f"bare read (xz + decode + split): {bare:.2f} s, {lines:,} lines")
    print(f"parse: {parsed:.2f} s, {len(acts)} codes, {articles:,} articles, {len(errors)} errors")
    print(f"ratio: {parsed / bare:.1f}x (goal <= 10x)")
    if args.no_history:
        return
    history_tar = folder / "history.tar.xz"
    bare, lines = best_of(1, lambda: bare_read(history_tar))
    built, history = best_of(1, lambda: load_french_history(history_tar, folder / "versions.tsv", cache=False))
    print(f"histories, bare read: {bare:.2f} s, {lines:,} lines")
    print(f"histories, parsed and versioned: {built:.2f} s, {len(history.dates)} dates, "
          f"{len(history.parse_errors)} versions that fail to parse")
    print(f"ratio: {built / bare:.1f}x (goal <= 10x)")


if __name__ == "__main__":
    main()
