"""Quality beside cost (the Greek paper's Table 5): per system nDCG@10 and Recall@100 next to
LLM calls, prompt and completion tokens and seconds per query, and how many answers were
malformed.

    rows = [SystemResult.from_accounting("rerank", run, client.accounting, qrels), ...]
    console.print(cost_table(rows))            # a rich Table
    print(cost_table(rows, fmt="markdown"))    # a markdown table
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lexir.llm.accounting import Accounting, Usage
from lexir.types import Qrels, Run

COLUMNS = ("system", "queries", "nDCG@10", "R@100", "calls/q", "prompt tok/q", "compl. tok/q", "s/q",
           "cached", "malformed")


@dataclass
class SystemResult:
    system: str
    run: Run
    usage: Usage
    qrels: Qrels
    n_queries: int | None = None

    @classmethod
    def from_accounting(cls, system: str, run: Run, accounting: Accounting, qrels: Qrels,
                        account_as: str | None = None) -> SystemResult:
        """Usage of ``account_as`` (default ``system``) over the queries of ``run``."""
        name = account_as or system
        usage = Usage()
        for r in accounting.records:
            if r.system == name and (r.qid in run or r.qid.startswith("doc:")):
                usage.add(r)
        return cls(system, run, usage, qrels)

    def row(self) -> dict[str, object]:
        from lexir.evaluation.evaluate import evaluate

        qrels = {q: rel for q, rel in self.qrels.items() if q in self.run}
        n = self.n_queries or len(qrels) or 1
        means = evaluate(self.run, qrels, ["nDCG@10", "R@100"]).means() if qrels else {}
        values = {str(m): v for m, v in means.items()}
        u = self.usage
        malformed = sum(v for k, v in u.statuses.items() if k != "ok")
        return {"system": self.system, "queries": n, "nDCG@10": values.get("nDCG@10", float("nan")),
                "R@100": values.get("R@100", float("nan")), "calls/q": u.calls / n,
                "prompt tok/q": u.prompt_tokens / n, "compl. tok/q": u.completion_tokens / n,
                "s/q": u.seconds / n, "cached": f"{u.cached}/{u.calls}",
                "malformed": (f"{malformed} (" + ", ".join(f"{k} {v}" for k, v in sorted(u.statuses.items())
                                                           if k != "ok") + ")") if malformed else "0"}


def _fmt(col: str, value: object) -> str:
    if isinstance(value, float):
        if col in ("nDCG@10", "R@100"):
            return f"{value:.3f}"
        if col.endswith("tok/q"):
            return f"{value / 1000:.1f}k" if value >= 10000 else f"{value:.0f}"
        return f"{value:.1f}" if col == "calls/q" else f"{value:.2f}"
    return str(value)


def cost_table(results: Sequence[SystemResult], fmt: str = "rich", title: str = "Quality and LLM cost per query"):
    """A rich Table (``fmt="rich"``) or markdown text (``fmt="markdown"``)."""
    rows = [r.row() for r in results]
    if fmt == "markdown":
        lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join(["---"] + ["---:"] * (len(COLUMNS) - 1)) + "|"]
        lines += ["| " + " | ".join(_fmt(c, row[c]) for c in COLUMNS) + " |" for row in rows]
        return "\n".join(lines)
    if fmt != "rich":
        raise ValueError(f"format {fmt!r}; valid: rich, markdown")
    from rich.table import Table

    table = Table(title=title)
    for c in COLUMNS:
        table.add_column(c, justify="left" if c == "system" else "right")
    for row in rows:
        table.add_row(*(_fmt(c, row[c]) for c in COLUMNS))
    return table
