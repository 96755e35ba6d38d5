"""The ``lexir`` command line."""

from __future__ import annotations

import html
import json
import re
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

app = typer.Typer(help="lexir: find the statutory provisions that govern a legal question, and measure it.",
                  no_args_is_help=True, add_completion=False)
# Tables are wide; when writing to a file or pipe, don't wrap them at 80 columns.
console = Console(width=None if sys.stdout.isatty() else 200)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 200)

DataDir = typer.Option(None, "--data-dir", help="Data folder (default: $LEXIR_DATA, ../shared/data, ~/.local/share/lexir)")
Params = typer.Option([], "--param", "-p", help="System parameter key=value (repeatable)")
JurisdictionOption = typer.Option(None, "--jurisdiction", help="The legal order whose law a corpus given by path "
                                  "is, by its code (at: Austrian law; default: the home order of its language, so "
                                  "German text is German law)")
Backend = typer.Option("local", "--backend", help="local | ray (needs: pip install 'lexir\\[ray]')")
Address = typer.Option(None, "--address", help="Ray cluster to use (default: $RAY_ADDRESS, else a local runtime)")


class CLIError(Exception):
    pass


PLAIN_EVERY_S = 30.0  # where stderr is no terminal (a log, a pipe): a progress line at most this often


@contextmanager
def progress_bar(description: str, total: int | None):
    """A progress bar on a terminal's stderr; elsewhere (a log file, a pipe, CI) a plain line every
    :data:`PLAIN_EVERY_S` seconds, so that a long first build (a dense encoding: minutes to tens of
    minutes) is never silent. Yields ``advance(n=1)``."""
    if not err.is_terminal:
        yield _plain_progress(description, total)
        return
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n=1: bar.advance(task, n)


def _plain_progress(description: str, total: int | None, clock=time.monotonic):
    """``advance(n=1)`` that writes ``description: done of total (p%), elapsed, about ... left`` to
    stderr once :data:`PLAIN_EVERY_S` seconds have passed since the start or the last line (the
    time left at the recent pace, :class:`lexir.io.progress.Pace`: the service's estimate)."""
    from lexir.io.progress import Pace

    pace = Pace(total or 1, clock)
    last = pace.started
    done = 0
    lock = threading.Lock()  # a build may report from several threads

    def advance(n: int = 1) -> None:
        nonlocal done, last
        with lock:
            done += n
            pace.advance(n)
            now = clock()
            if now - last < PLAIN_EVERY_S:
                return
            last = now
        line = f"{description}: {done:,}"
        if total:
            line += f" of {total:,} ({100 * done / total:.0f}%)"
        line += f", {_clock(now - pace.started)} elapsed"
        eta = pace.eta_s() if total and 0 < done < total else None
        if eta is not None:
            line += f", about {_clock(eta)} left"
        err.print(line, highlight=False, soft_wrap=True, markup=False)

    return advance


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{secs:02d}" if minutes >= 60 else f"{minutes}:{secs:02d}"


def fail(message: str) -> None:
    from rich.markup import escape

    # escaped: a message may hold brackets (lexir[ray], systems[0]) that are not markup
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def os_error(exc: OSError) -> str:
    """An operating-system error as one line naming the path and the reason (``/sys/x.trec:
    Permission denied``), and the cache's variable where the path is under the cache."""
    if not exc.strerror or not exc.filename:
        return str(exc)  # raised with a message of its own (a marker file missing: what it is)
    where = str(exc.filename) + (f" -> {exc.filename2}" if exc.filename2 else "")
    message = f"{where}: {exc.strerror}"
    from lexir.io.paths import cache_dir

    cache = cache_dir()
    if Path(exc.filename) == cache or cache in Path(exc.filename).parents:
        message += f" (lexir's cache folder {cache}: set LEXIR_CACHE to a folder you can write)"
    return message


def check_output(path: Path | None, option: str, folder: bool = False) -> None:
    """Refuse an output path that cannot be written before any work is done, so that a bad path
    loses nothing: a folder where a file is to go (or a file where a folder is), a parent that is
    a file, or a folder that cannot be written in (found by making and removing a file there:
    permissions alone do not tell, e.g. for root under /sys). Missing folders above the path are
    fine: the writers make them."""
    import os
    import tempfile

    if path is None:
        return
    if folder and path.exists() and not path.is_dir():
        raise CLIError(f"{option} {path}: is a file; give a folder")
    if not folder and path.is_dir():
        raise CLIError(f"{option} {path}: is a folder; give a file name")
    near = path if path.is_dir() else path.parent
    while not near.exists() and near.parent != near:  # the nearest folder that exists
        near = near.parent
    if not near.is_dir():
        raise CLIError(f"{option} {path}: {near} is a file, not a folder")
    try:
        fd, probe = tempfile.mkstemp(dir=near, prefix=".lexir-probe-")
    except OSError as exc:
        raise CLIError(f"{option} {path}: cannot write in {near} ({exc.strerror})") from None
    os.close(fd)
    os.unlink(probe)


