"""The package's folders are layers that data passes through in order: an import only ever goes down a
layer (or stays inside its own package), and no modules import each other in a circle. Function-level
(lazy) imports count like the others."""

from __future__ import annotations

import ast
from pathlib import Path

from builders import PROJECT_ROOT

PACKAGE = PROJECT_ROOT / "lvegit"
# Lowest first. What a package may import: its own modules and the packages of lower layers.
LAYERS = [
    {"base"},  # errors and exit codes, settings, safe files, printing, versions
    {"sandbox"},  # confinement of contributed code: bubblewrap, privileges, Landlock, seccomp
    {"lve"},  # the LVE format and the repository
    {"checkers", "git", "models", "disclosure"},  # judging a response; git; asking a model; withheld LVEs
    {"judge"},  # validate, replay, check, the cache, result records
    {"run"},  # live attempts, the runner, record, live re-runs
    {"history"},  # the run history: its files, the status of each LVE on each model
    {"batch", "publish"},  # batch engines; READMEs, show, site, export, schemas
    {"findings"},  # scanners' findings (garak, promptfoo) as LVE drafts
    {"github"},  # the Action
    {"commands"},  # the command line: cli.py (the group and the one error handler), __main__.py, commands/
]
LAYER = {package: index for index, packages in enumerate(LAYERS) for package in packages}
ROOT_MODULES = {"__init__", "_version"}  # the version, importable from everywhere


def module_name(path: Path) -> str:
    parts = path.relative_to(PROJECT_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """The lvegit modules `path` imports (`from lvegit.x import y` names lvegit.x.y when that is a module)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "lvegit":
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                found.add(candidate if candidate in MODULES else node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "lvegit"}
    return found


MODULES = {module_name(path): path for path in PACKAGE.rglob("*.py")}
GRAPH = {name: imports(path) & MODULES.keys() for name, path in MODULES.items()}


def package_of(module: str) -> str:
    parts = module.split(".")
    package = parts[1] if len(parts) > 1 else "__init__"
    return "commands" if package in ("cli", "__main__") else package


def test_every_package_has_a_layer() -> None:
    packages = {package_of(m) for m in MODULES} - ROOT_MODULES
    assert packages == LAYER.keys()


def test_imports_only_go_down_the_layers() -> None:
    upward = sorted(
        f"{module} imports {target}"
        for module, targets in GRAPH.items()
        for target in targets
        if package_of(target) not in ROOT_MODULES
        and package_of(module) not in ROOT_MODULES
        and package_of(target) != package_of(module)
        and LAYER[package_of(target)] >= LAYER[package_of(module)]
    )
    assert upward == []


def test_no_modules_import_each_other_in_a_circle() -> None:
    def cycle_from(start: str) -> list[str] | None:
        stack, seen = [(start, [start])], set()
        while stack:
            module, path = stack.pop()
            for target in GRAPH[module]:
                if target == start:
                    return [*path, start]
                if target not in seen:
                    seen.add(target)
                    stack.append((target, [*path, target]))
        return None

    circles = [cycle for module in sorted(GRAPH) if (cycle := cycle_from(module)) is not None]
    assert circles == []
