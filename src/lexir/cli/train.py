"""``lexir train``: fit a system on judged questions and write a model folder (docs/train.md)."""

from __future__ import annotations

from pathlib import Path

import typer

from lexir.cli.main import DataDir, Params, app, console, err, guarded


@app.command()
@guarded
def train(
    system: str = typer.Argument(..., help="What to train: bm25-qa, or recommended (the language's pipeline)"),
    data: str = typer.Argument(None, help="BEIR folder or registered dataset with queries (or use --queries/--qrels)"),
    output: Path = typer.Option(..., "--output", "-o", help="Model folder to write (must not exist)"),
    split: str = typer.Option(None, "--split", help="Only this split's questions (e.g. dev, tune)"),
    language: str = typer.Option(None, "--language", help="Corpus language, only for a corpus given by path (a registered dataset has its own)"),
    corpus: str = typer.Option(None, "--corpus", help="Train over this corpus instead of DATA's"),
    queries: Path = typer.Option(None, "--queries", help="Questions: queries.jsonl, or qid<TAB>text topics"),
    qrels: Path = typer.Option(None, "--qrels", help="Their judgements: BEIR .tsv or TREC qrels"),
    queries_format: str = typer.Option(None, "--queries-format", help="beir | trec | polishlawllm | orycore "
                                       "(default: by the file's suffix)"),
    params: list[str] = Params,
    data_dir: Path = DataDir,
):
    """Train a system on judged questions; `--system X -p model=DIR` then uses it."""
    from lexir.learning.train import train_system, training_data
    from lexir.retrieval.base import parse_params

    corp, qset, described = training_data(data, split=split, language=language, corpus=corpus, queries=queries,
                                          qrels=qrels, queries_format=queries_format, data_dir=data_dir,
                                          notify=lambda m: err.print(f"[yellow]{m}[/]"))
    manifest = train_system(system, corp, qset, output, data=described, params=parse_params(params),
                            log=lambda m: err.print(m, highlight=False))
    chosen = {k: v for k, v in manifest["params"].items()}
    console.print(f"model -> {output}: {system} over {corp.name} ({len(corp)} documents), "
                  f"{manifest['training']['queries']} questions; {chosen}", highlight=False)
    console.print(f"use it: lexir run CORPUS --system {system} -p model={output}", highlight=False)
