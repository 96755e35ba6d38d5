"""``lexir serve`` (HTTP API and page), ``lexir mcp`` (MCP server) and ``lexir qrels export``."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import typer

from lexir.cli.main import CLIError, DataDir, JurisdictionOption, app, check_output, err, guarded

DEFAULT_SYSTEMS = ["recommended", "bm25"]
Systems = typer.Option(DEFAULT_SYSTEMS, "--system", help="A system requests may use (repeatable; the first is the "
                       "default), e.g. bm25 or 'rrf(systems=bm25+bm25(mode=stem))'. Default: recommended, and bm25 "
                       "beside it, which answers while recommended's first build (a dense encoding) runs")
# With several systems, a first system's build that takes longer than this goes on in the background
# while the others answer (lexir.service.preparing); the console, /v1/corpora and the page show its progress.
PREPARE_AFTER_S = 3.0


def _state(corpora: list[str], systems: list[str], data_dir: Path | None, language: str | None = None,
           jurisdiction: str | None = None, **settings):
    from lexir.service import MissingExtra, require

    try:
        require()
    except MissingExtra as exc:
        raise CLIError(str(exc)) from None
    from lexir.service.state import ServiceState, Settings

    state = ServiceState(Settings.from_env(systems=tuple(systems), data_dir=str(data_dir) if data_dir else None,
                                           prepare_after_s=PREPARE_AFTER_S, **settings))
    from lexir.datasets import is_path

    if (language or jurisdiction) and not any(is_path(spec) for spec in corpora or []):
        raise CLIError("--language and --jurisdiction read the corpora given by path; none is given (a registered "
                       "dataset is its own order's law, in its own language)")
    if jurisdiction:
        from lexir.jurisdiction import get_jurisdiction

        get_jurisdiction(jurisdiction)  # an unknown code: the error lists the valid ones, before any load
    for spec in corpora or ["demo"]:
        err.print(f"loading {spec} …", highlight=False)
        by_path = is_path(spec)  # --language and --jurisdiction read a corpus given by path; a dataset is its own
        state.add(spec, notify=lambda m: err.print(f"[yellow]{m}[/]", highlight=False),
                  language=language if by_path else None, jurisdiction=jurisdiction if by_path else None)
    from lexir.service.workers import warm

    warm(state)  # compiled kernels and first-use tables made now, not by the first request
    state.settle()  # then what is loaded (and what the warm-up made) leaves the collector's passes
    return state


@app.command()
@guarded
def serve(
    corpora: list[str] = typer.Argument(None, help="Registered datasets or corpus paths (default: demo)"),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (loopback unless told otherwise)"),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="Port to listen on (0: one the system picks)"),
    systems: list[str] = Systems,
    variants: list[str] = typer.Option(
        [], "--variant", help="A variant requests may ask for with param=..., built at start-up (repeatable): a "
                              "served system's spec with other index-time parameters, e.g. 'bm25(k1=0.9;b=0.4)'; "
                              "without it, a request varies only query-time parameters (lexir systems NAME)"),
    max_in_flight: int = typer.Option(32, "--max-in-flight", min=1, help="Requests in flight before 429 (per worker)"),
    cors: str = typer.Option("", "--cors", help="Allowed CORS origins, comma-separated (default: CORS off)"),
    learn: bool = typer.Option(False, "--learn", help="Learn from the page's marks: retrain recommended's model on "
                               "the first system in the background, serve it where it is not worse on held-out "
                               "marks, and follow `lexir models use` (docs/service.md)"),
    learn_options: list[str] = typer.Option([], "--learn-option", help="KEY=VALUE for --learn (repeatable): "
                                            "min_marks, min_questions, min_judges, cap, heldout, margin, every_s, "
                                            "watch_s, data, train.PARAM"),
    models: Path = typer.Option(None, "--models", help="Folder of the learned models (default: the cache's models/)"),
    workers: int = typer.Option(1, "--workers", min=1, max=64,
                                help="Worker processes, forked once the corpora are loaded (they share its "
                                     "memory and the memory-mapped indexes); a worker that dies is started again"),
    log_file: Path = typer.Option(None, "--log-file", help="Append the request log (one JSON line a request) "
                                                           "here instead of stderr"),
    request_log: bool = typer.Option(True, "--request-log/--no-request-log", help="Write the request log"),
    backend: str = typer.Option("local", "--backend", help="local: this process (and --workers); ray: Ray Serve, "
                                "bm25 sharded by act over --shards deployments, --replicas front replicas "
                                "(docs/ray.md)"),
    shards: int = typer.Option(2, "--shards", min=1, help="--backend ray: BM25 shards (whole acts each)"),
    replicas: int = typer.Option(2, "--replicas", min=1, help="--backend ray: front replicas (lexir's app)"),
    shard_replicas: int = typer.Option(2, "--shard-replicas", min=1, help="--backend ray: replicas of each shard "
                                       "(2 or more: a request survives one dying)"),
    ingress_replicas: int = typer.Option(1, "--ingress-replicas", min=1, help="--backend ray: replicas of the "
                                         "ingress (behind Serve's proxy; it hands each request to a front)"),
    retries: int = typer.Option(3, "--retries", min=0, help="--backend ray: times a failed shard call, or a request "
                                "whose front replica died or timed out, is sent again (to another replica) before "
                                "the request fails with 503 (504 after a timeout)"),
    front_timeout: float = typer.Option(60.0, "--front-timeout", min=0, help="--backend ray: seconds the ingress "
                                        "waits for a front replica's answer before it sends the request to "
                                        "another (as --retries allows), then 504; 0: no limit"),
    shard_timeout: float = typer.Option(30.0, "--shard-timeout", min=0.001, help="--backend ray: seconds a front "
                                        "waits for a shard replica's answer before it sends the call again "
                                        "(as --retries allows), then 503"),
    shard_hedge: float = typer.Option(1.0, "--shard-hedge", min=0, help="--backend ray: seconds after which a "
                                      "front sends a shard call not yet answered a second time (to another "
                                      "replica) and takes the first answer; longer where the recent calls' 95th "
                                      "percentile is; 0: never (with --shard-replicas 1 never either)"),
    address: str = typer.Option(None, "--address", help="--backend ray: the Ray cluster (default: $RAY_ADDRESS, "
                                "else a local runtime)"),
    language: str = typer.Option(None, "--language", help="The language of the corpora given by path (default: "
                                 "detected, or the --jurisdiction's)"),
    jurisdiction: str = JurisdictionOption,
    data_dir: Path = DataDir,
):
    """Serve the HTTP API (/v1, /openapi.json), the web page (/) and Prometheus metrics (/metrics)
    over the given corpora.

    Set LEXIR_API_KEY to require the key (X-API-Key or Authorization: Bearer) on every route
    but /healthz, /login and /static/ (the key form and the files it loads); /metrics too."""
    origins = tuple(o.strip() for o in cors.split(",") if o.strip()) or None
    if backend not in ("local", "ray"):
        raise CLIError(f"--backend {backend!r}: valid: local, ray")
    _check_systems(systems)  # before anything is loaded: a bad spec costs no corpus load
    if backend == "ray":
        if language or jurisdiction:
            raise CLIError("--language and --jurisdiction read a corpus given by path with --backend local; with "
                           "--backend ray serve a registered dataset")
        _serve_ray(corpora, systems, variants, learn, workers, data_dir, host=host, port=port, shards=shards,
                   replicas=replicas, shard_replicas=shard_replicas, ingress_replicas=ingress_replicas,
                   retries=retries, front_timeout=front_timeout, shard_timeout=shard_timeout, shard_hedge=shard_hedge,
                   address=address, request_log=request_log, log_file=log_file,
                   settings={"max_in_flight": max_in_flight, "cors_origins": origins, "host": host, "port": port})
        return
    _check_variants(variants, systems)
    learning = None
    if (learn_options or models) and not learn:
        raise CLIError("--learn-option and --models go with --learn")
    if learn and workers > 1:
        raise CLIError("--learn serves one process: the learner's thread and its swaps would not reach "
                       "forked workers (use --workers 1)")
    if learn:
        from lexir.service.learner import LearnSettings

        try:
            learning = LearnSettings.parse(learn_options, str(models) if models else "")
        except ValueError as exc:
            raise CLIError(str(exc)) from None
    log_fd = None
    if request_log and log_file:
        try:
            log_fd = os.open(log_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o640)
        except OSError as exc:
            raise CLIError(f"cannot write the request log {log_file}: {exc.strerror}") from None
    elif request_log:
        log_fd = sys.stderr.fileno()
    metrics_dir = _metrics_dir(workers)  # before anything imports prometheus_client
    state = _state(corpora, systems, data_dir, language, jurisdiction, host=host, port=port,
                   max_in_flight=max_in_flight, cors_origins=origins, variants=tuple(variants), learn=learning)
    import uvicorn

    from lexir.service.app import JSONErrorH11Protocol, create_app

    if host not in ("127.0.0.1", "localhost", "::1") and not state.settings.api_key:
        err.print(f"[yellow]warning: serving on {host} without LEXIR_API_KEY: anyone who can reach it can use it[/]")
    app_ = create_app(state, request_log=log_fd)
    # ws="none": lexir has no WebSocket routes, so an upgrade request is an ordinary HTTP request
    # (answered by the app, errors in its JSON shape) instead of the WebSocket library's plain 403.
    options = dict(log_level="warning", http=JSONErrorH11Protocol, ws="none",
                   limit_concurrency=max(64, 4 * max_in_flight), h11_max_incomplete_event_size=64 * 1024)
    from lexir.service.workers import Supervisor, bind, warm

    def listen():
        try:
            sock = bind(host, port)
        except OSError as exc:
            raise CLIError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
        shown = f"[{host}]" if ":" in host else host
        return sock, f"http://{shown}:{sock.getsockname()[1]}/"  # the port the system chose for --port 0

    if workers == 1:
        sock, url = listen()
        err.print(f"lexir serving {', '.join(state.corpora)} on {url}", highlight=False)
        try:
            uvicorn.Server(uvicorn.Config(app_, **options)).run(sockets=[sock])
        finally:
            sock.close()
        return
    from lexir.service import observe

    if any(loaded.preparing for loaded in state.corpora.values()):
        err.print("the workers start once the systems built in the background are ready (a thread does not "
                  "survive a fork)", highlight=False)
        state.wait_prepared()
        warm(state)  # the systems the first warm-up skipped: made once, shared by the workers
        state.settle()

    sock, url = listen()

    def run_worker(listening) -> None:
        uvicorn.Server(uvicorn.Config(app_, **options)).run(sockets=[listening])

    observe.WORKERS.set(workers)
    err.print(f"lexir serving {', '.join(state.corpora)} on {url} with {workers} workers",
              highlight=False)
    supervisor = Supervisor(workers, sock, run_worker, notify=lambda m: err.print(m, highlight=False),
                            on_death=observe.mark_dead, on_restart=observe.RESTARTS.inc)
    try:
        status = supervisor.run()
    finally:
        sock.close()
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)
    if status:
        raise typer.Exit(status)


def _serve_ray(corpora, systems, variants, learn, workers, data_dir, *, host, port, shards, replicas,
               shard_replicas, ingress_replicas, retries, front_timeout, shard_timeout, shard_hedge, address, request_log,
               log_file, settings) -> None:
    """``lexir serve --backend ray``: one corpus on Ray Serve until interrupted (lexir.ray_serve)."""
    if workers > 1:
        raise CLIError("--backend ray runs --replicas front replicas under Ray Serve, not --workers (use "
                       "--workers 1 and --replicas N)")
    if learn:
        raise CLIError("--learn serves one process: the learner's thread and its swaps would not reach the Ray "
                       "Serve replicas (use --backend local)")
    if variants:
        raise CLIError("--variant is not served with --backend ray (only the served systems are)")
    if log_file:
        raise CLIError("--log-file is not used with --backend ray: each replica writes its request log to its "
                       "stderr, in Ray's log folder (or --no-request-log)")
    if len(corpora or []) > 1:
        raise CLIError("--backend ray serves one corpus per deployment; give one")
    if list(systems) == DEFAULT_SYSTEMS:
        systems = ["bm25"]  # the sharded system; others are built on each front replica
    import time

    from lexir.ray_serve import ServeMissing, deploy, shutdown

    corpus = (corpora or ["demo"])[0]
    try:
        deploy(corpus, data_dir=str(data_dir) if data_dir else None, systems=tuple(systems), shards=shards,
               replicas=replicas, shard_replicas=shard_replicas, ingress_replicas=ingress_replicas,
               retries=retries, timeout_s=shard_timeout, front_timeout_s=front_timeout, hedge_s=shard_hedge,
               host=host, port=port,
               settings=settings, request_log=request_log, address=address,
               notify=lambda m: err.print(m, highlight=False))
    except (ServeMissing, ValueError) as exc:
        raise CLIError(str(exc)) from None
    err.print(f"lexir serving {corpus} on http://{host}:{port}/ (Ray Serve: {shards} shards x {shard_replicas} "
              f"replicas, {replicas} front replicas, {ingress_replicas} ingress replica(s); Ctrl-C stops)", highlight=False)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        shutdown()


def _metrics_dir(workers: int) -> str | None:
    """With several workers, the folder of prometheus_client's multiprocess files
    (PROMETHEUS_MULTIPROC_DIR): the operator's, cleared of an earlier run's files, else a new
    temporary one (returned, to be removed at the end)."""
    given = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if given:
        folder = Path(given)
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.db"):  # an earlier run's counts are no part of this one
            old.unlink()
        return None
    if workers == 1:
        return None
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = made = tempfile.mkdtemp(prefix="lexir-metrics-")
    return made


def _check_systems(systems: list[str]) -> None:
    """Each ``--system`` is a spec of a known system with valid parameters, and so is every system
    it names (the parts of a fusion): checked before any corpus is loaded."""
    for system in systems:
        try:
            _check_spec(system)
        except ValueError as exc:
            raise CLIError(f"--system {system!r}: {exc}") from None


def _check_spec(text: str) -> None:
    from lexir.retrieval.base import get_system
    from lexir.retrieval.spec import parse_spec, parse_spec_list

    spec = parse_spec(text)
    definition = get_system(spec.name)
    resolved = definition.resolve(spec.param_dict)
    for key in definition.spec_params():
        named = str(resolved[key] or "").strip()
        for part in parse_spec_list(named) if named else ():
            _check_spec(str(part))


def _check_variants(variants: list[str], systems: list[str]) -> None:
    """Each ``--variant`` is a spec of a served system (same name), with valid parameters."""
    from lexir.retrieval.base import get_system
    from lexir.retrieval.spec import parse_spec

    served = {parse_spec(s).name for s in systems}
    for variant in variants:
        try:
            spec = parse_spec(variant)
            get_system(spec.name).resolve(spec.param_dict)
        except ValueError as exc:
            raise CLIError(f"--variant {variant!r}: {exc}") from None
        if spec.name not in served:
            raise CLIError(f"--variant {variant!r} is no variant of a served system (served: {', '.join(systems)})")


@app.command("mcp")
@guarded
def mcp_cmd(
    corpora: list[str] = typer.Argument(None, help="Registered datasets or corpus paths (default: demo)"),
    http: bool = typer.Option(False, "--http", help="Streamable HTTP on --host/--port instead of stdio"),
    host: str = typer.Option("127.0.0.1", "--host"),
    port: int = typer.Option(8001, "--port", min=0, max=65535),
    systems: list[str] = Systems,
    language: str = typer.Option(None, "--language", help="The language of the corpora given by path"),
    jurisdiction: str = JurisdictionOption,
    data_dir: Path = DataDir,
):
    """Serve lexir's tools to agents over MCP (stdio by default)."""
    from lexir.service import MCP_PACKAGES, MissingExtra, require

    _check_systems(systems)
    try:
        require(MCP_PACKAGES)
    except MissingExtra as exc:
        raise CLIError(str(exc)) from None
    state = _state(corpora, systems, data_dir, language, jurisdiction)
    from lexir.service.mcp_server import create_mcp, run_http

    server = create_mcp(state)
    if http:
        err.print(f"lexir MCP (streamable HTTP) on http://{host}:{port}/mcp", highlight=False)
        run_http(server, host, port)
    else:
        server.run("stdio")


qrels_app = typer.Typer(help="Relevance judgements made in the web page.", no_args_is_help=True)
app.add_typer(qrels_app, name="qrels")


@qrels_app.command("export")
@guarded
def qrels_export(
    output: Path = typer.Option(None, "--output", "-o", help="Qrels file to write (default: stdout)"),
    topics: Path = typer.Option(None, "--topics", help="Also write the judged queries (qid<TAB>text)"),
    corpus: str = typer.Option(None, "--corpus", help="Only judgements made on this corpus"),
    db: Path = typer.Option(None, "--db", help="Judgement database (default: the cache's judgements.sqlite)"),
):
    """Export the page's relevance marks as TREC qrels (qid 0 docid grade), for lexir eval."""
    from lexir.service.judgements import Judgements

    check_output(output, "--output")
    check_output(topics, "--topics")
    store = Judgements(db)
    lines = store.qrels_lines(corpus)
    text = "".join(line + "\n" for line in lines)
    if output:
        output.write_text(text, encoding="utf-8")
        err.print(f"{len(lines)} judgements -> {output}", highlight=False)
    else:
        sys.stdout.write(text)
    if topics:
        topics.write_text("".join(f"{qid}\t{q}\n" for qid, q in store.topics(corpus)), encoding="utf-8")
