"""The layout shows the pipeline: a small core, one package per stage, a thin CLI — as
the one layer map, ``[tool.fbi.layers]`` of pyproject.toml, declares it.

Stages import the core and never each other; the core never imports a stage; nothing
imports a package's private modules from outside it. The packages above the stages
drive the stages (and packages above) ``[tool.fbi.drives]`` names through their faces;
no stage imports any of them. Checked on the source, every import statement
(function-level ones included); and the map holds every package of the tree, the
wheel's package list every package of the map, and the architecture page the map.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
FBI = ROOT / "fbi"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
#: The layer map: layer name → its packages ("" is fbi's top-level modules), lowest first.
MAP: dict[str, list[str]] = PROJECT["tool"]["fbi"]["layers"]
STAGES = tuple(MAP["stages"])
#: Packages above the stages, and what each may drive.
ABOVE_STAGES = {name: tuple(PROJECT["tool"]["fbi"]["drives"].get(name, ()))
                for name in MAP["above-stages"]}


def imports_of(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            # `from fbi import judge` and `from fbi.runs import _log` import modules too
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {name for name in names if name == "fbi" or name.startswith("fbi.")}


def stage_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in STAGES else None


def test_stages_never_import_each_other_and_the_core_imports_no_stage():
    problems = []
    for path in FBI.rglob("*.py"):
        relative = path.relative_to(FBI).parts
        if relative[0] == "cli" or relative == ("__main__.py",):
            continue  # the CLI is the one layer that sees every stage
        here = relative[0] if relative[0] in STAGES else None
        allowed = ABOVE_STAGES.get(relative[0], ())
        for module in imports_of(path):
            there = stage_of(module) or (module.split(".")[1] if module.split(".")[1:2]
                                         and module.split(".")[1] in ABOVE_STAGES else None)
            if there is not None and there != here and there not in allowed and \
                    there != relative[0]:
                problems.append(f"{path.relative_to(FBI)} imports {module}")
    assert not problems, "\n".join(sorted(problems))


#: The layers, lowest first: a module imports from its own layer and those below only.
LAYERS = tuple(set(packages) for packages in MAP.values())


def layer_of(module: str) -> int:
    parts = module.split(".")
    package = parts[1] if len(parts) > 1 and (FBI / parts[1]).is_dir() else ""
    if parts[1:2] == ["__main__"]:
        package = "__main__"
    return next(n for n, names in enumerate(LAYERS) if package in names)


def test_every_module_imports_only_its_layer_and_those_below():
    """The layers of docs/concepts/architecture.md: core < harness and statistics <
    stages < hunt, view, interop < cli; a private top-level module (``fbi/_request_json.py``) is
    the core's own, imported by core modules only."""
    problems = []
    for path in FBI.rglob("*.py"):
        module = ".".join(("fbi", *path.relative_to(FBI).with_suffix("").parts))
        module = module.removesuffix(".__init__")
        here = layer_of(module)
        for imported in imports_of(path) - {"fbi"}:
            if imported.split(".")[1] not in {p.stem for p in FBI.iterdir()}:
                continue  # (`from fbi import __version__`-style names, not modules)
            if layer_of(imported) > here:
                problems.append(f"{module} (layer {here}) imports {imported} "
                                f"(layer {layer_of(imported)})")
            parts = imported.split(".")
            if len(parts) == 2 and parts[1].startswith("_") and here != 0:
                problems.append(f"{module} imports the core's private {imported}")
    assert not problems, "\n".join(sorted(problems))


def test_no_one_reaches_into_another_package_s_private_modules():
    problems = []
    for path in FBI.rglob("*.py"):
        here = path.relative_to(FBI).parts[0]
        for module in imports_of(path):
            parts = module.split(".")
            # any package's, the harness (runs) and model access (providers) included
            if len(parts) > 2 and parts[2].startswith("_") and parts[1] != here:
                problems.append(f"{path.relative_to(FBI)} imports {module}")
    assert not problems, "\n".join(sorted(problems))


