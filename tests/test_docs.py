"""The documentation's snippets, run as they are written (docs/development.md says what runs).

Every ```python block of README.md and docs/*.md runs in a fresh interpreter; every cheap ``lexir``
command of a ```bash block (on the shipped demo, ``systems``, ``cite`` from a pipe, ``fuse`` /
``eval`` of run files and ``graph neighbours`` of a graph written before it in the same block) runs through the CLI and must exit 0;
a ```text block after ``<!-- output -->`` holds figures the block before it prints, checked in order.
A block after ``<!-- not-run: REASON -->`` is skipped (with its reason)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lexir.cli.main import app

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\s*$")
NOT_RUN = re.compile(r"^<!--\s*not-run:\s*(.+?)\s*-->$")
SLOW = re.compile(r"^<!--\s*slow:\s*(.+?)\s*-->$")  # runs, but only with the slow tests
OUTPUT = "<!-- output -->"
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?")  # figures, not the 25 of bm25
# verbs that start a server or talk to an LLM: never run here, whatever corpus they name
NEVER = {"serve", "mcp", "annotate", "cost", "answer-eval"}


@dataclass
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    not_run: str | None = None  # the reason, when marked
    slow: str | None = None  # the reason, when marked
    output: str | None = None  # the ```text block after <!-- output -->, if any

    @property
    def where(self) -> str:
        page = self.page.relative_to(REPO) if self.page.is_relative_to(REPO) else self.page.name
        return f"{page}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of one page, with their markers."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, lang = i, m.group(1)
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        if j == len(lines):
            raise AssertionError(f"{page.name}:{start + 1}: a code block that is never closed")
        before = [line for line in lines[:start] if line.strip()]
        previous = before[-1].strip() if before else ""
        block = Block(page, start + 1, lang, "\n".join(lines[start + 1:j]) + "\n")
        if m := NOT_RUN.match(previous):
            block.not_run = m.group(1)
        if m := SLOW.match(previous):
            block.slow = m.group(1)
        if previous == OUTPUT and found:
            found[-1].output = block.text
        else:
            found.append(block)
        i = j + 1
    return found


ALL = [b for page in PAGES for b in blocks(page)]
PYTHON = [b for b in ALL if b.lang == "python"]
BASH = [b for b in ALL if b.lang == "bash"]


def check_figures(expected: str, printed: str, where: str) -> None:
    """Each number of ``expected`` appears in ``printed``, in the same order."""
    want = NUMBER.findall(expected)
    assert want, f"{where}: an output block with no figure to check"
    got = iter(NUMBER.findall(printed))
    for n, number in enumerate(want):
        assert any(number == g for g in got), (
            f"{where}: the documented figure {number} (#{n + 1} of {want}) is not printed in that order;"
            f" printed:\n{printed[-3000:]}")


def run_python(block: Block, cwd: Path) -> str:
    """The block in a fresh interpreter; its stdout. Fails with the block's place and error."""
    path = [str(REPO / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    done = subprocess.run([sys.executable, "-c", block.text], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, f"{block.where}: the python block failed:\n{done.stderr[-3000:]}"
    return done.stdout


def commands(text: str) -> list[tuple[list[str], str | None]]:
    """The ``lexir`` commands of a bash block: (arguments after ``lexir``, the shell command whose
    output is piped into it, or None). Continuation lines are joined, comments dropped."""
    out = []
    for line in text.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        words = list(lexer)
        parts, part = [], []
        for w in words:
            if w in ("&&", ";", "||"):
                parts.append(part)
                part = []
            else:
                part.append(w)
        parts.append(part)
        for part in parts:
            feed = None
            if "|" in part:
                cut = len(part) - 1 - part[::-1].index("|")
                feed, part = shlex.join(part[:cut]), part[cut + 1:]
            if part and part[0] == "lexir":
                out.append((part[1:], feed))
    return out


def cheap(args: list[str], feed: str | None, cwd: Path) -> bool:
    """Whether a command runs here: on the demo, data-free, or over run files made before it."""
    if not args or args[0] in NEVER:
        return False
    verb = args[0]
    if verb == "systems":
        return True
    if verb == "graph" and args[1:2] == ["neighbours"]:
        return len(args) > 2 and (cwd / args[2]).is_dir()  # a graph an earlier command built
    if verb == "cite":
        return feed is not None and feed.split()[0] in ("echo", "printf")
    if verb in ("fuse", "eval"):
        output = args[args.index("--output") + 1] if "--output" in args[:-1] else None
        runs = [a.split("=", 1)[-1] for a in args[1:] if a.endswith(".trec") and a != output]
        made = bool(runs) and all((cwd / r).is_file() for r in runs)
        return made and (verb == "fuse" or "demo" in args)
    return "demo" in args[1:]


def run_bash(block: Block, cwd: Path, seen: set[str]) -> tuple[int, int, str]:
    """The block's cheap lexir commands, in order, in ``cwd``: (run, skipped, their output)."""
    runner = CliRunner()
    ran = skipped = 0
    printed = []
    old = Path.cwd()
    os.chdir(cwd)
    try:
        for args, feed in commands(block.text):
            if not cheap(args, feed, cwd):
                skipped += 1
                continue
            key = shlex.join(args)
            if key in seen and not any(a.startswith(("-o", "--output")) for a in args) and block.output is None:
                continue  # the same command (lexir demo in README and index) runs once
            seen.add(key)
            stdin = subprocess.run(["bash", "-c", feed], capture_output=True, text=True, check=True).stdout \
                if feed else None
            result = runner.invoke(app, args, input=stdin)
            assert result.exit_code == 0, (
                f"{block.where}: `lexir {key}` exited {result.exit_code}:\n{result.output[-3000:]}"
                + (f"\n{result.exception!r}" if result.exception and not isinstance(result.exception, SystemExit)
                   else ""))
            printed.append(result.output)
            ran += 1
    finally:
        os.chdir(old)
    return ran, skipped, "\n".join(printed)


def first_of_its_kind(block: Block) -> Block:
    """The first python block with the same text (README's example is also the docs' first page's)."""
    return next(b for b in PYTHON if b.text == block.text)


@pytest.mark.parametrize("block", [pytest.param(b, marks=pytest.mark.slow) if b.slow else b for b in PYTHON],
                         ids=lambda b: b.where)
def test_python_block_runs(block, tmp_path):
    if block.not_run:
        pytest.skip(f"marked not-run: {block.not_run}")
    first = first_of_its_kind(block)
    if first is not block and first.output == block.output:
        pytest.skip(f"the same block as {first.where}, run there")
    printed = run_python(block, tmp_path)
    if block.output is not None:
        check_figures(block.output, printed, block.where)


def test_bash_blocks_run(tmp_path):
    """Every bash block's cheap lexir commands, in one test (they share the index cache)."""
    seen: set[str] = set()
    ran = skipped = 0
    for n, block in enumerate(BASH):
        if block.not_run:
            continue
        cwd = tmp_path / f"block{n}"
        cwd.mkdir()
        r, s, printed = run_bash(block, cwd, seen)
        ran, skipped = ran + r, skipped + s
        if block.output is not None:
            assert r, f"{block.where}: an output block after a block that runs no command"
            check_figures(block.output, printed, block.where)
    print(f"{ran} documented lexir commands ran, {skipped} left to other tests")
    # the CLI page's demo commands alone are more than this: a rule that ran nothing would fail
    assert ran >= 15, f"only {ran} documented lexir commands ran ({skipped} skipped)"


def test_markers_are_well_formed():
    """A not-run marker has a reason and stands before a block; an output block follows a block."""
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if line.strip().startswith(("<!-- not-run", "<!-- slow")) or line.strip() == OUTPUT:
                assert NOT_RUN.match(line.strip()) or SLOW.match(line.strip()) or line.strip() == OUTPUT, \
                    f"{page.name}:{i + 1}: {line}"
                nxt = next((x for x in lines[i + 1:] if x.strip()), "")
                assert nxt.startswith("```"), f"{page.name}:{i + 1}: a marker not followed by a code block"
    assert sum(b.output is not None for b in ALL) >= 3


def test_a_broken_snippet_fails(tmp_path):
    """The checks can fail: a python error, a failing lexir command and a wrong figure each do."""
    page = tmp_path / "broken.md"
    page.write_text("```python\nimport lexir\nlexir.load('no-such-dataset')\n```\n\n"
                    "```bash\nlexir search demo \"kradzież\" -k 3 --system no-such-system\n```\n\n"
                    "```python\nprint(2 + 2)\n```\n\n<!-- output -->\n```text\n5\n```\n", encoding="utf-8")
    python1, bash, python2 = blocks(page)
    with pytest.raises(AssertionError, match="python block failed"):
        run_python(python1, tmp_path)
    with pytest.raises(AssertionError, match="exited 2"):
        run_bash(bash, tmp_path, set())
    with pytest.raises(AssertionError, match="documented figure 5"):
        check_figures(python2.output, run_python(python2, tmp_path), python2.where)
