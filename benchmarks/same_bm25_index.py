"""Whether two saved lexir BM25 indexes are the same, file by file: the score matrix's arrays
(data, indices, indptr, and the scores of absence where there are some) equal in dtype, shape
and bytes, and the vocabulary, parameters and ``lexir.json`` equal byte for byte. Used to check
that a change to the build leaves its output alone (issue #29: the old build's index, saved
aside, against the new one's)::

    PYTHONPATH=src python benchmarks/same_bm25_index.py /tmp/old/index-lexir /tmp/bl-mem/de-units/index-lexir

Exits 0 when everything is identical, 1 otherwise.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ARRAYS = ("data.csc.index.npy", "indices.csc.index.npy", "indptr.csc.index.npy", "nonoccurrence_array.index.npy")
TEXTS = ("vocab.index.json", "params.index.json", "lexir.json")


def current(folder: Path) -> Path:
    """The folder's current generation (lexir.io.generations), or the folder itself."""
    marker = folder / "lexir-current.json"
    return folder / json.loads(marker.read_text(encoding="utf-8"))["folder"] if marker.exists() else folder


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        raise SystemExit("usage: same_bm25_index.py OLD_INDEX NEW_INDEX")
    a, b = (current(Path(x)) for x in args)
    same = True
    for name in ARRAYS:
        if not (a / name).exists() and not (b / name).exists():
            continue
        if not ((a / name).exists() and (b / name).exists()):
            print(f"{name}: in one index only")
            same = False
            continue
        x, y = np.load(a / name), np.load(b / name)
        equal = x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
        print(f"{name}: {x.dtype}{x.shape} and {y.dtype}{y.shape}: {'identical' if equal else 'DIFFERENT'}")
        same &= equal
    for name in TEXTS:
        equal = (a / name).read_bytes() == (b / name).read_bytes()
        print(f"{name}: {'identical bytes' if equal else 'DIFFERENT'}")
        same &= equal
    print("identical" if same else "DIFFERENT")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
