"""``greekbar``: GreekBarRetrieval, the Greek paper's benchmark, from a local copy of its dataset
repository in the Hugging Face hub's layout (MTEB/BEIR style). It is not downloaded by lexir.

The repository has four subsets, each with a ``test`` split:

* ``corpus`` - ``id``, ``text`` (6,308 articles; ids ``SOURCE::ARTICLE`` from 23 sources, e.g.
  ``CivC::11``), optionally ``title``;
* ``queries`` - ``id``, ``text`` (the case facts, a blank line, then the question);
* ``qrels`` - ``query-id``, ``corpus-id``, ``score``;
* ``greekbarbench`` - the full records joined by the same ``id``: ``area``, ``date``, ``number``,
  ``answer`` (and more), kept as each query's metadata (``lexir stats greekbar`` counts per area).

A subset's split is read from the first of ``SUBSET/SPLIT-*.parquet`` (the hub's files, e.g.
``corpus/test-00000-of-00001.parquet``), ``SUBSET/SPLIT/*.parquet``, ``SUBSET/SPLIT.parquet``,
``SUBSET/SPLIT.jsonl``, ``SUBSET/SPLIT.json`` and ``SUBSET.jsonl`` / ``SUBSET.json`` /
``SUBSET.parquet`` beside them; qrels may also be BEIR's ``qrels/test.tsv``. Parquet needs
``pyarrow`` (extra ``parquet``); JSON (an array of records) and JSON lines need nothing.

The copy is looked for at ``DATA_DIR/el/greekbar`` (``--data-dir`` / ``$LEXIR_DATA``), or loaded
from any folder with :func:`load_greekbar`. When it is missing, the error says what to get and
where to put it.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from lexir.datasets.registry import Dataset, DatasetError, register
from lexir.types import Act, Benchmark, Corpus, Document, Provision, Query, QuerySet

NAME = "greekbar"
FOLDER = Path("el") / "greekbar"
REVISION = "v2.0"
SUBSETS = ("corpus", "queries", "qrels", "greekbarbench")
_FIELDS = {"corpus": ("id", "text"), "queries": ("id", "text"), "qrels": ("query-id", "corpus-id", "score"),
           "greekbarbench": ("id",)}
# The records' metadata kept on each query (the rest of greekbarbench's columns, such as the
# chapters given to the model, are large and not what retrieval or its statistics need).
META = ("area", "date", "number", "answer")


def what_to_download(folder: Path) -> str:
    return (f"GreekBarRetrieval is not at {folder}. Download its dataset repository from the Hugging Face "
            f"hub at revision {REVISION} (the one the authors' quickstart notebook loads), e.g. "
            f"`huggingface-cli download <repository> --repo-type dataset --revision {REVISION} "
            f"--local-dir {folder}`, so that {folder} holds the subsets {', '.join(s + '/' for s in SUBSETS)} "
            "each with its test split (the hub's parquet files, or JSON / JSONL records); or point "
            "--data-dir / LEXIR_DATA at a folder that has el/greekbar, or load another folder with "
            "lexir.jurisdictions.el.greekbar.load_greekbar(PATH).")


def find_split(folder: Path, subset: str, split: str = "test") -> list[Path]:
    """The files holding ``subset``'s ``split`` in ``folder`` (module docstring), or []."""
    base = folder / subset
    candidates = [sorted(base.glob(f"{split}-*.parquet")), sorted((base / split).glob("*.parquet"))]
    names = [base / f"{split}.parquet", base / f"{split}.jsonl", base / f"{split}.json",
             folder / f"{subset}.jsonl", folder / f"{subset}.json", folder / f"{subset}.parquet"]
    if subset == "qrels":
        names.append(base / f"{split}.tsv")
    candidates += [[p] for p in names if p.is_file()]
    return next((found for found in candidates if found), [])


def read_records(path: Path) -> list[dict[str, Any]]:
    """The rows of a parquet, JSON (an array of objects) or JSON lines file, or a qrels TSV."""
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise DatasetError(f"{path}: reading parquet needs pyarrow: pip install 'lexir[parquet]' "
                               "(or use the dataset's JSON / JSONL files)") from None
        try:
            return pq.read_table(path).to_pylist()
        except Exception as exc:  # noqa: BLE001 - pyarrow's errors are many; name the file
            raise DatasetError(f"{path}: not a readable parquet file ({exc})") from None
    text = path.read_text(encoding="utf-8")
    if suffix == ".tsv":
        return _qrels_tsv(path, text)
    if suffix == ".json":
        try:
            rows = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}:{exc.lineno}: invalid JSON ({exc.msg})") from None
        if isinstance(rows, dict) and isinstance(rows.get("rows"), list):  # the hub's viewer export
            rows = [r.get("row", r) for r in rows["rows"]]
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise DatasetError(f"{path}: expected a JSON array of objects")
        return rows
    rows = []
    for line_no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}:{line_no}: invalid JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise DatasetError(f"{path}:{line_no}: expected a JSON object")
        rows.append(row)
    return rows


