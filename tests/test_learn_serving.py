"""Learning while serving (``lexir serve --learn``), against real servers on loopback.

Two judges mark lay questions on the demo corpus in Debian's Chromium; their marks retrain
``recommended``'s model in the server, which swaps it in while threads hammer ``/v1/demo/search``;
a candidate trained on marks that contradict the held-out marks is refused; ``lexir models use``
rolls back and forth; the judgements database of schema 1 migrates without losing a mark; two
writers of one corpus's models exclude each other.

Which questions are held out is a hash of the question (``lexir.learning.marks.held_out``); the
questions below were picked for their side at ``heldout=0.5`` and the tests check it first.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")

from test_service import REPO, Server  # noqa: E402

from lexir.learning.marks import held_out  # noqa: E402
from lexir.learning.model import load_model  # noqa: E402
from lexir.learning.versions import Busy, ModelVersions  # noqa: E402
from lexir.service.judgements import Judgements, query_id  # noqa: E402

HELDOUT = 0.5
# lay questions about a stolen bicycle (art. 278 k.k., theft), which plain BM25 does not answer
THEFT_TRAIN = ["Złodziej ukradł rower mojego syna", "Ukradli mi rower z klatki schodowej",
               "Kolega ukradł mi rower i go sprzedał"]
THEFT_HELD = ["Sąsiad ukradł mi rower z piwnicy", "Ktoś ukradł mój rower spod sklepu"]
PLACES = ["w sklepie", "na ulicy", "w pracy", "w szkole", "w tramwaju", "na dworcu", "w parku", "w kinie",
          "w banku", "na poczcie", "w restauracji", "w hotelu", "na basenie", "w teatrze", "na stadionie",
          "w szpitalu", "w urzędzie", "w aptece", "na targu", "w muzeum", "na plaży", "w bibliotece"]
TAKING = [f"Ktoś zabrał cudzą rzecz ruchomą w celu przywłaszczenia {w}" for w in PLACES]
HAMMERED = "kradzież cudzej rzeczy ruchomej"


def side(texts, held):
    return [t for t in texts if held_out(query_id(t), HELDOUT) == held]


def cli(*args: str, cache: Path, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lexir.cli.main", *args], capture_output=True, text=True,
                          check=check, cwd=REPO, timeout=120,
                          env={**os.environ, "LEXIR_CACHE": str(cache), "PYTHONPATH": str(REPO / "src")})


def learning_server(cache: Path, models: Path, *options: str) -> Server:
    args = ["demo", "--system", "bm25", "--learn", "--models", str(models)]
    for option in ("every_s=0.3", "watch_s=0.3", f"heldout={HELDOUT}", "train.dense=off", "train.recall=off",
                   *options):
        args += ["--learn-option", option]
    return Server(args, cache)


def wait_for(client, predicate, timeout: float = 180.0) -> dict:
    deadline = time.time() + timeout
    status = {}
    while time.time() < deadline:
        status = client.get("/v1/demo/model").json()
        if predicate(status):
            return status
        time.sleep(0.3)
    raise AssertionError(f"timed out; last status: {json.dumps(status)[:2000]}")


class Hammer:
    """Threads searching without pause; every answer's status and model, in the order they ended."""

    def __init__(self, url: str, threads: int = 4) -> None:
        self.url, self.answers, self.errors = url, [], []
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, daemon=True) for _ in range(threads)]
        for t in self.threads:
            t.start()

    def run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=60) as client:
            while not self.stop.is_set():
                try:
                    r = client.get("/v1/demo/search", params={"q": HAMMERED, "k": 5})
                    with self.lock:
                        self.answers.append((r.status_code, r.json().get("model")))
                except Exception as exc:  # noqa: BLE001 - counted as a lost request
                    with self.lock:
                        self.errors.append(repr(exc))

    def finish(self) -> list[tuple[int, str]]:
        self.stop.set()
        for t in self.threads:
            t.join(60)
        return self.answers


def models_seen_count(answers) -> dict:
    counts: dict = {}
    for _, model in answers:
        counts[model] = counts.get(model, 0) + 1
    return counts


