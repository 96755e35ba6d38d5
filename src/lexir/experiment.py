"""Experiments as files: datasets x systems -> runs, a metrics table, paired tests.

An experiment file (YAML)::

    name: pl-exams-bm25
    datasets:
      - {name: pl-exams, split: test}   # as_of: 2013-06-01 for a dataset with a history
    systems:
      - {name: bm25-raw, system: bm25, params: {mode: raw}}
      - {name: bm25-stem, system: bm25, params: {mode: stem}}
      - {name: rank-bm25, system: rank-bm25}
      - {name: fused, system: rrf, params: {systems: bm25-raw+bm25-stem}}  # names entries above
    baseline: bm25-raw
    measures: [nDCG@10, MAP@100, R@100, Hit@10, MRR]   # optional; default: all
    tests: [Hit@10, nDCG@10]                           # optional
    expected:                                          # optional: recorded scores
      pl-exams/test: {bm25-raw: {nDCG@10: 0.521}}
    tolerance: 0.001
    slow: false                                        # true: costly to reproduce (dense encoding)
    answer: {conditions: [none, bm25-stem, oracle], k: 5}  # optional: answer evaluation (LLM)

Runs are cached in the output folder under a key of system, parameters, corpus and query
set, so a rerun recomputes only what changed. Expected scores, when recorded, are checked
and any difference beyond the tolerance is reported as a regression; a score that could not be
compared (a dataset key, system or measure the experiment does not have) is refused when the file
is read.
"""

from __future__ import annotations

import glob
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from lexir.analysis.defaults import auto_analysis
from lexir.datasets import DatasetError, split_dated, with_as_of
from lexir.datasets import open as open_data
from lexir.evaluation import (
    DEFAULT_MEASURES,
    DEFAULT_TESTS,
    Comparison,
    Measure,
    compare,
    to_latex,
    to_markdown,
)
from lexir.io import read_run, write_run
from lexir.retrieval.base import RUN_DEPTH, get_system
from lexir.retrieval.build import build_retriever, effective_spec
from lexir.retrieval.spec import Spec, expand_names
from lexir.types import QuerySet, Run


class ExperimentError(ValueError):
    pass


