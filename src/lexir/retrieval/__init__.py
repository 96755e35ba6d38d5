"""Retrievers behind one interface, and the registry of named systems."""

from lexir.retrieval.base import Retriever, System, get_system, parse_params, register_system, system_names

__all__ = ["Retriever", "System", "get_system", "parse_params", "register_system", "system_names"]