def guarded(fn):
    """Turn the errors users can cause into one clear line and exit code 2, not a traceback."""
    import functools

    from lexir.datasets.registry import DatasetError
    from lexir.experiment import ExperimentError
    from lexir.io import FormatError
    from lexir.llm.client import BudgetExhausted, LLMError

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (DatasetError, FormatError, ExperimentError, CLIError, ValueError, BudgetExhausted, LLMError) as exc:
            fail(str(exc))
        except OSError as exc:  # a path that cannot be read or written: a folder, no permission, a full disk
            fail(os_error(exc))
        except ImportError as exc:  # an optional extra that is not installed
            fail(f"{exc} (an optional part of lexir is not installed; install the extra it names, e.g. pip install 'lexir[onnx]'; pyproject.toml lists the extras)")

    return wrapper


# ---------------------------------------------------------------------------


@app.command()
@guarded
def datasets(data_dir: Path = DataDir, verify: bool = typer.Option(True, help="Check sha256 of present files")):
    """List registered datasets, where their files are expected and whether they are present and intact."""
    from lexir.datasets import registry

    root = registry.resolve_data_dir(data_dir)
    console.print(f"data directory: [bold]{root}[/]")
    table = Table("dataset", "provides", "description", "files")
    for name in registry.names():
        ds = registry.get(name)
        lines = []
        for f in ds.files:
            status = registry.file_status(f, root, hash_it=verify)
            colour = {"ok": "green", "missing": "red"}.get(status, "yellow")
            lines.append(f"[{colour}]{status}[/] {f.path}")
            if status != "ok":
                lines.append(f"  [dim]from {f.repository} @ {f.commit}: {f.upstream_path}[/]")
        if ds.folder:
            present = (root / ds.folder).is_dir()
            lines.append(f"[{'green' if present else 'red'}]{'present' if present else 'missing'}[/] {ds.folder}/"
                         " [dim](found by its loader, not pinned by sha256)[/]")
        if ds.needs:
            lines.append(f"[dim](also reads {', '.join(ds.needs)})[/]")
        table.add_row(name, ", ".join(ds.provides), ds.description, "\n".join(lines) or "[dim]shipped with lexir[/]")
    console.print(table)


@app.command()
@guarded
def stats(dataset: str, data_dir: Path = DataDir, as_json: bool = typer.Option(False, "--json")):
    """Paper-style statistics of a dataset: queries kept and dropped, gold, lengths, per act."""
    from lexir.dataset_stats import stats as compute
    from lexir.datasets import open as open_data

    result = compute(open_data(dataset, data_dir=data_dir))
    if as_json:
        console.print_json(json.dumps(result, ensure_ascii=False))
        return
    _print_stats(result)


def _print_stats(result: dict, title: str = "") -> None:
    table = Table(title=title or None, show_header=False)
    table.add_column(style="bold")
    table.add_column()
    nested = []
    for key, value in result.items():
        if isinstance(value, dict) and key == "corpus":
            nested.append(value)
            continue
        table.add_row(key, _fmt(value))
    console.print(table)
    for sub in nested:
        _print_stats(sub, title="corpus")


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_fmt(v)}" for k, v in value.items()) or "-"
    return str(value)


def warn(message: str) -> None:
    """What loading data reports (a detected language), in yellow on stderr."""
    err.print(f"[yellow]{message}[/]")


def _retriever(corp, system: str, params: list[str], index: Path | None = None, cache: bool = True, **context):
    from lexir.retrieval.base import parse_params
    from lexir.retrieval.build import build_retriever, load_index
    from lexir.types import DocumentStream

    if index is not None:
        return load_index(index, corp)
    total = None if isinstance(corp, DocumentStream) else len(corp)  # a stream's length: known once read
    with progress_bar(f"indexing {corp.name} ({system})", total) as advance:
        return build_retriever(corp, system, parse_params(params), progress=advance, cache=cache, **context)