@dataclass
class SystemEntry:
    name: str
    system: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class Experiment:
    name: str
    datasets: list[tuple[str, str | None]]
    systems: list[SystemEntry]
    baseline: str
    measures: tuple[Measure, ...] = DEFAULT_MEASURES
    tests: tuple[Measure, ...] = DEFAULT_TESTS
    expected: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    tolerance: float = 1e-3
    depth: int = RUN_DEPTH
    output: Path = Path("results")
    slow: bool = False  # reproduced by the test suite only on request (LEXIR_SLOW_EXPERIMENTS=1)
    answer: Any = None  # lexir.llm.answer.AnswerSettings: the optional ``answer:`` section

    def dated(self, as_of: str) -> tuple[Experiment, list[str]]:
        """The experiment with every dataset that names no date of its own taken as in force on
        ``as_of`` (the CLI's ``--as-of``), and the ``expected:`` keys that no longer apply: scores
        recorded for the undated dataset are not the dated one's, so they are dropped (and said so
        by the caller) rather than left unmatched in silence."""
        datasets, dropped, expected = [], [], dict(self.expected)
        for name, split in self.datasets:
            if split_dated(name)[1]:
                datasets.append((name, split))
                continue
            datasets.append((with_as_of(name, as_of), split))
            if expected.pop(dataset_key(name, split), None):
                dropped.append(dataset_key(name, split))
        answer = self.answer
        if answer is not None and answer.dataset and not split_dated(answer.dataset)[1]:
            answer = replace(answer, dataset=with_as_of(answer.dataset, as_of))  # the answer section follows it
        return replace(self, datasets=datasets, expected=expected, answer=answer), dropped

    @classmethod
    def from_file(cls, path: str | Path) -> Experiment:
        path = Path(path)
        try:
            raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ExperimentError(f"{path}: file not found") from None
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            where = f":{mark.line + 1}" if mark else ""
            raise ExperimentError(f"{path}{where}: invalid YAML ({getattr(err, 'problem', err)})") from None
        return cls.from_dict(raw, path)

    @classmethod
    def from_dict(cls, raw: Any, path: Path) -> Experiment:
        def fail(field_name: str, message: str):
            raise ExperimentError(f"{path}: field {field_name!r}: {message}")

        if not isinstance(raw, dict):
            fail("(top level)", "expected a mapping")
        datasets = []
        for i, entry in enumerate(raw.get("datasets") or []):
            if isinstance(entry, str):
                entry = {"name": entry}
            if not isinstance(entry, dict) or "name" not in entry:
                fail(f"datasets[{i}]", "expected a dataset name or {name, split, as_of}")
            try:  # as_of: the dataset's corpus as in force on that date (NAME@DATE)
                name = with_as_of(str(entry["name"]), str(entry["as_of"]) if entry.get("as_of") else None)
            except DatasetError as err:
                fail(f"datasets[{i}].as_of", str(err))
            datasets.append((name, entry.get("split")))
        if not datasets:
            fail("datasets", "at least one dataset is needed")
        systems = []
        named: dict[str, Spec] = {}
        for i, entry in enumerate(raw.get("systems") or []):
            if isinstance(entry, str):
                entry = {"name": entry, "system": entry}
            if not isinstance(entry, dict) or "name" not in entry:
                fail(f"systems[{i}]", "expected a system name or {name, system, params}")
            system = str(entry.get("system", entry["name"]))
            params = entry.get("params") or {}
            if not isinstance(params, dict):
                fail(f"systems[{i}].params", "expected a mapping")
            try:
                # Composite systems may name entries above them; the names become full specs
                # so that a run's cache key changes whenever a part's parameters do.
                # Which parameters name systems is the system's own declaration (lexir systems).
                composite = get_system(system).spec_params()
                params = {k: expand_names(str(v), named) if k in composite else v for k, v in params.items()}
                get_system(system).resolve(params)
            except ValueError as err:
                fail(f"systems[{i}]", str(err))
            systems.append(SystemEntry(str(entry["name"]), system, dict(params)))
            named[str(entry["name"])] = Spec(system, tuple((k, str(v)) for k, v in params.items()))
        names = [s.name for s in systems]
        if len(set(names)) != len(names):
            fail("systems", "system names must be unique")
        if not systems:
            fail("systems", "at least one system is needed")
        baseline = str(raw.get("baseline", names[0]))
        if baseline not in names:
            fail("baseline", f"{baseline!r} is not one of the systems ({', '.join(names)})")
        try:
            measures = tuple(Measure.parse(m) for m in raw.get("measures") or []) or DEFAULT_MEASURES
            tests = tuple(Measure.parse(m) for m in raw.get("tests") or []) or DEFAULT_TESTS
        except ValueError as err:
            fail("measures", str(err))
        expected = _checked_expected(raw.get("expected"), datasets, names, measures, fail)
        output = Path(raw.get("output") or (path.parent / "results" / path.stem))
        answer = None
        if raw.get("answer") is not None:
            from lexir.llm.answer import AnswerSettings

            try:
                answer = AnswerSettings.from_dict(raw["answer"], names, [d for d, _ in datasets])
            except ValueError as err:
                raise ExperimentError(f"{path}: {err}") from None
        return cls(
            name=str(raw.get("name", path.stem)), datasets=datasets, systems=systems, baseline=baseline,
            measures=measures, tests=tests, expected=expected,
            tolerance=float(raw.get("tolerance", 1e-3)), depth=int(raw.get("depth", RUN_DEPTH)), output=output,
            slow=bool(raw.get("slow", False)), answer=answer,
        )


def dataset_key(dataset: str, split: str | None) -> str:
    """The key of a dataset's results and of its ``expected:`` scores: ``pl-exams/test``
    (``NAME/all`` for a dataset without a split)."""
    return f"{dataset}/{split or 'all'}"