def test_one_judge_alone_teaches_nothing_and_a_contradicted_mark_weighs_less():
    from lexir.learning.marks import cap_judges, consensus, mark_data

    alone = [(f"q{i}", f"text {i}", "kk::1", "page-a", 1, float(i)) for i in range(30)]
    assert cap_judges(alone, 0.5) == ([], 30)
    # a judge with 30 marks beside one with 5: at most as many as the others (cap 0.5), the newest
    other = [(f"r{i}", f"other {i}", "kk::2", "page-b", 1, 100.0 + i) for i in range(5)]
    kept, left_out = cap_judges(alone + other, 0.5)
    assert left_out == 25 and [r for r in kept if r[3] == "page-a"] == alone[-5:]
    votes = [("q", "t", "kk::1", j, g, 1.0) for j, g in (("a", 2), ("b", 2), ("c", 0))]  # 2 of 3 agree
    votes += [("q", "t", "kk::2", j, 1, 1.0) for j in ("a", "b")]  # uncontested
    votes += [("q", "t", "kk::3", j, g, 1.0) for j, g in (("a", 1), ("b", 0))]  # a tie: not learned
    qrels, contradicted = consensus(votes, training=True)
    assert qrels == {"q": {"kk::1": 3, "kk::2": 2}} and contradicted == 2  # 2 * 2 * 2/3 = 2.67 -> 3; 2 * 1 * 1
    data = mark_data(alone + other, cap=0.5, heldout=HELDOUT)
    assert data.stats["judges"] == 2 and not {q.id for q in data.train_queries} & {q.id for q in data.heldout_queries}


def test_questions_fall_on_their_side():
    assert side(THEFT_TRAIN, True) == [] and side(THEFT_HELD, False) == []
    assert len(side(TAKING, False)) >= 12 and len(side(TAKING, True)) >= 4