@app.command()
@guarded
def index(
    corpus: str = typer.Argument(..., help="Registered dataset or path (BEIR folder, JSONL, code JSON)"),
    output: Path = typer.Option(..., "--output", "-o", help="Index folder to write"),
    system: str = typer.Option(None, "--system", help="Any saveable system (default bm25; with --as-of "
                               "bm25-inc, which `lexir index update` moves to another date)"),
    params: list[str] = Params,
    language: str = typer.Option(None, "--language", help="Corpus language (for a corpus given by path)"),
    jurisdiction: str = JurisdictionOption,
    as_of: str = typer.Option(None, "--as-of", help="Only provisions in force on this date (YYYY-MM-DD)"),
    data_dir: Path = DataDir,
):
    """Build any saveable system (bm25, dense, bm25-chunks ...) and save it to a folder
    (loaded, memory-mapped where the system allows, by search/run --index)."""
    from lexir.datasets import open as open_data
    from lexir.datasets import split_dated, with_as_of
    from lexir.datasets import stream as stream_data
    from lexir.retrieval.build import STREAMED, save_index
    from lexir.retrieval.spec import parse_spec
    from lexir.types import DocumentStream

    system = system or ("bm25-inc" if as_of else "bm25")
    check_output(output, "--output", folder=True)
    corpus = with_as_of(corpus, as_of)
    # BM25 reads a JSONL corpus (or BEIR folder, or a dataset with a document reader: de-gesetze, fr-codes)
    # as a stream: its text is never held whole, so a build's memory does not grow with the
    # corpus's text. Any other system or corpus is opened.
    corp = (stream_data(corpus, language=language, notify=warn, data_dir=data_dir, jurisdiction=jurisdiction)
            if parse_spec(system).name in STREAMED else None)
    if corp is None:
        corp = open_data(corpus, language=language, data_dir=data_dir, notify=warn, want="corpus",
                         jurisdiction=jurisdiction)
    start = time.perf_counter()
    retriever = _retriever(corp, system, params, cache=False)
    if hasattr(retriever, "source"):  # what `lexir index update` reloads at another date
        name, day = split_dated(corpus)
        retriever.source = {"dataset": name, "as_of": day, "language": language}
    save_index(retriever, output, system)
    count = len(corp.ids) if isinstance(corp, DocumentStream) else len(corp)
    console.print(f"indexed {count} documents in {time.perf_counter() - start:.1f}s -> {output}")


@app.command()
@guarded
def search(
    corpus: str = typer.Argument(..., help="Registered dataset or path"),
    query: str = typer.Argument(..., help="The question or case description"),
    system: str = typer.Option(None, "--system", help="Any system (lexir systems lists them); default "
                               "recommended where the corpus's encoding is cached, else bm25 (it says which)"),
    params: list[str] = Params,
    k: int = typer.Option(10, "-k", min=1, help="Number of articles to show"),
    index: Path = typer.Option(None, "--index", help="A saved index folder"),
    language: str = typer.Option(None, "--language"),
    jurisdiction: str = JurisdictionOption,
    fmt: str = typer.Option("table", "--format", help="table | json (for scripts)"),
    as_of: str = typer.Option(None, "--as-of", help="Only provisions in force on this date (YYYY-MM-DD)"),
    data_dir: Path = DataDir,
):
    """Search one question and print ranked articles with their citation and a snippet."""
    from lexir.datasets import open as open_data
    from lexir.datasets import with_as_of
    from lexir.structure.hits import UnitIndex, format_hits, hit_analyzer

    if fmt not in ("table", "json"):
        raise CLIError(f"--format {fmt!r}: valid: table, json")
    corp = open_data(with_as_of(corpus, as_of), language=language, data_dir=data_dir, notify=warn, want="corpus",
                     jurisdiction=jurisdiction)
    if system is None and index is None:
        system = default_search_system(corp, params)
    retriever = _retriever(corp, system or "bm25", params, index)
    hits = retriever.search(query, k)
    # The hits of the service's search (one shape: lexir.structure.hits), as JSON or as a table
    rows = format_hits(UnitIndex(corp), hits, query, hit_analyzer(retriever, corp.language), with_text=fmt == "json")
    if fmt == "json":
        sys.stdout.write(json.dumps({"query": query, "system": system, "hits": rows}, ensure_ascii=False) + "\n")
        return
    if not rows:
        console.print("[dim]no results (the query has no indexed terms)[/]")
        return
    table = Table("#", "provision", "score", "snippet")
    for row in rows:
        where = f"{row['citation']} {row['title']}".strip()
        table.add_row(str(row["rank"]), f"{escape(where)}\n[dim]{escape(row['id'])}[/]", f"{row['score']:.3f}",
                      marked(row["snippet"]))
    console.print(table)


def default_search_system(corp, params: list[str]) -> str:
    """What ``lexir search`` answers with when no ``--system`` is given: ``recommended`` (what ``lexir
    serve`` serves first) where building it encodes nothing, its encoding of the corpus cached (by
    an earlier ``--system recommended``, ``lexir encode`` or ``lexir serve``); else ``bm25`` at once, and a line on
    stderr saying how to have ``recommended`` (a first encoding takes minutes, tens of minutes
    over a large corpus, and is never made to happen silently)."""
    from lexir.retrieval.base import parse_params
    from lexir.retrieval.build import passages_to_encode

    try:
        missing = passages_to_encode(corp, "recommended", parse_params(params))
    except ValueError:  # parameters recommended does not take: they are bm25's
        return "bm25"
    name = escape(corp.name)
    if not missing:
        err.print(f"[dim]recommended over {name} (its encoding is cached); --system bm25 for BM25 alone[/]",
                  highlight=False)
        return "recommended"
    err.print(f"[dim]bm25 over {name}. recommended, better on questions told in everyday words, first encodes "
              f"{missing:,} passages of {name} once ({encoding_time(missing)}; cached, and used by every search "
              f"after): add --system recommended[/]", highlight=False)
    return "bm25"


