"""Model folders: what ``lexir train`` writes and ``model=DIR`` reads.

A model folder holds ``lexir-model.json`` (the manifest) and ``questions.jsonl`` (the training
questions with the provisions judged relevant to them, which the trained systems index). The
manifest records what the model was trained on: the system, its chosen parameters, the corpus
fingerprint, the training queries' ids, the sha256 of each one's normalised text, a fingerprint
of the judgements, the lexir version and the date. A run over queries whose texts the model was
trained on is caught by those text fingerprints (:meth:`Model.seen`).

The folder is written beside its final place and renamed into it (:func:`write_model`), so a
crash leaves either no folder or a complete one; an existing folder is never overwritten.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any

from lexir.types import Qrels, Query

FORMAT = 1
MANIFEST = "lexir-model.json"
QUESTIONS = "questions.jsonl"


def normalise_text(text: str) -> str:
    """What a query text is fingerprinted as: NFKC, case-folded, whitespace collapsed."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text).casefold()).strip()


def text_fingerprint(text: str) -> str:
    """sha256 of :func:`normalise_text`: the same question, however spaced or cased, matches."""
    return hashlib.sha256(normalise_text(text).encode("utf-8")).hexdigest()


def qrels_fingerprint(qrels: Qrels) -> str:
    """sha256 of the judgements, sorted (query, document, grade) triples."""
    rows = sorted((q, d, int(g)) for q, docs in qrels.items() for d, g in docs.items())
    return hashlib.sha256(json.dumps(rows, ensure_ascii=False).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class TrainingQuestion:
    id: str
    text: str
    relevant: Mapping[str, int]


@dataclass(frozen=True)
class Model:
    """A loaded model folder: its manifest and training questions (do not mutate)."""

    folder: Path
    manifest: Mapping[str, Any]
    questions: tuple[TrainingQuestion, ...]

    @property
    def system(self) -> str:
        return self.manifest["system"]

    @property
    def params(self) -> Mapping[str, Any]:
        return self.manifest["params"]

    @property
    def digest(self) -> str:
        """sha256 of the manifest file: names this model's content in cache keys."""
        return hashlib.sha256((self.folder / MANIFEST).read_bytes()).hexdigest()

    def seen(self, queries: Iterable[Query]) -> list[str]:
        """The ids of the ``queries`` whose normalised text the model was trained on."""
        trained = self.trained_texts
        return [q.id for q in queries if text_fingerprint(q.text) in trained]

    @cached_property
    def trained_texts(self) -> frozenset[str]:
        return frozenset(self.manifest["training"]["text_sha256"])


def manifest_for(system: str, params: Mapping[str, Any], *, corpus, queries: Sequence[Query], qrels: Qrels,
                 data: Mapping[str, Any], extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The manifest of a model of ``system`` trained on ``queries`` (judged by ``qrels``) over ``corpus``."""
    from lexir._version import __version__

    fingerprints = [text_fingerprint(q.text) for q in queries]
    judged = {q.id: dict(qrels.get(q.id, {})) for q in queries}
    return {
        "format": FORMAT,
        "kind": "lexir-model",
        "system": system,
        "params": dict(params),
        "language": corpus.language,
        "corpus": {"name": corpus.name, "fingerprint": corpus.fingerprint, "documents": len(corpus)},
        "training": {
            "data": dict(data),
            "queries": len(queries),
            "query_ids": [q.id for q in queries],
            "text_sha256": fingerprints,
            "text_sha256_digest": hashlib.sha256("\n".join(sorted(fingerprints)).encode()).hexdigest(),
            "qrels_sha256": qrels_fingerprint(judged),
            "judgements": sum(len(d) for d in judged.values()),
        },
        "lexir_version": __version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        **dict(extra or {}),
    }


def write_model(folder: str | Path, manifest: Mapping[str, Any], questions: Sequence[TrainingQuestion],
                files: Mapping[str, bytes] | None = None) -> Path:
    """Write a model folder atomically: into a temporary folder beside ``folder``, then renamed
    to it. An existing ``folder`` (even empty) is refused, never overwritten. ``files``: other
    files of the model (name -> content); the manifest records each one's sha256 and
    :func:`load_model` checks it."""
    folder = Path(folder)
    if folder.exists():
        raise FileExistsError(f"{folder} already exists: remove it or choose another --output")
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.tmp-", dir=folder.parent))
    try:
        with open(tmp / QUESTIONS, "w", encoding="utf-8") as out:
            for q in questions:
                out.write(json.dumps({"id": q.id, "text": q.text, "relevant": dict(q.relevant)},
                                     ensure_ascii=False) + "\n")
        manifest = {**manifest, "files": {name: hashlib.sha256(data).hexdigest() for name, data in (files or {}).items()}}
        for name, data in (files or {}).items():
            (tmp / name).write_bytes(data)
        (tmp / MANIFEST).write_text(json.dumps(manifest, ensure_ascii=False, indent=1), encoding="utf-8")
        for path in (tmp / QUESTIONS, tmp / MANIFEST, *(tmp / name for name in files or {})):
            with open(path, "rb") as handle:
                os.fsync(handle.fileno())
        os.rename(tmp, folder)  # fails (and we clean up) if someone created folder meanwhile
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return folder


WEIGHTS = ("field", "neighbours", "prior")  # the weights every model has (params and a recall stage)
OPTIONAL_WEIGHTS = ("joint", "dense_neighbours", "adapter", "expansion")  # absent: 0


def check_params(params: Any, where: Path | str) -> None:
    """A manifest's ``params`` as the trained systems read them: a ValueError naming ``where``
    (the manifest file) and the field that is missing or of the wrong kind."""
    if not isinstance(params, dict):
        raise ValueError(f"{where}: field 'params' is not an object")
    if not isinstance(params.get("base"), str) or not params["base"].strip():
        raise ValueError(f"{where}: field 'params.base' (the base system's spec) is missing or empty")
    if "depth" in params:
        _whole(params["depth"], "params.depth", where)
    _check_weights(params, "params", where)
    recall = params.get("recall") or {}
    if not isinstance(recall, dict):
        raise ValueError(f"{where}: field 'params.recall' is not an object")
    if recall:
        _check_weights(recall, "params.recall", where)
    for key in ("ranker", "dense", "adapter_file"):
        if not isinstance(params.get(key, ""), str):
            raise ValueError(f"{where}: field 'params.{key}' is not text")
    uses_dense = any(_number(w.get(k, 0), "", where) for w in (params, recall) for k in ("dense_neighbours", "adapter"))
    if uses_dense:
        for key in ("dense", "adapter_file"):
            if not params.get(key):
                raise ValueError(f"{where}: field 'params.{key}' is empty, but the dense weights are not 0")


def _check_weights(values: Mapping[str, Any], prefix: str, where: Path | str) -> None:
    for key in WEIGHTS:
        if key not in values:
            raise ValueError(f"{where}: missing field '{prefix}.{key}'")
        _number(values[key], f"{prefix}.{key}", where)
    for key in OPTIONAL_WEIGHTS:
        if key in values:
            _number(values[key], f"{prefix}.{key}", where)
    if "k" not in values:
        raise ValueError(f"{where}: missing field '{prefix}.k'")
    _whole(values["k"], f"{prefix}.k", where)


def _number(value: Any, field: str, where: Path | str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if isinstance(value, bool) or number != number or number in (float("inf"), float("-inf")):
        raise ValueError(f"{where}: field {field!r} must be a number, not {value!r}")
    return number


def _whole(value: Any, field: str, where: Path | str) -> int:
    try:
        number = int(value) if not isinstance(value, float) or value.is_integer() else None
    except (TypeError, ValueError):
        number = None
    if isinstance(value, bool) or number is None or number < 1:
        raise ValueError(f"{where}: field {field!r} must be a whole number of at least 1, not {value!r}")
    return number


def load_model(folder: str | Path) -> Model:
    """A model folder, checked: its manifest's format, and its questions against the manifest's
    fingerprints (a hand-edited or half-copied folder is refused, naming the file)."""
    folder = Path(folder)
    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        raise FileNotFoundError(f"{folder} is not a lexir model folder (no {MANIFEST}; write one with lexir train)")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{manifest_path}: not JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(manifest, dict) or manifest.get("kind") != "lexir-model":
        raise ValueError(f"{manifest_path}: not a lexir model manifest")
    if manifest.get("format") != FORMAT:
        raise ValueError(f"{manifest_path}: model format {manifest.get('format')} is not {FORMAT}; train it again")
    for key in ("system", "params", "training", "language"):
        if key not in manifest:
            raise ValueError(f"{manifest_path}: missing field {key!r}")
    check_params(manifest["params"], manifest_path)
    training = manifest["training"]
    for key in ("query_ids", "text_sha256"):
        if not isinstance(training, dict) or not isinstance(training.get(key), list):
            raise ValueError(f"{manifest_path}: field 'training.{key}' is missing or not a list")
    questions = []
    path = folder / QUESTIONS
    if not path.is_file():
        raise FileNotFoundError(f"{folder}: no {QUESTIONS} (the model folder is incomplete)")
    with open(path, encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                questions.append(TrainingQuestion(str(row["id"]), str(row["text"]),
                                                  {str(d): int(g) for d, g in row["relevant"].items()}))
            except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
                raise ValueError(f"{path}, line {lineno}: not a training question ({exc})") from None
    for name, digest in manifest.get("files", {}).items():
        path = folder / name
        if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            raise ValueError(f"{path}: missing or changed since the model was written (sha256 in {MANIFEST})")
    path = folder / QUESTIONS
    if [q.id for q in questions] != list(manifest["training"]["query_ids"]) or \
            [text_fingerprint(q.text) for q in questions] != list(manifest["training"]["text_sha256"]):
        raise ValueError(f"{path}: its questions do not match {MANIFEST}'s ids and text fingerprints")
    return Model(folder.resolve(), manifest, tuple(questions))
