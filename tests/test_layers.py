"""The import rules of the house (``docs/architecture.md``, "Layers"), checked on the source.

An ``ast`` walk over every project module, module-level and function-level imports alike
(a function-level import that dodges a cycle is still a cycle). No exceptions, no allow-list:
a rule that needs one is a rule to change in the docs first.
"""
from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The layers, bottom up. A package may import its own modules and any package of a lower rank;
# ``generation`` sits beside ``caching`` (caching may ask the model: admission's model check, the
# near-miss verifier), so caching ranks just above it. ``modelbuild`` (training data, training, replay
# and calibration of the learned models) sits above the request path it builds for: it reads the
# guards and the labels, and only supportbot's staff pages and the tools reach it. bench/ and scripts/
# are tools on top.
RANK = {
    "core": 0,
    "ingestion": 1,
    "retrieval": 2,
    "generation": 3,
    "caching": 4,
    "modelbuild": 5,
    "supportbot": 6,
    "bench": 7,
    "scripts": 7,
    "manage": 7,
    "gunicorn": 7,  # gunicorn.conf.py
}
# The model server is its own process: it imports nothing of Django or the apps; only the
# process that starts it (generation's local backend, supportbot.run, the benches) imports it.
MODELSERVER = "modelserver"
PROJECT = set(RANK) | {MODELSERVER}

# Rule 4: Redis key prefixes, and the one module allowed to spell each.
KEY_OWNERS = {
    "ans": "caching.layers.exact",
    "ans-idx": "caching.layers.exact",
    "cite:ans": "caching.layers.exact",
    "srch": "caching.layers.search",
    "cite:srch": "caching.layers.search",
    "emb": "retrieval.embeddings",
}
KEY_LITERAL = re.compile(r"^(cite:ans|cite:srch|ans-idx|ans|srch|emb):")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def project_modules() -> dict[str, Path]:
    modules = {}
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT).parts
        if rel[0] in (".venv", "var", "tests", "node_modules") or "migrations" in rel:
            continue
        if rel[0].removesuffix(".py").split(".")[0] not in PROJECT:
            continue
        modules[_module_name(path)] = path
    return modules


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


@cache
def imports() -> dict[str, list[tuple[str, int, bool]]]:
    """module -> [(imported project module, line, function-level)]; ``from pkg import name`` counts as
    importing ``pkg.name`` when that is a module."""
    modules = project_modules()
    graph: dict[str, list[tuple[str, int, bool]]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        nested = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                  for n in ast.walk(f)}
        edges = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(module, path.name == "__init__.py", node)
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                           for alias in node.names]
            else:
                continue
            for target in targets:
                if target.split(".")[0] in PROJECT | {"django"}:
                    edges.append((target, node.lineno, id(node) in nested))
        graph[module] = edges
    return graph


def _top(module: str) -> str:
    return module.split(".")[0]


def test_the_walk_sees_the_project():
    modules = project_modules()
    for package in ("core", "ingestion", "retrieval", "generation", "caching", "modelbuild", "supportbot", MODELSERVER):
        assert package in modules, f"{package} is not a package at the top level"
    assert sum(1 for edges in imports().values() for _, _, nested in edges if nested) > 0  # it sees inside functions


def test_arrows_point_down():
    """Nevers 1 and 2: no package imports one above it (caching, retrieval, ingestion and generation never
    reach supportbot; ingestion imports neither retrieval nor caching; retrieval never imports caching)."""
    wrong = []
    for module, edges in imports().items():
        here = _top(module)
        for target, line, nested in edges:
            there = _top(target)
            if there in ("django", here) or there == MODELSERVER:
                continue
            if here == MODELSERVER or RANK[there] > RANK[here] or (RANK[there] == RANK[here]):
                wrong.append(f"{module}:{line} imports {target}{' (in a function)' if nested else ''}")
    assert not wrong, "imports against the layers:\n" + "\n".join(sorted(set(wrong)))


# What a request runs: the Ask pipeline, the views that call it, the Ask tasks.
REQUEST_PATH = ("supportbot.pipeline", "supportbot.views", "supportbot.tasks")


