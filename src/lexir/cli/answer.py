"""``lexir answer-eval``: does retrieval make the answer right? (registered on :data:`lexir.cli.main.app`)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from lexir.cli.main import CLIError, DataDir, Params, app, console, err, guarded, progress_bar


@app.command("answer-eval")
@guarded
def answer_eval(
    dataset: str = typer.Argument(..., help="Dataset of multiple-choice questions (pl-exams, pl-orycore-sample, demo)"),
    split: str = typer.Option("test", "--split", help="Query split (all: every question)"),
    contexts: list[str] = typer.Option(None, "--context", "-c", help="none | oracle | a system spec "
                                       "(repeatable; default: none, bm25, oracle)"),
    k: int = typer.Option(5, "-k", help="Provisions shown from a system's ranking"),
    params: list[str] = Params,
    limit: int = typer.Option(None, "--limit", help="Only the first N questions"),
    baseline: str = typer.Option(None, "--baseline", help="Condition the others are marked against "
                                 "(default: the first)"),
    chars: int = typer.Option(800, "--chars", help="Characters of each provision in the prompt"),
    max_tokens: int = typer.Option(256, "--max-tokens", help="Longest answer the model may write"),
    base_url: str = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint (else LEXIR_LLM_BASE_URL "
                                 "or the config file)"),
    model: str = typer.Option(None, "--model", help="Model name (else LEXIR_LLM_MODEL or the config file)"),
    config: Path = typer.Option(None, "--config", help="LLM config file (TOML or YAML)"),
    concurrency: int = typer.Option(None, "--concurrency", help="Requests in flight at once"),
    json_mode: str = typer.Option(None, "--json-mode", help="json_schema | json_object | none"),
    budget: int = typer.Option(None, "--budget", help="Stop after N new (uncached) calls; rerun to resume"),
    output: Path = typer.Option(None, "--output", "-o", help="Write OUTPUT.md (tables) and OUTPUT.json "
                                "(tables and every answer)"),
    plot: Path = typer.Option(None, "--plot", help="Accuracy per condition with intervals (.png, .svg or .pdf)"),
    fmt: str = typer.Option("rich", "--format", help="rich | markdown | json"),
    data_dir: Path = DataDir,
):
    """Answer exam questions with an LLM given no provisions, a system's top k, or the gold ones; score it."""
    from lexir.datasets import open as open_data
    from lexir.evaluation.answers import to_markdown, to_rich_tables
    from lexir.llm.answer import DEFAULT_CONDITIONS, evaluate_answers, write_answer_files
    from lexir.llm.client import BudgetExhausted, LLMError
    from lexir.llm.commands import make_client
    from lexir.retrieval.base import parse_params

    if fmt not in ("rich", "markdown", "json"):
        raise CLIError(f"unknown format {fmt!r}; valid: rich, markdown, json")
    if plot is not None and plot.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise CLIError(f"--plot {plot}: the suffix must be .png, .svg or .pdf")
    bench = open_data(dataset, data_dir=data_dir, want="queries")
    queries = bench.queries.split(split)
    conditions = list(contexts or DEFAULT_CONDITIONS)
    client = make_client(base_url, model, config, concurrency=concurrency, json_mode=json_mode, budget=budget)
    bars: list = []  # one live bar at a time: the previous condition's is closed first

    def progress_factory(name: str, total: int):
        while bars:
            bars.pop().__exit__(None, None, None)
        bars.append(progress_bar(f"answering ({name})", total))
        return bars[-1].__enter__()

    try:
        result = evaluate_answers(bench.corpus, queries, conditions, client, k=k, params=parse_params(params),
                                  limit=limit, chars=chars, max_tokens=max_tokens, baseline=baseline,
                                  title=f"{dataset}/{split}: answers of {client.config.model or 'the model'}",
                                  progress_factory=progress_factory)
    except BudgetExhausted as exc:
        raise CLIError(f"{exc}; the answers so far are cached: run the same command again to resume") from None
    except LLMError as exc:
        raise CLIError(f"the LLM failed: {exc}; answers so far are cached, a rerun resumes") from None
    finally:
        while bars:
            bars.pop().__exit__(None, None, None)
        usage = client.accounting.total()
        client.close()
    if fmt == "json":
        print(json.dumps(result.to_dict(), indent=1, ensure_ascii=False))
    elif fmt == "markdown":
        print(to_markdown(result.table), end="")
    else:
        for table in to_rich_tables(result.table):
            console.print(table)
    err.print(f"LLM: {usage}", highlight=False)
    if output is not None:
        written = write_answer_files(result, output)
        err.print(f"wrote {', '.join(map(str, written))}")
    if plot is not None:
        from lexir.evaluation.plots import plot_accuracy

        err.print(f"plot written to {plot_accuracy(result.table, plot, chance=result.chance)}")
