"""Every import the base install makes is a declared dependency (the bug: typer 0.29 stopped
installing click, and `pip install -e . && lexir demo` died on a fresh machine while CI, which
installs the test extras first, stayed green). `.ci/run` also runs the README's first command in
an empty venv; this test names the module and the missing distribution without one."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import lexir

ROOT = Path(lexir.__file__).parent
PYPROJECT = ROOT.parent.parent / "pyproject.toml"

# modules that belong to an extra, and say so with a clear error when it is missing
EXTRA_OF = {
    "service/": "serve",
    "ray_serve.py": "ray",
    "ray_routing.py": "ray",
    "integrations/langchain.py": "langchain",
    "integrations/llamaindex.py": "llamaindex",
}


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _module_level_imports(tree: ast.Module):
    """Imports executed when the module is imported: at module level, outside try blocks that
    catch ImportError, outside functions and classes (those run only when called)."""
    def walk(body, guarded):
        for node in body:
            if isinstance(node, ast.Import):
                for a in node.names:
                    yield a.name.split(".")[0], node.lineno, guarded
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                yield node.module.split(".")[0], node.lineno, guarded
            elif isinstance(node, ast.Try):
                catches = any(
                    h.type is None or "ImportError" in ast.unparse(h.type) or "ModuleNotFoundError" in ast.unparse(h.type)
                    for h in node.handlers)
                yield from walk(node.body, guarded or catches)
                for h in node.handlers:
                    yield from walk(h.body, guarded)
                yield from walk(node.orelse + node.finalbody, guarded)
            elif isinstance(node, ast.If):
                if "TYPE_CHECKING" in ast.unparse(node.test):
                    continue
                yield from walk(node.body + node.orelse, guarded)
    yield from walk(tree.body, False)


def test_base_install_imports_only_declared_distributions():
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    base = {_name(r) for r in project["dependencies"]}
    extras = {k: {_name(r) for r in v} for k, v in project["optional-dependencies"].items()}
    providers = metadata.packages_distributions()
    missing = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        allowed = set(base)
        extra = next((e for prefix, e in EXTRA_OF.items() if rel.startswith(prefix)), None)
        if extra:
            allowed |= extras[extra]
        for top, line, guarded in _module_level_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if guarded or top == "lexir" or top in sys.stdlib_module_names:
                continue
            dists = {d.lower().replace("_", "-") for d in providers.get(top, [])}
            if not dists and extra:
                continue  # the extra is not installed here; its modules say so when imported
            if not dists:
                missing.append(f"{rel}:{line}: imports {top!r}, which no installed distribution provides")
            elif not dists & allowed:
                missing.append(f"{rel}:{line}: imports {top!r} (from {sorted(dists)}), not a declared dependency")
    assert not missing, "\n".join(missing)