def _qrels_tsv(path: Path, text: str) -> list[dict[str, Any]]:
    rows = []
    for line_no, line in enumerate(text.splitlines(), 1):
        cells = line.rstrip("\n").split("\t")
        if not line.strip() or (line_no == 1 and cells[0] in ("query-id", "query_id")):
            continue
        if len(cells) != 3:
            raise DatasetError(f"{path}:{line_no}: expected query-id, corpus-id, score; got {len(cells)} fields")
        rows.append({"query-id": cells[0], "corpus-id": cells[1], "score": cells[2]})
    return rows


def _subset(folder: Path, subset: str, split: str, required: bool = True) -> list[dict[str, Any]]:
    files = find_split(folder, subset, split)
    if not files:
        if not required:
            return []
        if not any((folder / s).exists() or find_split(folder, s, split) for s in SUBSETS):
            raise DatasetError(f"dataset {NAME!r}: {what_to_download(folder)}")
        raise DatasetError(f"dataset {NAME!r}: {folder} has no {split} split of subset {subset!r} "
                           f"(looked for {subset}/{split}-*.parquet, {subset}/{split}.jsonl, {subset}/{split}.json, "
                           f"{subset}.jsonl ...); {what_to_download(folder)}")
    rows: list[dict[str, Any]] = []
    for path in files:
        for i, row in enumerate(read_records(path), 1):
            missing = [f for f in _FIELDS[subset] if row.get(f) in (None, "")]
            if missing:
                raise DatasetError(f"{path}: row {i} has no {missing[0]!r} (subset {subset} needs "
                                   f"{', '.join(_FIELDS[subset])})")
            rows.append(row)
    return rows


def load_greekbar(folder: str | Path, split: str = "test", name: str = NAME) -> Benchmark:
    """The benchmark in a local copy of the GreekBarRetrieval repository (module docstring)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise DatasetError(f"dataset {NAME!r}: {what_to_download(folder)}")
    docs, acts = _corpus(folder, split)
    corpus = Corpus(name, docs, language="el", acts=acts, jurisdiction="el")
    records = {str(r["id"]): r for r in _subset(folder, "greekbarbench", split, required=False)}
    qrels_rows = _subset(folder, "qrels", split)
    gold: dict[str, dict[str, int]] = {}
    for row in qrels_rows:
        try:
            grade = int(float(row["score"]))
        except (TypeError, ValueError):
            raise DatasetError(f"dataset {NAME!r}: qrels score {row['score']!r} of query {row['query-id']} "
                               "is not a number") from None
        gold.setdefault(str(row["query-id"]), {})[str(row["corpus-id"])] = grade
    queries, qrels, dropped = [], {}, []
    for row in _subset(folder, "queries", split):
        qid = str(row["id"])
        record = records.get(qid, {})
        meta = {key: record[key] for key in META if record.get(key) not in (None, "")}
        judged = gold.get(qid, {})
        absent = sorted(d for d in judged if d not in corpus)
        kept = {d: g for d, g in judged.items() if d in corpus}
        if not judged:
            dropped.append((qid, "no qrels", ""))
        elif not any(g > 0 for g in kept.values()):
            dropped.append((qid, "article not in corpus", ", ".join(absent)))
        else:  # kept; a gold article the corpus lacks is reported, not silently dropped
            dropped.extend((qid, "citation: article not in corpus", doc_id) for doc_id in absent)
            queries.append(Query(qid, str(row["text"]), meta))
            qrels[qid] = kept
    unknown = sorted(set(gold) - {q.id for q in queries} - {qid for qid, _, _ in dropped})
    if unknown:
        raise DatasetError(f"dataset {NAME!r}: qrels name queries that the queries subset lacks: "
                           f"{', '.join(unknown[:10])}")
    query_set = QuerySet(name, queries, qrels, dropped, {split: [q.id for q in queries]})
    return Benchmark(corpus, query_set)


def _corpus(folder: Path, split: str) -> tuple[list[Document], list[Act]]:
    docs, by_source, order = [], {}, []
    for row in _subset(folder, "corpus", split):
        doc_id = str(row["id"]).strip()
        source, sep, article = doc_id.partition("::")
        if not sep or not source or not article:
            raise DatasetError(f"dataset {NAME!r}: corpus id {doc_id!r} is not SOURCE::ARTICLE")
        title = str(row.get("title") or "")
        docs.append(Document(doc_id, str(row["text"]), title))
        if source not in by_source:
            by_source[source] = []
            order.append(source)
        by_source[source].append(Provision(doc_id, "article", article, str(row["text"]), title))
    seen = Counter(d.id for d in docs)
    twice = [i for i, n in seen.items() if n > 1]
    if twice:
        raise DatasetError(f"dataset {NAME!r}: corpus id {twice[0]!r} occurs {seen[twice[0]]} times")
    return docs, [Act(source, source, "el", by_source[source]) for source in order]


def _load(data_dir: Path) -> Benchmark:
    return load_greekbar(data_dir / FOLDER)


register(Dataset(NAME, "GreekBarRetrieval: Greek bar exam questions (case facts + question) over 6,308 articles "
                 "of 23 sources; a local copy of its hub repository under el/greekbar (parquet or JSON)",
                 "el", _load, ("docs", "queries", "qrels"), folder=FOLDER.as_posix()))