def test_there_is_no_import_cycle_between_modules():
    graph: dict[str, set[str]] = {}
    for path in FBI.rglob("*.py"):
        module = ".".join(("fbi", *path.relative_to(FBI).with_suffix("").parts))
        module = module.removesuffix(".__init__")
        graph[module] = {m for m in imports_of(path) if m != module}
    # faces (package __init__ modules) re-export their private modules: an edge from a
    # private module to its own face would be a cycle, so those count too
    seen: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        if seen.get(node) == 1:
            raise AssertionError(" → ".join([*trail, node]))
        if seen.get(node) == 2 or node not in graph:
            return
        seen[node] = 1
        for target in graph[node]:
            if target.startswith("fbi.cli") or node.startswith("fbi.cli"):
                continue
            visit(target, [*trail, node])
        seen[node] = 2

    for module in sorted(graph):
        visit(module, [])


def test_the_layer_map_holds_every_package_and_the_wheel_every_one_of_the_map():
    """One layer map: every top-level package of fbi/ is in exactly one layer, the
    wheel's package list (``[tool.setuptools] packages``) holds each with its
    subpackages and nothing else, and the architecture page's table is the map."""
    placed = [name for packages in MAP.values() for name in packages]
    assert len(placed) == len(set(placed)), "a package in two layers"
    tree = {p.name for p in FBI.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    modules = {"__main__"} if (FBI / "__main__.py").exists() else set()
    assert set(placed) - {""} == tree | modules, (
        f"packages not in the layer map: {sorted(tree - set(placed))}; in the map but "
        f"not in fbi/: {sorted(set(placed) - tree - modules - {''})}")
    every = {"fbi"} | {
        "fbi." + ".".join(p.parent.relative_to(FBI).parts) for p in FBI.rglob("__init__.py")
        if p.parent != FBI}
    data = {"fbi.prompts", "fbi.perturbations", "fbi.annotate"}  # (package-dir mapped)
    listed = set(PROJECT["tool"]["setuptools"]["packages"])
    assert listed == every | data, (f"add to [tool.setuptools] packages: "
                                    f"{sorted(every | data - listed)}; remove: "
                                    f"{sorted(listed - every - data)}")
    page = (ROOT / "docs" / "concepts" / "architecture.md").read_text(encoding="utf-8")
    table = page.split("<!-- layer map -->")[1]
    rows = dict(re.findall(r"^\| (\S+) \| (.*?) \|", table, re.M))
    assert {layer: sorted(p.strip(" `/") for p in packages.split(",") if p.strip())
            for layer, packages in rows.items() if layer in MAP} == {
        layer: sorted(p or "(top-level modules)" for p in packages)
        for layer, packages in MAP.items()}, "docs/concepts/architecture.md's layer map"


def test_no_module_is_over_600_lines_and_no_renderer_over_60():
    """A newcomer reads any module of fbi/ in one sitting, and any one table's renderer
    on one screen (issue 25)."""
    long_modules = [f"{p.relative_to(FBI)}: {n}" for p in FBI.rglob("*.py")
                    if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600]
    assert not long_modules, long_modules
    long_renderers = []
    for path in (FBI / "report").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.end_lineno - node.lineno >= 60:
                long_renderers.append(f"{path.name}: {node.name}")
    assert not long_renderers, long_renderers


def faces() -> list[Path]:
    """Every package face: fbi's own and each package's ``__init__``, nested ones too."""
    return sorted(p for p in FBI.rglob("__init__.py") if p.parent.name not in ("cli", "data"))


def test_every_face_names_each_export_once_and_each_resolves():
    """A package's face (``__init__``) is its whole public API, each name written once:
    the names it imports from its own modules (a lazy face's under ``TYPE_CHECKING``,
    which are also what it loads), with no ``__all__`` repeating them (`fbi.faces`); each
    resolves to the object its module defines."""
    import importlib

    from fbi.faces import face_imports, public_names

    problems = []
    for path in faces():
        package = ".".join(("fbi", *path.parent.relative_to(FBI).parts))
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") ==
               "__all__" for node in tree.body):
            problems.append(f"{package}: an __all__ repeats the names its imports give")
        imported = [alias.asname or alias.name for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom) and node.module and
                    node.module.startswith(f"{package}.") for alias in node.names]
        if len(imported) != len(set(imported)):
            problems.append(f"{package}: a name is imported twice")
        face = importlib.import_module(package)
        for name in public_names(package):
            module = face_imports(package).get(name, package)
            if getattr(face, name, None) is not getattr(importlib.import_module(module),
                                                         name, object()):
                problems.append(f"{package}.{name} does not resolve to {module}.{name}")
    assert not problems, "\n".join(problems)
