"""``lexir show``, ``lexir diff`` and ``lexir index update``: provisions through time.

``show`` prints a provision as it stood on a date (default: the latest), ``diff`` what
changed between two dates, word by word; ``index update`` moves a saved updatable index
(``lexir index CORPUS --as-of D``) to another date, applying only the provisions that changed.
The ``index`` command becomes a group whose default is building (``lexir index CORPUS -o DIR``
as before), with ``update`` beside it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import click
import typer
from typer.core import TyperGroup

from lexir.cli.main import CLIError, DataDir, app, console, guarded
from lexir.cli.main import index as index_build


def _history(corpus: str, data_dir):
    from lexir.datasets import open as open_data
    from lexir.datasets import registry

    name, day = registry.split_dated(corpus)
    if day:
        raise CLIError(f"give the date with --as-of, not in the name ({corpus})")
    loaded = open_data(name, data_dir=data_dir)
    if not hasattr(loaded, "version"):
        dated = [n for n in registry.names() if registry.get(n).has("history")]
        raise CLIError(f"dataset {name!r} has no history of provision versions; datasets with one: "
                       f"{', '.join(dated)}")
    return loaded


def _has_history(corpus: str) -> bool:
    from lexir.datasets import is_path, registry

    if is_path(corpus):
        return False
    name, _ = registry.split_dated(corpus)
    return name in registry.names() and registry.get(name).has("history")


def _show_unit(corpus: str, unit_id: str, fmt: str, data_dir) -> None:
    """``lexir show`` over a corpus without versions: the unit as parsed, its breadcrumbs (act,
    divisions, provisions) and what it contains (a division: its divisions and articles)."""
    from lexir.citations.format import division_heading, find_unit, format_citation, unit_breadcrumbs
    from lexir.cli.main import warn
    from lexir.datasets import open as open_data
    from lexir.jurisdiction import code_of
    from lexir.types import Division, act_of

    corp = open_data(corpus, data_dir=data_dir, notify=warn, want="corpus")
    act = corp.acts.get(act_of(unit_id))
    unit = find_unit(act, unit_id) if act is not None else None
    if unit is None:
        raise CLIError(f"no provision or division {unit_id!r} in {corp.name}")
    crumbs = [c["label"] for c in unit_breadcrumbs(act, unit_id, code_of(corp))]
    if isinstance(unit, Division):
        articles = {a.id: a for a in act.articles}
        contents = [{"id": d.id, "label": division_heading(d)} for d in unit.children]
        contents += [{"id": a, "label": format_citation(a, code_of(corp), articles[a].level),
                      "title": articles[a].title} for a in unit.articles if a in articles]
        citation, title, text = division_heading(unit), unit.title, ""
    else:
        level = next((a.level for a in act.articles if a.id == unit_id.split("/", 1)[0]), "article")
        contents = [{"id": c.id, "label": format_citation(c.id, code_of(corp), level)} for c in unit.children]
        citation, title, text = format_citation(unit_id, code_of(corp), level), unit.title, unit.text
    if fmt == "json":
        print(json.dumps({"id": unit_id, "citation": citation, "title": title, "path": crumbs, "text": text,
                          "contents": contents}, ensure_ascii=False))
        return
    console.print(" › ".join(crumbs), markup=False, highlight=False)
    head = citation if isinstance(unit, Division) else f"{citation} {title}".rstrip()
    console.print(head, markup=False, highlight=False, style="bold")
    if text:
        console.print(text, markup=False, highlight=False)
    elif contents:
        for item in contents:
            console.print(f"  {item['label']} {item.get('title', '')}".rstrip(), markup=False, highlight=False)


@app.command()
@guarded
def show(
    corpus: str = typer.Argument(..., help="Any corpus; --as-of and versions need one with a history (de-gesetze-history)"),
    provision: str = typer.Argument(..., help="Provision id (BGB::823, BGB::823/abs:1), division id "
                                    "(BGB::buch:2/abschnitt:8) or a version (BGB::823@2013-01-11)"),
    as_of: str = typer.Option(None, "--as-of", help="The version in force on this date (default: the latest)"),
    fmt: str = typer.Option("text", "--format", help="text | json"),
    data_dir: Path = DataDir,
):
    """Print a provision as it stood on a date, with its validity and where its text comes from; in
    a corpus without a history, the provision (or division) with its breadcrumbs and contents."""
    if fmt not in ("text", "json"):
        raise CLIError(f"unknown format {fmt!r}; valid: text, json")
    if not as_of and "@" not in provision and not _has_history(corpus):
        _show_unit(corpus, provision, fmt, data_dir)
        return
    history = _history(corpus, data_dir)
    if "@" in provision:
        if as_of:
            raise CLIError(f"{provision} names its version; drop --as-of")
        version = history.lookup(provision)
    else:
        version = history.version(provision, as_of)
    if fmt == "json":
        print(json.dumps({"id": version.id, "version": version.version, "valid_from": version.valid_from,
                          "valid_to": version.valid_to, "title": version.title, "text": version.text,
                          "path": version.source}, ensure_ascii=False))
        return
    until = f"until {version.valid_to} (exclusive)" if version.valid_to else "still in force in the latest version"
    console.print(f"[bold]{version.version}[/] {version.title}".rstrip(), highlight=False)
    console.print(f"[dim]in force from {version.valid_from}, {until}; text of {version.source}[/]", highlight=False)
    console.print(version.text, markup=False, highlight=False)


@app.command()
@guarded
def diff(
    corpus: str = typer.Argument(..., help="A dataset with a history (de-gesetze-history)"),
    provision: str = typer.Argument(..., help="Provision id, e.g. BGB::312g"),
    old: str = typer.Option(..., "--from", help="Earlier date (YYYY-MM-DD)"),
    new: str = typer.Option(..., "--to", help="Later date"),
    data_dir: Path = DataDir,
):
    """What changed in a provision between two dates, word by word: [-removed-] {+added+}."""
    from lexir.structure.changes import diff_provision

    history = _history(corpus, data_dir)
    found = diff_provision(history, provision, old, new)
    a, b = found.before, found.after
    label = lambda v, d: f"{v.version}" if v else f"not in force on {d}"  # noqa: E731
    console.print(f"[bold]{provision}[/]: {label(a, old)} -> {label(b, new)}", highlight=False)
    if not found.changed:
        console.print(f"no change: {a.version} is in force on both dates", highlight=False)
        return
    console.print(found.diff, markup=False, highlight=False)


class _IndexGroup(TyperGroup):
    """``lexir index CORPUS ...`` still builds; ``lexir index update DIR`` updates."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["build", *args]
        return super().parse_args(ctx, args)


