"""Commands and options for scale: ``lexir encode`` and the ``--backend ray`` of experiment and annotate."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import typer

from lexir.cli.main import (
    Address,
    Backend,
    CLIError,
    DataDir,
    Params,
    app,
    console,
    err,
    guarded,
    progress_bar,
    warn,
)

BACKENDS = ("local", "ray")


def _use_ray(backend: str) -> bool:
    """True for ``ray`` (checking that it is installed), False for ``local``; else a clear error."""
    if backend not in BACKENDS:
        raise CLIError(f"unknown backend {backend!r}; valid: {', '.join(BACKENDS)}")
    if backend == "local":
        return False
    from lexir.distributed import RayMissing, require_ray

    try:
        require_ray()
    except RayMissing as exc:
        raise CLIError(str(exc)) from None
    return True


def cell_backend(backend: str, address: str | None, log: Callable[[str], None]):
    """The experiment hook for ``--backend`` (None: cells run here, one after another)."""
    if not _use_ray(backend):
        if address:
            raise CLIError("--address needs --backend ray")
        return None
    from lexir.distributed import ray_cells

    return ray_cells(address, log)


def annotation_runner(backend: str, address: str | None):
    """The annotation runner for ``--backend`` (None: the client's own threads)."""
    if not _use_ray(backend):
        if address:
            raise CLIError("--address needs --backend ray")
        return None
    from lexir.distributed import RayAnnotator

    return RayAnnotator(address)


@app.command()
@guarded
def encode(
    corpus: str = typer.Argument(..., help="Registered dataset or path (BEIR folder, JSONL, code JSON)"),
    system: str = typer.Option("dense", "--system", help="A dense system: dense | dense-rocchio"),
    params: list[str] = Params,
    output: Path = typer.Option(None, "--output", "-o", help="Also save the index to this folder"),
    language: str = typer.Option(None, "--language", help="Corpus language (for a corpus given by path)"),
    backend: str = Backend,
    address: str = Address,
    actors: int = typer.Option(None, "--actors", help="Ray: encoder actors (default: cluster CPUs / threads)"),
    data_dir: Path = DataDir,
):
    """Encode a corpus for dense retrieval into the embedding cache and build its index (cached).

    With --backend ray the chunks the cache lacks are encoded by Ray actors; the index that
    follows is the one a local build writes, from the same vectors.
    """
    from lexir.datasets import open as open_data
    from lexir.retrieval.base import get_system, parse_params
    from lexir.retrieval.build import index_folder

    definition = get_system(system)
    if not {"encoder", "chunk_words", "threads"} <= set(definition.defaults):
        raise CLIError(f"{system!r} is not a dense system; encode builds dense or dense-rocchio")
    resolved = definition.resolve(parse_params(params))
    corp = open_data(corpus, language=language, data_dir=data_dir, notify=warn, want="corpus")
    if _use_ray(backend):
        if not resolved["cache"]:
            raise CLIError("--backend ray fills the embedding cache; drop -p cache=false")
        from lexir.distributed import encode_missing

        with progress_bar(f"encoding {corp.name} on Ray", len(corp)) as advance:
            stats = encode_missing(corp, resolved, address=address, actors=actors, progress=advance)
        err.print(f"{stats['chunks']} chunks: {stats['cached']} already in the embedding cache, "
                  f"{stats['encoded']} encoded on Ray", highlight=False)
    elif address:
        raise CLIError("--address needs --backend ray")
    from lexir.cli.main import _retriever

    retriever = _retriever(corp, system, params)
    where = index_folder(definition.name, resolved, corp)
    if output is not None:
        retriever.save(output)
        where = output
    console.print(f"{len(corp)} articles, {len(retriever.chunk_doc)} chunks of {retriever.encoder.name} "
                  f"({retriever.encoder.dim}-d) -> {where}", highlight=False)