def test_two_judges_in_the_browser_retrain_and_the_swap_loses_no_request(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    from test_web import CHROMIUM

    if CHROMIUM is None:
        pytest.skip("no chromium binary (apt-get install chromium)")
    cache, models = tmp_path / "cache", tmp_path / "models"
    questions = THEFT_TRAIN + THEFT_HELD
    marks = 2 * len(questions)
    srv = learning_server(cache, models, f"min_marks={marks}", f"min_questions={len(questions)}", "min_judges=2")
    try:
        client = httpx.Client(base_url=srv.url, timeout=60)
        assert wait_for(client, lambda s: True)["model"] == "base"
        first = client.get("/v1/demo/search", params={"q": HAMMERED}).json()
        assert first["model"] == "base"
        hammer = Hammer(srv.url)
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            for judge in ("a", "b"):  # two browser contexts: two sessions, two judges
                context = browser.new_context()
                page = context.new_page()
                page.goto(srv.url + "/?corpus=demo&q=" + THEFT_TRAIN[0])
                assert "model base" in page.inner_text(".count")  # the page names the model served
                for q in questions:  # BM25 finds nothing for these: the judge opens art. 278 with the question
                    page.goto(f"{srv.url}/p/demo/kk::278?q={q}")
                    box = page.locator(".marks")
                    box.locator("button.mark[data-grade='1']").click()
                    sync_api.expect(box.locator(".saved")).to_have_text("saved")
                if judge == "a":  # one judge's marks alone start nothing
                    time.sleep(1.5)
                    assert client.get("/v1/demo/model").json()["versions"][1:] == []
                context.close()
            status = wait_for(client, lambda s: s["model"] != "base" or any(v["verdict"] == "refused"
                                                                              for v in s["versions"]))
            assert status["model"] == "v0001", status
            time.sleep(1.0)  # requests that began on the old model have ended; later ones all on the new
            answers = hammer.finish()
            page = browser.new_page()
            page.goto(srv.url + "/?corpus=demo&q=" + HAMMERED)
            assert "model v0001" in page.inner_text(".count")
            browser.close()

        print(f"hammer: {len(answers)} searches, {models_seen_count(answers)}; training took "
              f"{json.loads((models / 'demo' / 'v0001' / 'learn.json').read_text())['train_seconds']} s")
        # not one request failed, before, during or after the swap; they name the old then the new model
        assert hammer.errors == [] and answers and all(code == 200 for code, _ in answers)
        models_seen = [m for _, m in answers]
        assert set(models_seen) == {"base", "v0001"}, set(models_seen)
        assert models_seen[-20:] == ["v0001"] * 20

        judges = Judgements(cache / "judgements.sqlite").judges("demo")
        assert len(judges) == 2 and all(j.startswith("page-") and n == len(questions) for j, n in judges.items())
        record = json.loads((models / "demo" / "v0001" / "learn.json").read_text())
        assert record["verdict"] == "accepted" and record["marks"]["judges"] == 2
        assert record["heldout"]["questions"] == len(THEFT_HELD)
        assert record["heldout"]["candidate"] >= record["heldout"]["served"]
        model = load_model(models / "demo" / "v0001")
        trained = {q.text for q in model.questions}
        assert set(THEFT_TRAIN) <= trained and not set(THEFT_HELD) & trained  # held out means held out
        assert model.params["base"] == "bm25"

        # the new model refuses the questions it was trained on, and answers the held-out ones
        refused = client.get("/v1/demo/search", params={"q": THEFT_TRAIN[0]})
        assert refused.status_code == 409 and refused.json()["error"]["code"] == "seen"
        assert "v0001 model was trained on this question" in refused.json()["error"]["message"]
        held = client.get("/v1/demo/search", params={"q": THEFT_HELD[0]})
        assert held.status_code == 200 and held.json()["model"] == "v0001"

        # rollback through the pointer: the server follows lexir models use
        listed = cli("models", "list", "demo", "--models", str(models), cache=cache).stdout
        assert "* v0001" in listed and "accepted" in listed
        cli("models", "use", "demo", "base", "--models", str(models), cache=cache)
        wait_for(client, lambda s: s["model"] == "base", 30)
        again = client.get("/v1/demo/search", params={"q": THEFT_TRAIN[0]})
        assert again.status_code == 200 and again.json()["model"] == "base"
        cli("models", "use", "demo", "1", "--models", str(models), cache=cache)
        wait_for(client, lambda s: s["model"] == "v0001", 30)
        assert client.get("/v1/demo/search", params={"q": THEFT_TRAIN[0]}).status_code == 409
        client.close()
    finally:
        srv.stop()


def test_a_candidate_worse_on_the_held_out_marks_is_refused(tmp_path):
    """Two judges teach that taking someone's thing (theft, art. 278) is murder (art. 148); the
    held-out marks say theft. The candidate learns the wrong lesson, scores below the served BM25 on
    the held-out questions, and is kept as a refused version, never served."""
    cache, models = tmp_path / "cache", tmp_path / "models"
    train, held = side(TAKING, False)[:12], side(TAKING, True)[:4]
    marks = 2 * (len(train) + len(held))
    srv = learning_server(cache, models, f"min_marks={marks}", "min_questions=16", "data=none")
    try:
        client = httpx.Client(base_url=srv.url, timeout=60)
        for token in ("judge-one-session-token", "judge-two-session-token"):
            client.cookies.set("lexir_judge", token)
            for q in train:
                r = client.post("/judgements", json={"corpus": "demo", "query": q, "id": "kk::148", "grade": 1})
                assert r.status_code == 200, r.text
            for q in held:
                r = client.post("/judgements", json={"corpus": "demo", "query": q, "id": "kk::278", "grade": 1})
                assert r.status_code == 200, r.text
        client.cookies.clear()
        status = wait_for(client, lambda s: len(s["versions"]) > 1)
        row = status["versions"][1]
        assert row["version"] == "v0001" and row["verdict"] == "refused", status
        assert row["heldout"]["candidate"] < row["heldout"]["served"], row
        assert status["model"] == "base" and status["current"] == "base"
        assert client.get("/v1/demo/search", params={"q": train[0]}).json()["model"] == "base"
        load_model(models / "demo" / "v0001")  # kept whole, for a look
        listed = cli("models", "list", "demo", "--models", str(models), cache=cache).stdout
        assert "* base" in listed and "refused" in listed
        client.close()
    finally:
        srv.stop()


def test_bad_learning_input_is_refused(tmp_path):
    cache, models = tmp_path / "cache", tmp_path / "models"
    bad = cli("serve", "demo", "--learn", "--learn-option", "cap=2", cache=cache, check=False)
    assert bad.returncode != 0 and "cap" in bad.stderr + bad.stdout
    bad = cli("serve", "demo", "--learn", "--learn-option", "nonsense=1", cache=cache, check=False)
    assert bad.returncode != 0 and "no such option" in bad.stderr + bad.stdout
    bad = cli("models", "use", "demo", "v7", "--models", str(models), cache=cache, check=False)
    assert bad.returncode != 0 and "no models for corpus 'demo'" in bad.stderr + bad.stdout
    (models / "demo").mkdir(parents=True)
    bad = cli("models", "use", "demo", "v7", "--models", str(models), cache=cache, check=False)
    assert bad.returncode != 0 and "no version" in bad.stderr + bad.stdout
    bad = cli("models", "use", "../etc", "1", "--models", str(models), cache=cache, check=False)
    assert bad.returncode != 0 and "cannot name" in bad.stderr + bad.stdout
    srv = learning_server(cache, models, "min_marks=1000")
    try:
        with httpx.Client(base_url=srv.url, timeout=30) as client:
            assert client.get("/v1/nowhere/model").status_code == 404
            r = client.post("/judgements", json={"corpus": "demo", "query": "x", "id": "kk::1", "grade": 9})
            assert r.status_code == 422
            r = client.post("/judgements", json={"corpus": "demo", "query": "x", "id": "kk::99999", "grade": 1})
            assert r.status_code == 404
            client.cookies.set("lexir_judge", "short")  # not a session token: the judge is anonymous
            r = client.post("/judgements", json={"corpus": "demo", "query": "x", "id": "kk::1", "grade": 1})
            assert r.status_code == 200 and r.json()["judge"] == "anonymous"
    finally:
        srv.stop()


def test_schema_1_judgements_migrate_without_losing_a_mark(tmp_path):
    path = tmp_path / "judgements.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE marks (corpus TEXT NOT NULL, qid TEXT NOT NULL, query TEXT NOT NULL, "
               "doc_id TEXT NOT NULL, grade INTEGER NOT NULL, updated REAL NOT NULL, PRIMARY KEY (corpus, qid, doc_id))")
    old = [("demo", query_id(f"pytanie {i}"), f"pytanie {i}", f"kk::{i}", i % 2, 1000.0 + i) for i in range(50)]
    db.executemany("INSERT INTO marks VALUES (?, ?, ?, ?, ?, ?)", old)
    db.commit()
    db.close()
    store = Judgements(path)
    rows = store.rows("demo")
    assert sorted((q, t, d, g, u) for q, t, d, _, g, u in rows) == sorted((q, t, d, g, u) for _, q, t, d, g, u in old)
    assert {r[3] for r in rows} == {"unknown"}
    assert store.qrels_lines("demo") == [f"{q} 0 {d} {g}" for _, q, _, d, g, _ in sorted(old, key=lambda r: (r[1], r[3]))]
    # a second judge marks the same pair: two rows, and the export takes their mean
    store.mark("demo", "pytanie 1", "kk::1", 0, judge="page-abc")
    assert len(store.rows("demo")) == 51
    assert f"{query_id('pytanie 1')} 0 kk::1 1" in store.qrels_lines("demo")  # (1 + 0) / 2 rounds up
    assert store.qrels_lines("demo", judge="page-abc") == [f"{query_id('pytanie 1')} 0 kk::1 0"]
    Judgements(path)  # opening a migrated database again changes nothing
    assert len(store.rows("demo")) == 51
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == 2


