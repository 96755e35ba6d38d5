"""Datasets: a registry of named datasets and :func:`open`, the one door to data (a registered
name, ``NAME@DATE`` or a path), and :func:`stream`, a corpus file read as a build needs it."""

from lexir.datasets.generic import load_queries, open, stream
from lexir.datasets.registry import (
    DataFile,
    Dataset,
    DatasetError,
    get,
    is_path,
    names,
    register,
    register_pattern,
    resolve_data_dir,
    split_dated,
    with_as_of,
)

__all__ = ["DataFile", "Dataset", "DatasetError", "get", "is_path", "load_queries", "names", "open", "register",
           "register_pattern", "resolve_data_dir", "split_dated", "stream", "with_as_of"]
