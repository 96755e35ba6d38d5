"""What a loaded index holds for its document ids: a JSON list of strings with an ``{id: number}``
map (how ``dense`` kept them before its format 2) against :class:`lexir.ids.DocIds` (UTF-8 bytes
and offsets; mapped from disk when loaded from an index), counted by Python's ``tracemalloc``::

    PYTHONPATH=src python benchmarks/bench_ids_memory.py /tmp/bl/de-gesetze/collection-native/docs.jsonl

Each argument is a JSONL file of documents with an ``id`` field (``bench_lucene.py`` writes one per
set, ``collection-native/docs.jsonl``).
"""

from __future__ import annotations

import argparse
import gc
import json
import tracemalloc

from lexir.ids import DocIds


def held(make) -> tuple[float, object]:
    """MiB that ``make()``'s result holds once made (tracemalloc), and the result."""
    gc.collect()
    tracemalloc.start()
    made = make()
    gc.collect()
    size = tracemalloc.get_traced_memory()[0] / 2**20
    tracemalloc.stop()
    return size, made


def listed_with_map(text: str) -> tuple[list[str], dict[str, int]]:
    """The ids as a JSON list parsed, and their ``{id: number}`` map."""
    ids = json.loads(text)
    return ids, {d: i for i, d in enumerate(ids)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    for path in args.files:
        with open(path, encoding="utf-8") as fh:
            text = json.dumps([json.loads(line)["id"] for line in fh])
        listed, _ = held(lambda text=text: listed_with_map(text))
        packed, packed_ids = held(lambda text=text: DocIds.of(json.loads(text)))
        print(json.dumps({"file": path, "ids": len(packed_ids), "json_list_and_map_mib": round(listed, 1),
                          "doc_ids_mib": round(packed, 1), "doc_ids_arrays_mib": round(packed_ids.nbytes / 2**20, 1)}))


if __name__ == "__main__":
    main()
