"""Dependencies point one way: no import cycle among our modules, sim never imports the app.

Why: a cycle (sim/workload.py and sim/generators.py importing each other, hidden in a function)
makes a module's meaning depend on import order; the check reads every import statement, at
module level or inside functions, of every module in sim/, lessons/ and ui/.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("sim", "lessons", "ui")


def _modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for target in targets:
                if target in modules and target != name and not name.startswith(target + "."):
                    graph[name].add(target)
    return graph


def test_no_import_cycle():
    graph = _graph()
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt) :] + [nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


def test_sim_imports_neither_lessons_nor_ui():
    for name, targets in _graph().items():
        if name.startswith("sim"):
            assert not {t for t in targets if t.split(".")[0] in ("lessons", "ui")}, name


def test_lessons_never_import_ui_or_streamlit():
    for name, path in _modules().items():
        if name.startswith("lessons"):
            text = path.read_text(encoding="utf-8")
            assert "import streamlit" not in text and "from ui" not in text, name