index_app = typer.Typer(cls=_IndexGroup, no_args_is_help=True,
                        help="Build a saved index (the default: lexir index CORPUS -o DIR), or update one.")
app.registered_commands = [c for c in app.registered_commands if c.callback is not index_build]
index_app.command("build")(index_build)
app.add_typer(index_app, name="index")


@index_app.command("update")
@guarded
def index_update(
    folder: Path = typer.Argument(..., help="A saved updatable index (lexir index CORPUS --as-of D -o DIR)"),
    as_of: str = typer.Option(..., "--as-of", help="The date to move the index to"),
    wait: float = typer.Option(60.0, "--wait", help="Seconds to wait while another process writes the index "
                               "(then fail); 0: fail at once"),
    data_dir: Path = DataDir,
):
    """Move a saved index to another date, applying only the provisions that changed.

    The index folder is locked from loading to saving, so concurrent updates run one after the
    other; the save writes only what changed (a delta segment) as a new generation of the folder,
    switched to atomically: a crash leaves the index at the old date or the new one."""
    from lexir.datasets import open as open_data
    from lexir.datasets import with_as_of
    from lexir.io.generations import FolderLocked, writer_lock
    from lexir.retrieval.build import load_index, save_index
    from lexir.retrieval.incremental import SYSTEM, IncrementalBM25

    if not folder.is_dir():
        raise CLIError(f"{folder} is not a saved index (no such folder)")
    try:
        with writer_lock(folder, timeout=wait):
            index = load_index(folder)
            if not isinstance(index, IncrementalBM25):
                raise CLIError(f"{folder} is a static bm25s index, which cannot be updated; build an updatable "
                               f"one with `lexir index CORPUS --as-of DATE --output {folder}`")
            source = index.source
            if not source.get("dataset"):
                raise CLIError(f"{folder} does not record the dataset it was built from; rebuild it with lexir index")
            corp = open_data(with_as_of(source["dataset"], as_of), language=source.get("language"),
                             data_dir=data_dir, want="corpus")
            start = time.perf_counter()
            since, changes = _history_changes(index, as_of, data_dir)
            fast = changes is not None
            changed, deleted = index.update_to(corp, since, changes)
            index.source = {**source, "as_of": as_of}
            save_index(index, folder, SYSTEM)
    except FolderLocked as exc:
        raise CLIError(str(exc)) from None
    how = "the history's changes since the recorded date" if fast else "every document compared"
    console.print(f"{folder}: {source.get('as_of') or 'latest'} -> {as_of}: {changed} added or replaced, "
                  f"{deleted} deleted, {len(corp)} documents ({how}); {time.perf_counter() - start:.2f}s", highlight=False)