def test_the_request_path_imports_no_model_building():
    """The request path loads a built judge (``caching.guards.judge``, the recipe from
    ``caching.guards.judge_recipe``) and reaches nothing of ``modelbuild``, however indirectly."""
    modules = project_modules()
    starts = [m for m in REQUEST_PATH if m in modules]
    assert "supportbot.pipeline" in starts
    seen, todo, via = set(starts), list(starts), {}
    while todo:
        module = todo.pop()
        for target, _, _ in imports().get(module, []):
            target = target if target in modules else ".".join(target.split(".")[:-1])
            if target in modules and target not in seen:
                seen.add(target)
                via[target] = module
                todo.append(target)
    reached = sorted(m for m in seen if _top(m) == "modelbuild")
    chains = []
    for module in reached:
        chain = [module]
        while chain[-1] in via:
            chain.append(via[chain[-1]])
        chains.append(" <- ".join(chain))
    assert not chains, "the request path imports model building:\n" + "\n".join(chains)
    assert "caching.guards.judge" in seen and "caching.guards.judge_recipe" in seen  # it does load the judge


def test_modelserver_imports_nothing_of_django_or_the_apps():
    """Never 5: the model server is a separate process."""
    wrong = [f"{module}:{line} imports {target}" for module, edges in imports().items() if _top(module) == MODELSERVER
             for target, line, _ in edges if _top(target) != MODELSERVER]
    assert not wrong, "\n".join(sorted(set(wrong)))


def test_no_tasks_module_imports_another_apps_tasks():
    """Never 3: a tasks.py calls services of its own app."""
    wrong = [f"{module}:{line} imports {target}" for module, edges in imports().items()
             for target, line, _ in edges
             if target.endswith(".tasks") and _top(target) != _top(module) and module.endswith("tasks")]
    assert not wrong, "\n".join(sorted(set(wrong)))


def test_no_import_cycles():
    """Never 6: the module graph, function-level imports included, has no cycle. A function-level import
    that stays is there for another reason (Django's app loading, a heavy optional dependency), never to
    hide a cycle, because with it the graph is still acyclic."""
    modules = project_modules()
    graph = {m: sorted({t for t, _, _ in edges if t in modules and t != m}) for m, edges in imports().items()}
    index, low, stack, on_stack, cycles, counter = {}, {}, [], set(), [], [0]

    def visit(node):  # Tarjan's strongly connected components
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


# The tools on top (bench/, scripts/) start the services and Django, then import the apps in their
# functions: that is how a tool runs, so their function-level imports need no reason each.
TOOLS = {"bench", "scripts"}
DEFERRED = "# deferred:"


def test_a_function_level_import_says_why():
    """Never 6, the other half: an app module imports a project module inside a function only for a
    reason it states. The reason is Django's app loading (the import is in ``AppConfig.ready()``), or a
    ``# deferred: <why>`` comment in the function at or above the import (start-up before
    ``django.setup()``, a process that must not load the apps yet). Anything else is hoisted."""
    modules = project_modules()
    unexplained = []
    for module, path in modules.items():
        if _top(module) in TOOLS:
            continue
        lines = path.read_text().splitlines()
        tree = ast.parse("\n".join(lines), str(path))
        verdicts: dict[int, tuple[int, bool]] = {}  # id(import) -> (line, explained by some enclosing function)
        for func in ast.walk(tree):
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(func):
                if isinstance(node, ast.Import):
                    project = any(alias.name.split(".")[0] in PROJECT for alias in node.names)
                elif isinstance(node, ast.ImportFrom):
                    project = bool(node.level) or (node.module or "").split(".")[0] in PROJECT
                else:
                    continue
                if not project:
                    continue
                said = func.name == "ready" or any(DEFERRED in text for text in lines[func.lineno - 1:node.lineno])
                line, before = verdicts.get(id(node), (node.lineno, False))
                verdicts[id(node)] = (line, before or said)
        unexplained += [f"{module}:{line}" for line, said in verdicts.values() if not said]
    assert not unexplained, ("function-level imports of project modules with no stated reason (hoist them, or "
                             f"say why with '{DEFERRED} ...'):\n" + "\n".join(sorted(unexplained)))


def _key_literals(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value
        elif isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
            yield node.lineno, str(node.values[0].value)


def test_only_a_layer_spells_its_keys():
    """Never 4: purge, review, retention, erasure and the benches call the layer; only the layer's own
    module writes ``ans:``, ``cite:``, ``srch:`` or ``emb:``."""
    wrong = []
    for module, path in project_modules().items():
        for line, text in _key_literals(ast.parse(path.read_text())):
            match = KEY_LITERAL.match(text)
            if match and KEY_OWNERS[match.group(1)] != module:
                wrong.append(f"{module}:{line} spells {text!r} (owned by {KEY_OWNERS[match.group(1)]})")
    assert not wrong, "\n".join(sorted(set(wrong)))
