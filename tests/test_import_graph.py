"""The import graphs of rise_core and of the explorer have no circle: every import counts (at the top, inside functions,
under TYPE_CHECKING: a type-only circle still ties the two modules together, and is one import away from a real one;
read with `ast` by `test_layers.imports`), so two modules that need each other must share a piece one layer down
instead. And the library draws no charts and no pages: plotly and streamlit are the explorer's."""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

from test_layers import PACKAGE, ROOT, imports, module_name, sources

EXPLORER = ROOT / "explorer"

UI_PACKAGES = ("plotly", "streamlit")


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """{module: the modules of the same package it imports} of `package` (rise_core by default; the explorer), names as
    `test_layers.module_name` gives them ('' is the package root, 'store' a subpackage's __init__, 'store.index' a
    module)."""
    return {module_name(path, package): {target for target, _, _ in imports(path, package)}
            for path in sources(package)}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of `graph` (its nodes, the first repeated at the end), or None when it has none."""
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        return list(exc.args[1])
    return None


def test_find_cycle_finds_a_circle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    cycle = find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})
    assert cycle is not None and set(cycle) == {"a", "b", "c"} and cycle[0] == cycle[-1]


def test_the_import_graph_reads_every_kind_of_import():
    """Known edges of each kind are in the graph (so an empty graph cannot pass the test below)."""
    graph = import_graph()
    assert "methods" in graph["counterfactual.config"]  # at the top, from a subpackage, two dots
    assert "store" in graph["ann.files"]  # under TYPE_CHECKING
    assert "default_model" in graph["models"]  # inside a function
    assert "store.index" in graph["store"] and "store.connection" in graph["store.reader"]  # a package's modules


def test_rise_core_has_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, ("import circle in rise_core: " + " -> ".join(f"rise_core.{m}".rstrip(".") for m in cycle)
                           + "; move what both need down a layer")


def test_the_explorer_graph_reads_every_kind_of_import():
    graph = import_graph(EXPLORER)
    assert "plain" in graph["views"]  # at the top, one dot
    assert "job_queue" in graph["jobs"] and "jobs" in graph["counterfactual_ui"]
    assert "resources" in graph["counterfactual_ui"]  # inside a function
    assert not any(m.startswith("rise_core") for deps in graph.values() for m in deps)  # only the explorer's own


def test_a_type_only_circle_counts(tmp_path):
    """The circle the explorer had (job_queue imported jobs under TYPE_CHECKING, jobs imported job_queue) is found."""
    pkg = tmp_path / "explorer"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "job_queue.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .jobs import Job\n")
    (pkg / "jobs.py").write_text("from .job_queue import JobQueue\n")
    graph = import_graph(pkg)
    assert graph["job_queue"] == {"jobs"} and graph["jobs"] == {"job_queue"}
    assert set(find_cycle(graph)) == {"job_queue", "jobs"}


def test_the_explorer_has_no_import_cycle():
    cycle = find_cycle(import_graph(EXPLORER))
    assert cycle is None, ("import circle in the explorer: " + " -> ".join(f"explorer.{m}".rstrip(".") for m in cycle)
                           + "; move what both need down (e.g. plain, job_queue)")


def test_rise_core_imports_no_ui_package():
    found = []
    for path in sources():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
            found += [f"rise_core/{path.relative_to(PACKAGE)}:{node.lineno} imports {n}" for n in names
                      if n.split(".")[0] in UI_PACKAGES]
    assert not found, "\n".join(found)
