"""Comparison tables as Markdown, LaTeX and rich.

Cells read ``0.412 [0.37, 0.45]``; a marker flags a Holm-adjusted p below
``alpha`` against the baseline. The mean keeps three decimals because
differences between systems often live in the third; the bounds need fewer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .compare import Comparison, Estimate, PairedTest

if TYPE_CHECKING:  # rich is only needed by to_rich_table
    from rich.table import Table

_TEST_NAMES = {"mcnemar": "exact McNemar", "randomisation": "randomisation"}


def format_estimate(e: Estimate) -> str:
    return f"{e.mean:.3f} [{e.low:.2f}, {e.high:.2f}]"


def _p(p: float) -> str:
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _footnote(c: Comparison, marker: str) -> str:
    tested = ", ".join(f"{t.measure}: {_TEST_NAMES[t.test]}" for t in _one_per_measure(c.tests))
    level = round(c.confidence * 100)
    text = f"{level}% intervals (Wilson for Hit/ActHit, bootstrap otherwise); n = {c.n_queries} queries."
    if tested:
        text += f" {marker}: Holm-adjusted p < {c.alpha:g} against {c.baseline} ({tested})."
    return text


def _one_per_measure(tests: list[PairedTest]) -> list[PairedTest]:
    seen: dict[object, PairedTest] = {}
    for t in tests:
        seen.setdefault(t.measure, t)
    return list(seen.values())


def _system_label(c: Comparison, name: str) -> str:
    return f"{name} (baseline)" if name == c.baseline else name


# ---------------------------------------------------------------------------
# markdown


def _md(text: str) -> str:
    return text.replace("|", r"\|")


def to_markdown(c: Comparison) -> str:
    """A summary table, a footnote, and a table of the tests themselves."""
    head = ["System", *map(str, c.measures)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in c.systems:
        cells = [
            format_estimate(c.estimates[name][m]) + (" *" if c.significant(name, m) else "")
            for m in c.measures
        ]
        lines.append("| " + " | ".join([_md(_system_label(c, name)), *cells]) + " |")
    lines += ["", _footnote(c, r"\*")]
    if c.tests:
        lines += [
            "",
            "| System | Measure | Test | Δ | b | c | p | p (Holm) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for t in c.tests:
            b = "" if t.b is None else str(t.b)
            cc = "" if t.c is None else str(t.c)
            lines.append(
                f"| {_md(t.system)} | {t.measure} | {_TEST_NAMES[t.test]} | {t.delta:+.3f} "
                f"| {b} | {cc} | {_p(t.p)} | {_p(t.p_adjusted)} |"
            )
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# latex

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    # a row starting with "[" would be read as the optional argument of "\\"
    "[": "{[}",
}


def _tex(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def to_latex(c: Comparison) -> str:
    """A booktabs ``table`` environment; significant cells carry a dagger."""
    lines = [
        r"\begin{table}",
        r"\centering",
        r"\begin{tabular}{l" + "c" * len(c.measures) + "}",
        r"\toprule",
        " & ".join(["System", *(_tex(str(m)) for m in c.measures)]) + r" \\",
        r"\midrule",
    ]
    for name in c.systems:
        cells = []
        for m in c.measures:
            e = c.estimates[name][m]
            mark = r"$^\dagger$" if c.significant(name, m) else ""
            cells.append(f"{e.mean:.3f}{mark} {{[}}{e.low:.2f}, {e.high:.2f}]")
        lines.append(" & ".join([_tex(_system_label(c, name)), *cells]) + r" \\")
    lines += [
        r"\bottomrule",
        r"\end{tabular}",
        r"\caption{" + _tex(_footnote(c, "@DAGGER@")).replace("@DAGGER@", r"$\dagger$") + "}",
        r"\end{table}",
    ]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# rich


def to_rich_table(c: Comparison) -> Table:
    """A ``rich.table.Table``; significant cells are bold and starred."""
    from rich.table import Table

    table = Table(title=f"lexir comparison (baseline: {c.baseline})", caption=_footnote(c, "*"))
    table.add_column("System", style="bold")
    for m in c.measures:
        table.add_column(str(m), justify="right")
    for name in c.systems:
        cells = []
        for m in c.measures:
            text = format_estimate(c.estimates[name][m])
            cells.append(f"[bold]{text} *[/bold]" if c.significant(name, m) else text)
        # system names are user text: no rich markup inside them
        table.add_row(_escape_rich(_system_label(c, name)), *cells)
    return table


def _escape_rich(text: str) -> str:
    from rich.markup import escape

    return escape(text)
