"""The layers of the diagram in docs/ARCHITECTURE.md, kept true: a rise_core module imports only from its own line and the lines
above it (every import, including those inside functions and under TYPE_CHECKING, read with `ast`)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "rise_core"

# One entry per line of the diagram in docs/ARCHITECTURE.md, lowest layer first; a subpackage (ingest, store, ann,
# diagnostics, counterfactual, cli) is one line holding all its modules. A module on a line may import from its own line and the
# lines before it.
LAYERS: list[tuple[str, ...]] = [
    ("errors", "units", "saved_config", "env_limits", "config", "samples", "sketch", "vocab_pass", "model_lock",
     "span_counts", "memo", "csv_out"),
    ("models", "default_model"),
    ("adapters",),
    ("engine",),
    ("learned",),
    ("adaptive", "feedback"),
    ("scoring", "explain"),
    ("ingest_limits", "bundled"),
    ("ingest",),
    ("store",),
    ("ranking",),
    ("ann",),
    ("shared_spans",),
    ("attribution", "behaviour", "span_lift"),
    ("baselines", "fusion", "readout_cache", "metrics", "agreement"),
    ("evaluation", "bench", "compare", "method_types", "methods", "feedback_eval", "bergson_method"),
    ("diagnostics",),
    ("finetune", "generation", "retrospective", "callback"),
    ("counterfactual",),
    ("cli",),
]
# modules placed above that the diagram's line does not name yet
UNLISTED: set[str] = set()
# what a module may take from the package root (`rise_core/__init__.py`, the facade over every layer): a constant
ROOT_NAMES = {"__version__"}


def module_name(path: Path, package: Path = PACKAGE) -> str:
    """'store.index' for rise_core/store/index.py, 'store' for rise_core/store/__init__.py, '' for the root (of
    `package`, rise_core by default)."""
    parts = list(path.relative_to(package).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path, root: Path = PACKAGE) -> list[tuple[str, set[str], int]]:
    """(imported module of the package `root` (rise_core by default), names taken from it, line) for every import in
    the file, at any depth."""
    top = root.name
    mod = module_name(path, root)
    package = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
    package = [p for p in package if p]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(a.name.removeprefix(top).lstrip("."), set(), node.lineno)
                      for a in node.names if a.name == top or a.name.startswith(top + ".")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)] + ([node.module] if node.module else [])
            elif node.module and (node.module == top or node.module.startswith(top + ".")):
                base = node.module.split(".")[1:]
            else:
                continue
            target = ".".join(base)
            names = {a.name for a in node.names}
            submodules = {n for n in names if is_module(f"{target}.{n}" if target else n, root)}
            found += [(f"{target}.{n}" if target else n, set(), node.lineno) for n in submodules]
            if names - submodules:
                found.append((target, names - submodules, node.lineno))
    return found


def is_module(name: str, root: Path = PACKAGE) -> bool:
    path = root.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def layer_of(module: str) -> int:
    top = module.split(".")[0]
    for i, line in enumerate(LAYERS):
        if top in line:
            return i
    raise AssertionError(f"rise_core.{module} is on no layer: add it to LAYERS in {Path(__file__).name} "
                         "and to the diagram in docs/ARCHITECTURE.md")


def sources(root: Path = PACKAGE) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_module_is_on_a_layer():
    for path in sources():
        if module_name(path):
            layer_of(module_name(path))


def test_imports_go_only_to_the_same_or_a_lower_layer():
    violations = []
    for path in sources():
        mod = module_name(path)
        if not mod:
            continue  # the package root is the facade over every layer
        for target, names, line in imports(path):
            where = f"rise_core/{path.relative_to(PACKAGE)}:{line}"
            if not target:
                if names - ROOT_NAMES:
                    violations.append(f"{where} imports {sorted(names - ROOT_NAMES)} from the package root")
            elif layer_of(target) > layer_of(mod):
                violations.append(f"{where}: {mod} (line {layer_of(mod) + 1}) imports {target} "
                                  f"(line {layer_of(target) + 1}), a higher layer")
    assert not violations, "\n".join(violations)


def readme_layers() -> list[tuple[str, ...]]:
    """The module names that start each line of the rise_core diagram in docs/ARCHITECTURE.md (names are 2+ spaces apart; a
    description starts where that stops)."""
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    block = text.split("```", 2)[1]
    lines = block.split("\n")
    start = next(i for i, s in enumerate(lines) if s.startswith("rise_core/"))
    rows = []
    for s in lines[start + 1:]:
        if s and not s.startswith(" "):
            break  # explorer/, app.py, ...: past the library
        m = re.match(r"  ((?:[a-z_]+/?(?: {2,}|$)|[a-z_]+/ +)+)", s)
        if m:
            rows.append(tuple(m.group(1).split()))
    return rows


def test_layers_match_the_readme_diagram():
    readme = readme_layers()
    heads = [row[0].rstrip("/") for row in readme]
    assert heads == [line[0] for line in LAYERS], "LAYERS and the diagram in docs/ARCHITECTURE.md list other lines"
    for row, line in zip(readme, LAYERS, strict=True):
        if row[0].endswith("/"):
            assert (row[0].rstrip("/"),) == line, f"{row[0]} is a subpackage: its line holds nothing else"
            assert all(is_module(f"{line[0]}.{m}") for m in row[1:]), f"the diagram names a module {row[0]} lacks"
        else:
            assert row == tuple(m for m in line if m not in UNLISTED), f"the diagram's line {row} != {line}"


@pytest.mark.parametrize("module", ["models", "adapters", "finetune"])
def test_adapters_sit_between_models_and_finetune(module):
    """The layer this test was written for: models knows no adapter; adapters and finetune import downward."""
    found = {t for t, _, _ in imports(PACKAGE / f"{module}.py")}
    assert layer_of("models") < layer_of("adapters") < layer_of("engine")
    if module == "models":
        assert not found & {"adapters", "finetune"}
    else:
        assert "models" in found or "adapters" in found