def encoding_time(passages: int) -> str:
    """How long encoding ``passages`` takes, roughly: the demo's 458 passages took 1:35 on two
    cores (about 5 a second; long statutes fewer)."""
    if passages <= 100:
        return "seconds"
    if passages <= 3_000:
        return "minutes"
    return "tens of minutes or more"


def marked(snippet: str) -> str:
    """A hit's HTML snippet as console markup: its ``<mark>`` words in bold, the rest as text."""
    parts = re.split(r"<mark>(.*?)</mark>", snippet)
    return "".join(f"[bold]{escape(html.unescape(p))}[/]" if i % 2 else escape(html.unescape(p))
                   for i, p in enumerate(parts))


@app.command()
@guarded
def run(
    corpus: str = typer.Argument(..., help="Registered dataset or path (BEIR folder, JSONL corpus, code JSON)"),
    system: str = typer.Option(None, "--system", help="System name (lexir systems lists them); not needed "
                               "with --index, whose folder names its system"),
    output: Path = typer.Option(..., "--output", "-o", help="TREC run file to write (top 100 per query)"),
    params: list[str] = Params,
    queries: Path = typer.Option(None, "--queries", help="Query file (default: the dataset's own queries)"),
    queries_format: str = typer.Option(None, "--queries-format", help="polishlawllm | orycore | beir | trec"),
    split: str = typer.Option(None, "--split", help="Query split of a registered dataset (e.g. tune, test)"),
    language: str = typer.Option(None, "--language", help="Corpus language (for a corpus given by path)"),
    jurisdiction: str = JurisdictionOption,
    index: Path = typer.Option(None, "--index", help="Use a saved index folder"),
    qrels_out: Path = typer.Option(None, "--qrels-out", help="Also write the gold as TREC qrels"),
    k: int = typer.Option(100, "-k", min=1, help="Results written per query"),
    as_of: str = typer.Option(None, "--as-of", help="Only provisions in force on this date (YYYY-MM-DD)"),
    data_dir: Path = DataDir,
):
    """Run a system over a query set and write a TREC run."""
    from lexir.api import retrieve
    from lexir.datasets import load_queries, with_as_of
    from lexir.datasets import open as open_data
    from lexir.io import write_qrels, write_run

    if system is None and index is None:
        raise CLIError("give --system (lexir systems lists them) or --index DIR")
    check_output(output, "--output")
    check_output(qrels_out, "--qrels-out")
    corpus = with_as_of(corpus, as_of)

    if queries is not None:
        if not queries_format:
            raise CLIError("--queries needs --queries-format (polishlawllm, orycore, beir or trec)")
        corp = open_data(corpus, language=language, data_dir=data_dir, notify=warn, want="corpus",
                         jurisdiction=jurisdiction)
        qset = load_queries(queries, queries_format, corp)
        if qset.dropped:
            err.print(f"[yellow]{len(qset.dropped)} queries dropped (no usable gold); lexir stats explains[/]")
    else:
        bench = open_data(corpus, language=language, data_dir=data_dir, notify=warn, want="queries",
                          jurisdiction=jurisdiction)
        corp, qset = bench.corpus, bench.queries
    qset = qset.split(split)
    if qrels_out and not any(qset.qrels.values()):
        raise CLIError(f"--qrels-out: the {len(qset)} queries of {qset.name} carry no gold (judgements); "
                       "nothing to write")
    retriever = _retriever(corp, system, params, index, qrels=qset.qrels)
    system = system or retriever.name  # a saved index knows what it is
    start = time.perf_counter()
    with progress_bar(f"{system} on {qset.name}", len(qset)) as advance:
        results = retrieve(retriever, qset, k, advance)
    elapsed = time.perf_counter() - start
    # the tag says what made the run: bm25(k1=0.6) and bm25(mode=stem) are not both "bm25"
    tag = (f"{system}({','.join(params)})" if params else system).replace(" ", "")
    write_run(results, output, tag=tag, k=k)
    accounting = getattr(retriever, "accounting", None)
    if accounting is not None:
        err.print(f"LLM: {accounting.summary()}")
    if qrels_out:
        write_qrels(qset.qrels, qrels_out)
    err.print(f"{len(qset)} queries in {elapsed:.2f}s ({len(qset) / max(elapsed, 1e-9):.0f} q/s) -> {output}")


EVAL_FORMATS = ("table", "markdown", "latex", "json")


def _names(text: str, option: str, example: str) -> list[str]:
    """A comma-separated list given to ``option``: its items, stripped; an empty list or item refused."""
    items = [item.strip() for item in text.split(",")]
    if not any(items):
        raise CLIError(f"{option} is empty; give one or more separated by commas, e.g. {example}")
    if not all(items):
        raise CLIError(f"{option} {text!r}: an empty name between commas")
    return items


