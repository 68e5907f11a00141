"""Imports run one way (docs/architecture.md, "Separation"): every module of the package, and the experiment
config files, import only rooms below their own, and no files import each other in a circle. Imports inside
functions count: a lazy import that climbs is still a dependency that climbs."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Low to high; a room may import itself and the rooms before it. Each entry is a folder or a file of the package
# (or the top-level experiments/ folder of config files).
ROOMS = ("albert_jax/configs", "albert_jax/sharding.py", "albert_jax/lifeline.py", "albert_jax/modeling",
         "albert_jax/data", "albert_jax/config.py", "albert_jax/compile_cache.py", "albert_jax/tasks",
         "albert_jax/training", "albert_jax/summary.py", "albert_jax/interop", "albert_jax/runs",
         "albert_jax/compression", "albert_jax/plan", "albert_jax/ablations", "experiments", "albert_jax/cli",
         "albert_jax/main.py")

# the packages themselves: albert_jax/__init__.py sets a version and imports nothing of ours
TOP = (ROOT / "albert_jax/__init__.py", ROOT / "experiments/__init__.py")


def _room(path: Path) -> str:
    rel = path.relative_to(ROOT).as_posix()
    for room in ROOMS:
        if rel == room or rel.startswith(room + "/"):
            return room
    raise AssertionError(f"{rel}: in no room of ROOMS; add it where it belongs")


def _module_file(name: str) -> Path | None:
    """albert_jax.a.b -> its file (a module or a package's __init__), or None for a name that is not a module."""
    base = ROOT.joinpath(*name.split("."))
    for cand in (base.with_suffix(".py"), base / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def _imports(path: Path) -> set[Path]:
    """The files of this tree that `path` imports, at module level or inside functions (a name taken from a
    package's `__init__.py` counts as an import of that file)."""
    out: set[Path] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [_module_file(a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            targets = [_module_file(f"{node.module}.{a.name}") or _module_file(node.module) for a in node.names]
        else:
            continue
        out.update(t for t in targets if t is not None and t != path and t not in TOP)
    return out


def _graph() -> dict[Path, set[Path]]:
    files = [f for f in sorted(ROOT.glob("albert_jax/**/*.py")) + sorted(ROOT.glob("experiments/*.py")) if f not in TOP]
    return {f: _imports(f) for f in files}


def climbing(graph: dict[Path, set[Path]]) -> list[str]:
    order = {room: i for i, room in enumerate(ROOMS)}
    return [f"{src.relative_to(ROOT)} -> {dst.relative_to(ROOT)}"
            for src, dsts in graph.items() for dst in dsts
            if order[_room(dst)] > order[_room(src)]]


def circles(graph: dict[Path, set[Path]]) -> list[list[str]]:
    """Every strongly connected set of more than one file (Tarjan), as relative paths."""
    index: dict[Path, int] = {}
    low: dict[Path, int] = {}
    stack: list[Path] = []
    on: set[Path] = set()
    found: list[list[str]] = []

    def visit(v: Path) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(str(c.relative_to(ROOT)) for c in comp))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_import_climbs_the_layers():
    assert climbing(_graph()) == []


def test_no_circles():
    assert circles(_graph()) == []


def test_the_checks_see_a_climb_and_a_circle(tmp_path):
    # the two checks on a graph that breaks both rules: tasks/ importing runs/, and two files importing each other
    a, b = ROOT / "albert_jax/tasks/base.py", ROOT / "albert_jax/runs/finetune.py"
    graph = {a: {b}, b: {a}}
    assert climbing(graph) == ["albert_jax/tasks/base.py -> albert_jax/runs/finetune.py"]
    assert circles(graph) == [["albert_jax/runs/finetune.py", "albert_jax/tasks/base.py"]]


@pytest.mark.parametrize("name,expected", [("albert_jax.runs.finetune", "albert_jax/runs/finetune.py"),
                                           ("albert_jax.runs.finetune.finetune", None)])
def test_module_file(name, expected):
    got = _module_file(name)
    assert (got.relative_to(ROOT).as_posix() if got else None) == expected