def _checked_expected(raw: Any, datasets: list[tuple[str, str | None]], systems: list[str],
                      measures: tuple[Measure, ...], fail: Callable[[str, str], Any]) -> dict:
    """The ``expected:`` section, every score checked when the file is read (before anything runs):
    its dataset keys are the file's datasets, its systems the file's systems, its measures among
    those the experiment computes, its scores numbers. A score that could never be compared was
    silently skipped (an unknown key) or crashed after every run was computed (a measure not
    computed)."""
    if not raw:
        return {}
    if not isinstance(raw, dict):
        fail("expected", "expected a mapping DATASET/SPLIT -> system -> measure -> score")
    keys = [dataset_key(d, s) for d, s in datasets]
    computed = ", ".join(map(str, measures))
    for key, by_system in raw.items():
        if key not in keys:
            fail("expected", f"{key!r} is not one of the experiment's datasets; valid: {', '.join(keys)} "
                             "(NAME/SPLIT, or NAME/all for a dataset without a split)")
        if not isinstance(by_system, dict):
            fail("expected", f"{key}: expected a mapping system -> measure -> score")
        for system, scores in by_system.items():
            if system not in systems:
                fail("expected", f"{key}: {system!r} is not one of the systems ({', '.join(systems)})")
            if not isinstance(scores, dict):
                fail("expected", f"{key}: {system}: expected a mapping measure -> score")
            for name, value in scores.items():
                try:
                    measure = Measure.parse(str(name))
                except ValueError as err:
                    fail("expected", f"{key}: {system}: {err}")
                if measure not in measures:
                    fail("expected", f"{key}: {system}: {measure} is not among the experiment's measures "
                                     f"({computed}); add it to measures or drop the score")
                if isinstance(value, bool) or not isinstance(value, int | float):
                    fail("expected", f"{key}: {system}: {measure}: expected a number, got {value!r}")
    return raw


@dataclass
class DatasetResult:
    key: str  # "pl-exams/test"
    comparison: Comparison
    run_paths: dict[str, Path]
    regressions: list[str]
    reused: list[str]
    answers: Any = None  # lexir.llm.answer.AnswerEval, for the dataset the answer section names