def test_two_writers_of_one_corpus_exclude_each_other(tmp_path):
    store = ModelVersions(tmp_path, "demo")
    with store.locked():
        (store.folder / ".candidates" / "c-crashed").mkdir(parents=True)  # a writer that died mid-training
        other = cli("models", "use", "demo", "base", "--models", str(tmp_path), "--wait", "0.5",
                    cache=tmp_path / "cache", check=False)
        assert other.returncode != 0 and "another learner" in other.stderr + other.stdout
        with pytest.raises(Busy):
            with ModelVersions(tmp_path, "demo").locked():
                pass
    cli("models", "use", "demo", "base", "--models", str(tmp_path), cache=tmp_path / "cache")
    assert store.current() == "base" and not (store.folder / ".candidates" / "c-crashed").exists()


def test_a_server_killed_while_training_leaves_every_version_whole(tmp_path):
    """SIGKILL in the middle of a retrain: no half version, the pointer unmoved; the next server
    serves what was current, clears the leftovers and trains again."""
    cache, models = tmp_path / "cache", tmp_path / "models"
    train, held = side(TAKING, False)[:12], side(TAKING, True)[:4]
    options = (f"min_marks={2 * (len(train) + len(held))}", "min_questions=16")
    srv = learning_server(cache, models, *options)
    try:
        with httpx.Client(base_url=srv.url, timeout=60) as client:
            for token in ("judge-one-session-token", "judge-two-session-token"):
                client.cookies.set("lexir_judge", token)
                for q in train + held:
                    r = client.post("/judgements", json={"corpus": "demo", "query": q, "id": "kk::278", "grade": 1})
                    assert r.status_code == 200
            client.cookies.clear()
            deadline = time.time() + 120
            while not client.get("/v1/demo/model").json()["training"]:
                assert time.time() < deadline, "the retrain never started"
                time.sleep(0.02)
            srv.proc.kill()  # SIGKILL: no cleanup runs
            srv.proc.wait(10)
    finally:
        srv.stop()
    store = ModelVersions(models, "demo")
    assert store.versions() == [] and store.current() == "base"  # nothing half-written became a version
    srv = learning_server(cache, models, *options)
    try:
        with httpx.Client(base_url=srv.url, timeout=60) as client:
            status = wait_for(client, lambda s: len(s["versions"]) > 1)
            assert status["versions"][1]["version"] == "v0001"
        for version in store.versions():
            load_model(store.path(version))
        assert not any((store.folder / ".candidates").glob("c-*/model"))
    finally:
        srv.stop()
