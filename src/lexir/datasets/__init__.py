"""Datasets: a registry of named datasets, and loaders for corpora and queries given by path."""

from lexir.datasets.registry import (
    DataFile,
    Dataset,
    DatasetError,
    get,
    load,
    names,
    register,
    resolve_data_dir,
)

__all__ = ["DataFile", "Dataset", "DatasetError", "get", "load", "names", "register", "resolve_data_dir"]