def queryset_fingerprint(queries: QuerySet) -> str:
    digest = hashlib.sha256()
    for q in queries.queries:
        digest.update(f"{q.id}\0{q.text}\1".encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class Cell:
    """One (dataset, system) cell of a grid: everything a worker needs to compute its run
    (plain values, so it can travel to another process or machine) and where the run goes."""

    key: str  # "pl-exams/test"
    dataset: str
    split: str | None
    name: str
    system: str
    params: tuple[tuple[str, Any], ...]
    depth: int
    path: Path
    data_dir: str | None = None


# A backend computes missing cells and hands each finished run to ``done`` (which writes it).
CellBackend = Callable[[list[Cell], Callable[[Cell, Run], None]], None]


def compute_cell(cell: Cell, bench=None, progress: Callable[[int], None] | None = None) -> Run:
    """The run of one cell (loads the benchmark when not given: what a remote worker does)."""
    if bench is None:
        bench = open_data(cell.dataset, data_dir=cell.data_dir, want="queries")
    queries = bench.queries.split(cell.split)
    retriever = build_retriever(bench.corpus, cell.system, dict(cell.params), qrels=queries.qrels)
    run = retriever.search_many(queries.queries, cell.depth, progress)
    # multi-round systems (ReAct): the run after each round, beside the cell's run (for plots)
    for rnd, round_run in sorted((getattr(retriever, "run_by_round", None) or {}).items()):
        write_run(round_run, cell.path.with_suffix(f".round{rnd}.trec"), tag=f"{cell.name}@{rnd}", k=cell.depth)
    return run


def run_experiment(
    exp: Experiment, data_dir: str | Path | None = None, log: Callable[[str], None] = print,
    progress_factory: Callable[[str, int], Callable[[int], None]] | None = None,
    backend: CellBackend | None = None, plots: Path | None = None,
) -> list[DatasetResult]:
    """Run the grid; cells with a cached run are reused, the rest are computed here one after
    another, or by ``backend`` (e.g. :func:`lexir.distributed.ray_cells`) all at once. ``plots``: a folder for the Hit@k, per-round and accuracy plots."""
    planned = []
    missing: list[Cell] = []
    benches = {}
    for dataset, split in exp.datasets:
        bench = open_data(dataset, data_dir=data_dir, want="queries")
        queries = bench.queries.split(split)
        key = dataset_key(dataset, split)
        folder = exp.output / "runs" / key.replace("/", "__")
        corpus_fp = bench.corpus.fingerprint
        query_fp = queryset_fingerprint(queries)
        defaults_row = auto_analysis(bench.corpus.language)
        cells = []
        for entry in exp.systems:
            resolved = get_system(entry.system).resolve(entry.params)
            # Keyed by what the entry builds over this corpus, not by its name: `recommended`
            # (alone or as a part) is keyed by the spec it stands for over this corpus today.
            built = effective_spec(entry.system, entry.params, bench.corpus.language, bench.corpus.jurisdiction)
            # ... and by the language's row of defaults, which mode=auto reads: a row chosen anew
            # (French stems instead of raw tokens) never meets a run made before it
            run_key = hashlib.sha256(json.dumps(
                [built, corpus_fp, query_fp, exp.depth, defaults_row], default=str
            ).encode()).hexdigest()[:16]
            cell = Cell(key, dataset, split, entry.name, entry.system, tuple(entry.params.items()), exp.depth,
                        folder / f"{entry.name}.{run_key}.trec", None if data_dir is None else str(data_dir))
            cells.append(cell)
            if not cell.path.is_file():
                missing.append(cell)
                changed = {k: v for k, v in resolved.items() if get_system(entry.system).defaults[k] != v}
                log(f"{key}: running {entry.name} ({entry.system} {changed or 'defaults'})")
        benches[key] = bench
        planned.append((key, dataset, queries, cells))

    computed: dict[tuple[str, str], Run] = {}

    def done(cell: Cell, run: Run) -> None:  # each run is written as it arrives: a killed grid resumes
        write_run(run, cell.path, tag=cell.name, k=cell.depth)
        computed[cell.key, cell.name] = run

    if backend is not None and missing:
        backend(missing, done)
    else:
        for cell in missing:
            progress = progress_factory(cell.name, len(benches[cell.key].queries.split(cell.split))) \
                if progress_factory else None
            done(cell, compute_cell(cell, benches[cell.key], progress))
    results = []
    for key, dataset, queries, cells in planned:
        bench = benches[key]
        runs = {cell.name: computed.get((key, cell.name)) or read_run(cell.path) for cell in cells}
        paths = {cell.name: cell.path for cell in cells}
        reused = [cell.name for cell in cells if (key, cell.name) not in computed]
        comparison = compare(runs, queries.qrels, exp.baseline, measures=exp.measures, tests=exp.tests)
        regressions = check_expected(comparison, exp.expected.get(key, {}), exp.tolerance)
        out = exp.output / key.replace("/", "__")
        out.parent.mkdir(parents=True, exist_ok=True)
        Path(f"{out}.md").write_text(to_markdown(comparison), encoding="utf-8")
        Path(f"{out}.tex").write_text(to_latex(comparison), encoding="utf-8")
        Path(f"{out}.json").write_text(json.dumps(comparison.to_dict(), indent=1), encoding="utf-8")
        answers = None
        if exp.answer is not None and (exp.answer.dataset or exp.datasets[0][0]) == dataset:
            from lexir.llm.answer import run_answer_settings, write_answer_files

            log(f"{key}: answering with context {', '.join(exp.answer.conditions)}")
            answers = run_answer_settings(exp.answer, bench.corpus, queries, runs, title=f"{exp.name}: {key}",
                                          progress_factory=progress_factory)
            write_answer_files(answers, f"{out}.answer")
        if plots is not None:
            from lexir.evaluation.plots import write_plots

            write_plots(plots, key.replace("/", "__"), runs, queries.qrels, _round_runs(paths),
                        answers.table if answers else None, exp.tests, answers.chance if answers else None,
                        title=key)
        results.append(DatasetResult(key, comparison, paths, regressions, reused, answers))
    return results


def _round_runs(paths: dict[str, Path]) -> dict[str, dict[int, dict]]:
    """The per-round runs saved beside each run (``<name>.<key>.round<r>.trec``), by system."""
    out: dict[str, dict[int, dict]] = {}
    for name, path in paths.items():
        for found in path.parent.glob(glob.escape(path.stem) + ".round*.trec"):
            out.setdefault(name, {})[int(found.suffixes[-2].removeprefix(".round"))] = read_run(found)
    return out


def check_expected(comparison: Comparison, expected: dict[str, dict[str, float]], tolerance: float) -> list[str]:
    problems = []
    for system, scores in expected.items():
        if system not in comparison.estimates:
            problems.append(f"{system}: expected scores recorded but the system did not run")
            continue
        for measure_name, value in scores.items():
            measure = Measure.parse(measure_name)
            if measure not in comparison.estimates[system]:  # read-time checks catch this in a file
                problems.append(f"{system} {measure}: expected score recorded but the measure was not computed")
                continue
            got = comparison.estimates[system][measure].mean
            if abs(got - float(value)) > tolerance:
                problems.append(f"{system} {measure}: {got:.4f}, expected {float(value):.4f} (±{tolerance})")
    return problems