@app.command("eval")
@guarded
def evaluate_cmd(
    runs: list[Path] = typer.Argument(..., help="TREC run files (name = file stem, or NAME=PATH)"),
    qrels: Path = typer.Option(None, "--qrels", help="TREC qrels file"),
    dataset: str = typer.Option(None, "--dataset", help="Take the gold of a registered dataset instead"),
    split: str = typer.Option(None, "--split"),
    baseline: str = typer.Option(None, "--baseline", help="Run compared against (default: the first)"),
    measures: str = typer.Option(None, "--measures", help="Comma-separated, e.g. nDCG@10,Hit@10,MRR"),
    fmt: str = typer.Option("table", "--format", help="table | markdown | latex | json"),
    per_query: Path = typer.Option(None, "--per-query", help="Write per-query values (JSONL)"),
    data_dir: Path = DataDir,
):
    """Evaluate runs: metrics with 95% CIs, paired tests against a baseline, Holm-corrected."""
    from lexir.evaluation import DEFAULT_MEASURES, Measure, compare, to_latex, to_markdown, to_rich_table
    from lexir.io import read_qrels, read_run

    if (qrels is None) == (dataset is None):
        raise CLIError("give exactly one of --qrels or --dataset")
    if fmt not in EVAL_FORMATS:
        raise CLIError(f"--format {fmt!r}: valid: {', '.join(EVAL_FORMATS)}")
    try:
        chosen = tuple(Measure.parse(m) for m in _names(measures, "--measures", "nDCG@10,Hit@10,MRR")) if measures is not None \
            else DEFAULT_MEASURES
    except ValueError as exc:
        raise CLIError(f"--measures {measures!r}: {exc}") from None
    check_output(per_query, "--per-query")
    if qrels and split:
        raise CLIError("--split chooses the queries of a --dataset; with --qrels every judged query counts")
    named: dict[str, Path] = {}
    for spec in runs:
        # NAME=PATH, unless the whole argument is a file (a sweep's bm25_k1=0.6.trec)
        name, sep, path = str(spec).partition("=")
        name, path = (name, Path(path)) if sep and not spec.is_file() else (spec.stem, spec)
        if name in named:
            raise CLIError(f"two runs named {name!r} ({named[name]} and {path}): name them, NAME=PATH")
        named[name] = path
    if qrels:
        gold = read_qrels(qrels)
    else:
        from lexir.datasets import open as open_data

        gold = open_data(dataset, data_dir=data_dir, want="queries").queries.split(split).qrels
    loaded = {name: read_run(path) for name, path in named.items()}
    base = baseline or next(iter(loaded))
    if base not in loaded:
        raise CLIError(f"baseline {base!r} is not one of the runs: {', '.join(loaded)}")
    comparison = compare(loaded, gold, base, measures=chosen)
    judged = {q for q, rel in gold.items() if any(g > 0 for g in rel.values())}
    for name, evaluation in comparison.evaluations.items():
        shown = escape(name)
        if evaluation.ignored_qids:
            err.print(f"[yellow]{shown}: {len(evaluation.ignored_qids)} queries in the run have no gold (ignored)[/]")
        unanswered = judged - set(loaded[name])
        if unanswered:
            err.print(f"[yellow]{shown}: {len(unanswered)} of {len(judged)} judged queries have no results in the run "
                      f"(each scored 0; first: {escape(min(unanswered))!r})[/]")
    if per_query:
        with open(per_query, "w", encoding="utf-8") as out:
            for name, evaluation in comparison.evaluations.items():
                for row in evaluation.to_rows():
                    out.write(json.dumps({"system": name, **row}) + "\n")
    # the text formats exactly as written (a console would wrap a long row and read :names: as emoji)
    if fmt == "markdown":
        sys.stdout.write(to_markdown(comparison) + "\n")
    elif fmt == "latex":
        sys.stdout.write(to_latex(comparison) + "\n")
    elif fmt == "json":
        sys.stdout.write(json.dumps(comparison.to_dict(), indent=2, ensure_ascii=False) + "\n")
    else:
        console.print(to_rich_table(comparison))