def _history_changes(index, as_of: str, data_dir):
    """The corpus as of the date ``index`` records, and the history's change set from it to
    ``as_of`` when the index holds that corpus (its fingerprint); changes None otherwise (no
    registered dataset with a history, no date recorded, or the index holds something else): then
    ``update_to`` compares every document."""
    from lexir.datasets import DatasetError
    from lexir.datasets import open as open_data
    from lexir.structure.history import HistoryError

    day = index.source.get("as_of")
    if not day:
        return None, None
    try:
        history = open_data(index.source["dataset"], data_dir=data_dir)
        if not hasattr(history, "changes"):
            return None, None
        since = history.as_of(day)
        return since, (history.changes(day, as_of) if index.holds(since) else None)
    except (DatasetError, HistoryError):
        return None, None


# What marks a folder as an index: the manifest of its generations, the marker a save writes (lexir
# index; the index cache), a retriever's own (saved before either), or a sharded index's plan.
INDEX_FILES = ("lexir-current.json", "lexir-index.json", "lexir-cache.json", "lexir.json", "lexir-shards.json")


def _marked_as_index(folder: Path) -> bool:
    """Whether ``folder`` holds any file that marks an index, or a generation folder (``gen-N``: an
    index whose manifest is gone is damaged, not something else)."""
    from lexir.io.generations import PREFIX

    return (any((folder / name).is_file() for name in INDEX_FILES)
            or any(p.is_dir() and p.name.startswith(PREFIX) and p.name[len(PREFIX):].isdigit()
                   for p in folder.iterdir()))


@index_app.command("check")
@guarded
def index_check(
    folder: Path = typer.Argument(..., help="A saved index (lexir index CORPUS -o DIR) or an index cache entry"),
):
    """Read every byte of a saved index against the sizes and CRC-32 checksums its save recorded,
    then load it as a search does (which checks its arrays fit each other); exit 1, naming each
    damaged file, if it is not sound (as Lucene's CheckIndex)."""
    from lexir.io.generations import check
    from lexir.retrieval.build import load_index

    if not folder.is_dir():
        raise CLIError(f"{folder} is not a saved index (no such folder)")
    if not _marked_as_index(folder):
        raise CLIError(f"{folder} is not a saved index (none of {', '.join(INDEX_FILES)} in it, nor a generation "
                       "folder); lexir index CORPUS -o DIR saves one")
    start = time.perf_counter()
    try:
        gen, files, problems = check(folder)
    except ValueError as exc:  # the manifest itself is damaged
        gen, files, problems = folder, {}, [str(exc)]
    kind = ""
    if not problems:
        try:
            if (folder / "lexir-shards.json").is_file():  # lexir serve --backend ray's shards: each one loaded
                from lexir.retrieval import bm25_shards

                kind = f"{bm25_shards.read_plan(folder)['shards']} BM25 shards"
                bm25_shards.local(folder)
            else:
                kind = type(load_index(folder)).__name__
        except (OSError, ValueError, KeyError) as exc:
            problems.append(str(exc))
    for line in problems:
        console.print(line, markup=False, highlight=False, soft_wrap=True)  # a path stays on one line
    read = sum(files.values()) / 2**20
    where = gen.name if gen != folder else (
        "no manifest (shards are written beside their place and renamed into it whole)"
        if (folder / "lexir-shards.json").is_file() else
        "no generations (saved before them; its files' sizes were not recorded)")
    verdict = f"damaged: {len(problems)} problem(s); rebuild it" if problems else f"sound; loads as {kind}"
    console.print(f"{folder}: {where}, {len(files)} files, {read:.1f} MiB read in {time.perf_counter() - start:.2f}s: "
                  f"{verdict}", markup=False, highlight=False, soft_wrap=True)
    if problems:
        raise typer.Exit(1)
