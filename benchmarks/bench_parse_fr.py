"""Parse time of the 68 French codes (lexir.jurisdictions.fr.statutes) against a bare read.

The bare read decompresses ``codes.tar.xz``, decodes every member and splits it into lines; the
parse does that and builds every Act (divisions, articles, alinéas, items). Goal: parse <= 10x
the bare read. Usage::

    PYTHONPATH=src python benchmarks/bench_parse_fr.py [/work/shared/data/fr/codes.tar.xz] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

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
    parser.add_argument("tar", nargs="?", default="/work/shared/data/fr/codes.tar.xz")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    bare, lines = best_of(args.repeat, lambda: bare_read(args.tar))

    def parse():
        with gc_paused():
            return load_french_codes(args.tar)

    parsed, (acts, errors) = best_of(args.repeat, parse)
    articles = sum(len(a.articles) for a in acts)
    print(f"bare read (xz + decode + split): {bare:.2f} s, {lines:,} lines")
    print(f"parse: {parsed:.2f} s, {len(acts)} codes, {articles:,} articles, {len(errors)} errors")
    print(f"ratio: {parsed / bare:.1f}x (goal <= 10x)")


if __name__ == "__main__":
    main()
