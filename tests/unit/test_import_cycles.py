"""Imports run one way: no two of the project's modules import each other.

Every import counts, wherever it sits (module level, inside a function, under
``TYPE_CHECKING``): a function-level import that dodges a cycle is still one.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("examples", "memagent_workflow", "standin", "bench")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Module -> the project's modules it imports (a parent package not counted)."""
    files = {module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in files}
    for mod, path in files.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            for name in names:
                while name and name not in files:
                    name = name.rpartition(".")[0]
                if name and name != mod and not mod.startswith(name + "."):
                    graph[mod].add(name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_the_checker_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycles():
    graph = import_graph()
    assert "memagent_workflow.workflow" in graph["memagent_workflow.eval.workflow"]
    assert cycles(graph) == []


def under(mod: str, packages) -> bool:
    """``mod`` is one of ``packages`` or inside one."""
    return any(mod == p or mod.startswith(p + ".") for p in packages)


def test_the_algorithm_imports_none_of_the_folders_around_it():
    """The package map: the top-level modules (the algorithm, on data/'s row
    schema) import none of the trainer extensions, recovery, plumbing, eval,
    preflight, the service or the smoke, which build on them."""
    graph = import_graph()
    folders = [f"memagent_workflow.{f}" for f in ("trainer", "recovery", "infra")]
    folders += [
        f"memagent_workflow.{f}" for f in ("eval", "preflight", "serve", "smoke")
    ]
    folders.append("memagent_workflow.areal_internals")
    around = (*folders, "memagent_workflow.data")
    top = [
        m for m in graph if m.startswith("memagent_workflow.") and not under(m, around)
    ]
    assert "memagent_workflow.workflow" in top and "memagent_workflow.reward" in top
    assert "memagent_workflow.prompts.tokens" in top
    for mod in top:
        reach = {dep for dep in graph[mod] if under(dep, folders)}
        assert not reach, f"{mod} imports {sorted(reach)}"
