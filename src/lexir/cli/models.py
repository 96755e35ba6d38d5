"""``lexir models list|use``: the versions of the models ``lexir serve --learn`` learned, and which
one a server serves (docs/service.md, "Learning while serving")."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from lexir.cli.main import CLIError, app, console, err, guarded

models_app = typer.Typer(help="Models learned while serving (lexir serve --learn): list them, serve another.",
                         no_args_is_help=True)
app.add_typer(models_app, name="models")
Models = typer.Option(None, "--models", help="Folder of the learned models (default: the cache's models/)")


def _root(models: Path | None) -> Path:
    from lexir.io.paths import cache_dir

    return models if models else cache_dir() / "models"


def _corpora(root: Path) -> str:
    """``; corpora with models: a, b`` (or that there are none), for a corpus not found under ``root``."""
    names = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    return f"; corpora with models: {', '.join(names)}" if names else " (none has models yet)"


@models_app.command("list")
@guarded
def models_list(
    corpus: str = typer.Argument(None, help="A served corpus (default: every corpus with models)"),
    models: Path = Models,
):
    """Each corpus's versions: which one is current, the verdict of the held-out comparison, its scores."""
    from lexir.learning.versions import ModelVersions

    root = _root(models)
    if corpus and not (root / corpus).is_dir():
        raise CLIError(f"no models for corpus {corpus!r} under {root}{_corpora(root)}")
    names = [corpus] if corpus else sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    if not names:
        err.print(f"no learned models under {root}", highlight=False)
        return
    for name in names:
        try:
            store = ModelVersions(root, name)
            rows, problem = store.describe(), store.pointer_problem()
        except ValueError as exc:
            raise CLIError(str(exc)) from None
        console.print(f"{name}:", highlight=False)
        if problem:
            err.print(f"[yellow]warning: {escape(problem)}[/]", highlight=False)
        for row in rows:
            if row.get("broken"):
                console.print(f"  {'*' if row['current'] else ' '} {row['version']:<6} [red]broken[/]    "
                              f"{escape(row['broken'])}", highlight=False)
                continue
            held = row["heldout"] or {}
            scores = (f"held-out {held['measure']} {held['candidate']:.4f} vs {held['served']:.4f} "
                      f"({held['served_version']}, {held['questions']} questions)") if held else ""
            trained = f"{row['questions']} questions, {row['marks']} marks of {row['judges']} judges" \
                if row["questions"] is not None and row.get("marks") is not None else \
                (f"{row['questions']} questions" if row["questions"] is not None else "no learned model")
            console.print(f"  {'*' if row['current'] else ' '} {row['version']:<6} {row['verdict'] or '-':<9} "
                          f"{row['created'] or '':<26} {trained}; {scores}".rstrip("; "), highlight=False)


@models_app.command("use")
@guarded
def models_use(
    corpus: str = typer.Argument(..., help="The corpus"),
    version: str = typer.Argument(..., help="A version (N, vN or v000N), or base (no learned model)"),
    models: Path = Models,
    wait: float = typer.Option(30.0, "--wait", help="Seconds to wait for a learner that is writing"),
):
    """Point the corpus's `current` at VERSION; a server running with --learn follows within 2 s (watch_s)."""
    from lexir.learning.model import load_model
    from lexir.learning.versions import BASE, Busy, ModelVersions

    root = _root(models)
    store = ModelVersions(root, corpus)
    if not store.folder.is_dir():  # a typo must not make a models folder
        raise CLIError(f"no models for corpus {corpus!r} under {root}{_corpora(root)}")
    try:
        version = store.normalise(version)
        if version != BASE:
            if version not in store.versions():
                raise ValueError(f"no version {version!r} of {corpus!r}; versions: "
                                 f"{', '.join([BASE, *store.versions()])}")
            load_model(store.path(version))  # refuse a version that would not load
            store.record(version)  # ... or whose learn.json does not
        with store.locked(wait) as held:
            used = held.use(version)
    except (ValueError, FileNotFoundError, Busy) as exc:
        raise CLIError(str(exc)) from None
    console.print(f"{corpus}: current -> {used}", highlight=False)