@app.command()
@guarded
def fuse(
    runs: list[Path] = typer.Argument(..., help="TREC run files to fuse (two or more)"),
    output: Path = typer.Option(..., "--output", "-o", help="TREC run file to write"),
    method: str = typer.Option("rrf", "--method", help="rrf | wrrf | combsum"),
    params: list[str] = Params,
    k: int = typer.Option(100, "-k", min=1, help="Results kept per query in the output"),
):
    """Fuse run files query by query (RRF, weighted RRF, normalised score sums)."""
    from lexir.io import read_run, write_run
    from lexir.retrieval.base import parse_params
    from lexir.retrieval.fusion import FUSION_METHODS, fusion_function, fusion_params
    from lexir.retrieval.fusion import fuse as fuse_runs

    if len(runs) < 2:
        raise CLIError("fuse needs at least two run files")
    if method not in FUSION_METHODS:
        raise CLIError(f"--method {method!r}: valid: {', '.join(FUSION_METHODS)}")
    check_output(output, "--output")
    # the method's parameters as its system (lexir systems rrf) declares them: type and range
    try:
        values = fusion_params(method, parse_params(params))
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    fusion_function(method, len(runs), **values)  # the weights' count and values, before reading the runs
    fused = fuse_runs([read_run(path) for path in runs], method, **values)
    write_run(fused, output, tag=f"fused-{method}", k=k)
    err.print(f"fused {len(runs)} runs ({len(fused)} queries, {method}) -> {output}")


@app.command()
@guarded
def sweep(
    dataset: str = typer.Argument(..., help="Registered dataset with queries"),
    split: str = typer.Option("tune", "--split", help="Tune on this split, never on test (refused without "
                              "--allow-test)"),
    k1: str = typer.Option("0.6,0.9,1.2,1.5,1.8,2.1", "--k1"),
    b: str = typer.Option("0.3,0.45,0.6,0.75,0.9", "--b"),
    metric: str = typer.Option("nDCG@10", "--metric"),
    params: list[str] = typer.Option([], "--param", "-p", help="A fixed BM25 parameter key=value (repeatable; "
                                     "not k1 or b, which the grid sweeps)"),
    allow_test: bool = typer.Option(False, "--allow-test", help="Sweep the test split, or a split holding its "
                                    "questions (all), all the same (their scores are then no longer held out)"),
    data_dir: Path = DataDir,
):
    """Grid-search BM25 k1 x b on a tuning split and print the grid and the best pair."""
    from lexir.datasets import open as open_data
    from lexir.tuning import fixed_params, sweep_bm25

    if split == "test" and not allow_test:
        raise CLIError("--split test: tune on a dev or tuning split (e.g. --split tune), never on the test split "
                       "you report; --allow-test to sweep it all the same")
    k1s = [float(x) for x in k1.split(",")]
    bs = [float(x) for x in b.split(",")]
    fixed_params(params, k1s, bs)  # a parameter both fixed and swept, before the data is loaded
    bench = open_data(dataset, data_dir=data_dir, want="queries")
    qset = bench.queries.split(split)
    # 'all' (or a split that shares queries with test) holds the test questions too
    held_out = set(bench.queries.splits.get("test", ())) if split != "test" else set()
    shared = sum(q.id in held_out for q in qset.queries)
    if shared and not allow_test:
        raise CLIError(f"--split {split}: {shared} of its {len(qset)} queries are the test split's; tune on a split "
                       f"without them (valid: {', '.join(s for s in bench.queries.splits if s != 'test')}); "
                       "--allow-test to sweep it all the same")
    if split == "test" or shared:
        err.print(f"[bold yellow]warning:[/] sweeping {'the' if split == 'test' else f'{shared} queries of the'} "
                  "test split (--allow-test): their scores are no longer held out", highlight=False)
    with progress_bar(f"sweep on {qset.name}", len(k1s) * len(bs)) as advance:
        result = sweep_bm25(bench.corpus, qset, k1s, bs, metric, params, progress=advance)
    table = Table(f"k1 \\ b ({metric})", *[f"{x:g}" for x in bs])
    for a in k1s:
        table.add_row(f"{a:g}", *[
            f"[bold green]{result.grid[(a, x)]:.4f}[/]" if (a, x) == result.best else f"{result.grid[(a, x)]:.4f}"
            for x in bs])
    console.print(table)
    console.print(f"best on {qset.name}: k1={result.best[0]:g} b={result.best[1]:g} "
                  f"{metric}={result.grid[result.best]:.4f} ({len(qset)} queries)")


