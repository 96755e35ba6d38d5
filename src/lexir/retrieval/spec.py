"""System specs: how a composite system names the systems it is built from.

A spec is a system name with optional parameters in parentheses, and a list of specs is
joined with ``+``::

    bm25
    bm25(k1=0.9;mode=stem)
    bm25(mode=stem)+dense
    rrf(systems=bm25+dense;k=60)          # specs nest

On the command line: ``lexir run pl-exams --system rrf -p systems="bm25(k1=0.6)+dense"``.
In an experiment file a list may also name another entry of the same file; the experiment
expands such names into full specs before running, so cached runs follow every change.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Spec:
    name: str
    params: tuple[tuple[str, str], ...] = ()

    @property
    def param_dict(self) -> dict[str, str]:
        return dict(self.params)

    def __str__(self) -> str:
        if not self.params:
            return self.name
        return f"{self.name}({';'.join(f'{k}={v}' for k, v in self.params)})"


def _split_top(text: str, sep: str) -> list[str]:
    """Split on ``sep`` outside parentheses."""
    parts, depth, current = [], 0, []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced ')' in system spec {text!r}")
        if ch == sep and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    if depth:
        raise ValueError(f"unbalanced '(' in system spec {text!r}")
    parts.append("".join(current))
    return [p.strip() for p in parts]


def parse_spec(text: str) -> Spec:
    text = text.strip()
    if not text:
        raise ValueError("empty system spec")
    if "(" not in text:
        return Spec(text)
    if not text.endswith(")"):
        raise ValueError(f"system spec {text!r}: parameters must close with ')'")
    name, inner = text.split("(", 1)
    params = []
    for pair in _split_top(inner[:-1], ";"):
        if not pair:
            continue
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"system spec {text!r}: parameter {pair!r} is not key=value")
        params.append((key.strip(), value.strip()))
    return Spec(name.strip(), tuple(params))


def parse_spec_list(text: str) -> list[Spec]:
    specs = [parse_spec(part) for part in _split_top(text, "+") if part]
    if not specs:
        raise ValueError(f"no systems in {text!r}")
    return specs


def expand_names(text: str, named: dict[str, Spec]) -> str:
    """Replace list items that name an experiment entry by that entry's full spec."""
    out = []
    for spec in parse_spec_list(text):
        if spec.name in named and not spec.params:
            out.append(str(named[spec.name]))
        else:
            out.append(str(spec))
    return "+".join(out)