@app.command()
@guarded
def experiment(config: Path, data_dir: Path = DataDir,
               plots: Path = typer.Option(None, "--plots", help="Folder for Hit@k, per-round and accuracy plots"),
               backend: str = Backend, address: str = Address,
               as_of: str = typer.Option(None, "--as-of", help="Datasets as in force on this date "
                                                                "(entries without their own as_of)")):
    """Run an experiment file (datasets x systems -> runs, table, tests; cached)."""
    from lexir.cli.scale import cell_backend
    from lexir.evaluation import to_rich_table
    from lexir.experiment import Experiment, run_experiment

    exp = Experiment.from_file(config)
    if as_of:
        exp, unchecked = exp.dated(as_of)
        for key in unchecked:
            err.print(f"[bold yellow]warning:[/] {key}: expected scores not checked (recorded for the dataset as it "
                      f"is, not as in force on {as_of})", highlight=False)
    bars = {}

    def progress_factory(name, total):
        if not err.is_terminal:  # a log: plain lines, as every other command's progress
            return _plain_progress(name, total)
        bars[name] = Progress(TextColumn(f"[bold]{name}"), BarColumn(), MofNCompleteColumn(), console=err,
                              transient=True)
        bars[name].start()
        task = bars[name].add_task(name, total=total)

        def advance(n=1):
            bars[name].advance(task, n)
            if bars[name].tasks[0].completed >= total:
                bars[name].stop()
        return advance

    def log(message: str) -> None:
        err.print(message, highlight=False)

    results = run_experiment(exp, data_dir, log=log, progress_factory=progress_factory, plots=plots,
                             backend=cell_backend(backend, address, log))
    bad = False
    for result in results:
        console.print(to_rich_table(result.comparison))
        if result.answers is not None:
            from lexir.evaluation.answers import to_rich_tables

            console.print(*to_rich_tables(result.answers.table))
        if result.reused:
            err.print(f"[dim]{result.key}: reused cached runs of {', '.join(result.reused)}[/]")
        for problem in result.regressions:
            err.print(f"[bold red]regression[/] {result.key}: {problem}")
            bad = True
    err.print(f"tables written under {exp.output}" + (f", plots under {plots}" if plots else ""))
    if bad:
        raise typer.Exit(1)


def _order_codes() -> list[str]:
    """The registered legal orders' codes (the catalogue's folders), for help texts."""
    from lexir.jurisdiction import codes

    return codes()


@app.command()
@guarded
def cite(
    file: Path = typer.Argument(None, help="Text file to read (default: standard input)"),
    jurisdiction: str = typer.Option("pl", "--jurisdiction", "-j", "--lang",
                                     help=f"The legal order whose citations to find: {' | '.join(_order_codes())} "
                                          "(--lang: its old name)"),
    default_act: str = typer.Option(None, "--default-act", help="Act of references that name none"),
    all_kinds: bool = typer.Option(False, "--all-kinds", help="German: also contract and by-law clauses, "
                                   "collection entries and commentary notes (field kind)"),
    annotate: bool = typer.Option(False, "--annotate", help="Print the text as HTML with its citations marked "
                                  "(<cite data-id=...>) instead of one JSON object per citation"),
):
    """Find statutory citations in text; print one JSON object per citation (span, act_raw, act, article,
    path, id, kind, resolved_from, repealed)."""
    from lexir.citations.extract import citation_codes, cite_lines

    if jurisdiction not in citation_codes():
        raise CLIError(f"unknown jurisdiction {jurisdiction!r} (--jurisdiction); valid: {', '.join(citation_codes())}")
    if file is None:
        text = sys.stdin.read()
    else:
        try:
            text = file.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise CLIError(f"{file}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    options: dict = {"default_act": default_act} if default_act else {}
    if all_kinds:
        options["kinds"] = None
    if annotate:
        from lexir.citations import annotate as mark
        from lexir.citations import find_citations

        print(mark(text, find_citations(text, jurisdiction, **options)))
        return
    for line in cite_lines(text, jurisdiction, **options):
        print(line)


@app.command()
@guarded
def annotate(
    corpus: str = typer.Argument(..., help="Registered dataset whose articles get surrogates"),
    output: Path = typer.Option(None, "--output", "-o", help="Surrogates JSONL (default: in the cache, "
                                "where the surrogate systems look)"),
    base_url: str = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint (else env/config)"),
    model: str = typer.Option(None, "--model"),
    config: Path = typer.Option(None, "--config", help="LLM config file (TOML or YAML)"),
    concurrency: int = typer.Option(None, "--concurrency"),
    limit: int = typer.Option(None, "--limit", help="Only the first N articles"),
    data_dir: Path = DataDir,
    backend: str = Backend,
    address: str = Address,
):
    """Write LLM surrogates (summary, theme, concepts, questions) for every article; resumable."""
    from lexir.cli.scale import annotation_runner
    from lexir.llm.commands import annotate_command

    report = annotate_command(corpus, output, base_url=base_url, model=model, config_file=config,
                              concurrency=concurrency, limit=limit, data_dir=data_dir, progress=err.is_terminal,
                              runner=annotation_runner(backend, address))
    console.print(report)


@app.command()
@guarded
def cost(
    dataset: str = typer.Argument(..., help="Registered dataset with queries"),
    systems_: list[str] = typer.Option(..., "--system", help="System spec (repeatable), e.g. react-bm25(rounds=2)"),
    limit: int = typer.Option(None, "--limit", help="Only the first N queries"),
    split: str = typer.Option(None, "--split"),
    fmt: str = typer.Option("rich", "--format", help="rich | markdown"),
    data_dir: Path = DataDir,
):
    """Quality beside cost: LLM calls, tokens and seconds per query for each system."""
    from lexir.llm.commands import cost_command

    if fmt not in ("rich", "markdown"):  # before the LLM calls, not after them
        raise CLIError(f"--format {fmt!r}: valid: rich, markdown")
    table = cost_command(dataset, systems_, fmt=fmt, limit=limit, split=split, data_dir=data_dir)
    console.print(table, markup=False, highlight=False) if isinstance(table, str) else console.print(table)


graph_app = typer.Typer(help="The statute graph: units, contains and cites edges.", no_args_is_help=True)
app.add_typer(graph_app, name="graph")


@graph_app.command("build")
@guarded
def graph_build(
    corpus: str = typer.Argument(..., help="Dataset with statute structure (de-gesetze, el-statutes, pl-codes)"),
    output: Path = typer.Option(None, "--output", "-o", help="Folder to save the graph (default: the cache)"),
    export: str = typer.Option("", "--export", help="Also write: jsonl, graphml (comma-separated)"),
    data_dir: Path = DataDir,
):
    """Build the graph of a statute corpus; report nodes and edges by type; save and export it."""
    from lexir.datasets import open as open_data
    from lexir.structure.graph import graph_folder, graph_of

    check_output(output, "--output", folder=True)
    corp = open_data(corpus, data_dir=data_dir, notify=warn, want="corpus")
    if not corp.acts:
        raise CLIError(f"corpus {corpus!r} has no statute structure to build a graph from")
    exports = [e.strip() for e in export.split(",") if e.strip()]
    for kind in exports:
        if kind not in ("jsonl", "graphml"):
            raise CLIError(f"unknown graph export {kind!r}; valid: jsonl, graphml")
    start = time.perf_counter()
    with progress_bar(f"graph of {corp.name}", len(corp.acts)) as advance:
        graph = graph_of(corp, advance)
    built = time.perf_counter() - start
    out = output or graph_folder(corp)  # the folder lexir serve reads its graph from
    graph.save(out)
    for kind in exports:
        getattr(graph, f"to_{kind}")(out / f"graph.{kind}")
    console.print_json(json.dumps(graph.stats(), ensure_ascii=False))
    err.print(f"built in {built:.1f}s; saved to {out}" + (f" with {', '.join(exports)}" if exports else ""))


@graph_app.command("neighbours")
@guarded
def graph_neighbours(
    folder: Path = typer.Argument(..., help="A saved graph folder"),
    node: str = typer.Argument(..., help="Node id, e.g. BGB::823 or BGB::823/abs:1"),
    kind: str = typer.Option(None, "--kind", help="contains | parent | cites | cited_by (default: all)"),
):
    """One-hop neighbours of a node."""
    from lexir.structure.graph import StatuteGraph

    graph = StatuteGraph.load(folder)
    if node not in graph:
        raise CLIError(f"no node {node!r} in the graph at {folder}")
    for neighbour in graph.neighbours(node, kind):
        print(neighbour)


@app.command()
@guarded
def systems(name: str = typer.Argument(None, help="One system: its parameters in full")):
    """List the named retrieval systems and their parameters."""
    from lexir.retrieval.base import get_system, system_names

    if name is not None:
        system = get_system(name)
        console.print(f"[bold]{system.name}[/]: {system.description}", highlight=False)
        table = Table("parameter", "default", "type", "what")
        for key, param in system.params.items():
            table.add_row(key, repr(param.default), param.kind.__name__, param.describe())
        console.print(table)
        return
    table = Table("system", "description", "parameters (defaults)")
    for sys_name in system_names():
        spec = get_system(sys_name)
        table.add_row(sys_name, spec.description, ", ".join(f"{k}={v!r}" for k, v in spec.defaults.items()))
    console.print(table)
    console.print("[dim]lexir systems NAME: each parameter's type, allowed values and meaning[/]")


@app.command()
@guarded
def demo(
    system: str = typer.Option("bm25", "--system"),
    params: list[str] = Params,
):
    """Run the whole path on the shipped demo (Kodeks karny + its exam questions): no setup, no network."""
    from lexir.demo import run_demo

    run_demo(console, err, system, params)


# Commands defined in their own modules register themselves on `app`.
from lexir.cli import answer as _answer  # noqa: E402,F401  (registers answer-eval)
from lexir.cli import history as _history  # noqa: E402,F401  (registers show, diff, index update)
from lexir.cli import models as _models  # noqa: E402,F401  (registers models list, models use)
from lexir.cli import scale  # noqa: E402,F401  (registers encode)
from lexir.cli import serve as _serve  # noqa: E402,F401  (registers serve, mcp, qrels)
from lexir.cli import train as _train  # noqa: E402,F401  (registers train)


def main() -> None:  # pragma: no cover
    sys.exit(app())


if __name__ == "__main__":  # pragma: no cover
    # Run as ``python -m``, this file is ``__main__``: the commands other modules register live on
    # the app of the imported ``lexir.cli.main``.
    from lexir.cli.main import main as registered_main

    registered_main()
