"""The documentation site builds with no warning, and its CLI reference covers every
command and option, so the docs cannot fall behind the code unnoticed."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pydantic
import pytest

from fbi.cli import main
from fbi.taxonomy import CATEGORIES

ROOT = Path(__file__).resolve().parent.parent
PUBLIC_PACKAGES = ("fbi", "fbi.datasets", "fbi.runs", "fbi.judge", "fbi.metrics",
                   "fbi.report", "fbi.perturb", "fbi.vet", "fbi.robustness", "fbi.providers",
                   "fbi.providers.local", "fbi.trust", "fbi.hunt", "fbi.view", "fbi.interop")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert build.returncode == 0, build.stderr
    assert "WARNING" not in build.stderr, build.stderr
    return out


def commands(command: click.Command, path: tuple[str, ...] = ("fbi",)):
    """Every command under `fbi`, with its path: ("fbi", "datasets", "show"), ..."""
    yield path, command
    if isinstance(command, click.Group):  # (fbi's loads each command when asked for it)
        context = click.Context(command)
        for name in command.list_commands(context):
            yield from commands(command.get_command(context, name), (*path, name))


def sections(html: str) -> dict[str, str]:
    """The generated reference cut at its headings: anchor id → the HTML up to the next."""
    marks = list(re.finditer(r'<h[1-6] id="([^"]+)"', html))
    return {m.group(1): html[m.start():(marks[i + 1].start() if i + 1 < len(marks) else None)]
            for i, m in enumerate(marks)}


@pytest.mark.slow
def test_the_cli_reference_holds_every_command_and_option(site):
    parts = sections((site / "reference" / "cli" / "index.html").read_text())
    seen = 0
    for path, command in commands(main):
        anchor = "-".join(path)
        assert anchor in parts, f"{' '.join(path)} is not in docs/reference/cli.md"
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                for flag in param.opts + param.secondary_opts:
                    assert f"<code>{flag}" in parts[anchor], f"{' '.join(path)} {flag}"
                    seen += 1
    assert seen > 150  # the walk reached the options (evaluate alone has 46)


def test_the_run_folders_page_lists_every_run_kind_of_the_registry():
    """The table of run kinds is the stage registry's (issue 52: run kinds come from one
    registry): a stage added, renamed or writing another file shows up here."""
    from fbi.runs import stage_kinds

    rows = ["| kind | spec | also writes | what a run of it is |", "|---|---|---|---|"]
    rows += [f"| `{kind}` | `{stage.spec_file}` | "
             f"{', '.join(f'`{name}`' for name in stage.outputs)} | {stage.title} |"
             for kind, stage in stage_kinds().items() if stage.__module__.startswith("fbi.")]
    text = (ROOT / "docs" / "reference" / "run-folders.md").read_text()
    shown = text.split("tests/test_docs.py checks it -->\n")[1].split("\n<!-- end")[0]
    assert shown == "\n".join(rows), "paste into docs/reference/run-folders.md:\n" + \
        "\n".join(rows)


def test_the_concepts_list_every_category_of_the_paper():
    text = (ROOT / "docs" / "concepts" / "fbi-method.md").read_text()
    for category in CATEGORIES:
        if not category.family:
            assert f"| `{category.name}` |" in text, category.name


#: Each documented module and its page of the API reference (docs/reference/api/).
API_PAGES = {"fbi": "", "fbi.records": "records", "fbi.run_spec": "records",
             "fbi.settings": "records",
             "fbi.findings": "records",
             "fbi.providers": "models", "fbi.providers.local": "local", "fbi.trust": "trust",
             **{f"fbi.{name}": name for name in ("datasets", "runs", "judge", "metrics",
                                                  "report", "perturb", "vet", "robustness",
                                                  "hunt", "view", "interop")}}
#: Core classes the Records page leaves to the Core section (the top-level face has them).
ON_CORE_PAGE = {"Instance", "Provenance", "VettingLabel"}


def api_page(site: Path, module: str) -> str:
    page = API_PAGES[module]
    return (site / "reference" / "api" / page / "index.html").read_text()


def public_names(module: str) -> list[str]:
    """A face's names (`fbi.faces.public_names`); for a core module, the classes and
    functions it defines (what mkdocstrings shows of it)."""
    from fbi.faces import public_names as face_names

    found = importlib.import_module(module)
    if found.__file__.endswith("__init__.py"):
        names = face_names(module)
    else:
        names = [name for name, value in vars(found).items() if not name.startswith("_")
                 and (inspect.isclass(value) or inspect.isfunction(value))
                 and value.__module__ == module]
    return [name for name in names if module != "fbi.records" or name not in ON_CORE_PAGE]


@pytest.mark.slow
def test_the_api_reference_shows_every_public_class_and_function(site):
    assert set(PUBLIC_PACKAGES) <= set(API_PAGES)
    for module in API_PAGES:
        html = api_page(site, module)
        for name in public_names(module):
            value = getattr(importlib.import_module(module), name)
            if inspect.isclass(value) or inspect.isfunction(value):
                # mkdocstrings leaves out what has no docstring: this fails for it too
                assert f'id="{module}.{name}"' in html, f"{module}.{name} has no API entry"


def fields_of(cls: type) -> list[str]:
    if isinstance(cls, type) and issubclass(cls, pydantic.BaseModel):
        return list(cls.model_fields)
    if dataclasses.is_dataclass(cls):
        return [field.name for field in dataclasses.fields(cls)]
    return []


def test_every_model_s_fields_are_listed_in_the_api_reference(site):
    """A record's fields are its format's documentation: each has a docstring, so the
    reference lists it (inherited ones included: a Judgment shows CallRecord's)."""
    missing, seen = [], 0
    for module in API_PAGES:
        html = api_page(site, module)
        for name in public_names(module):
            for field in fields_of(getattr(importlib.import_module(module), name)):
                if not field.startswith("_"):
                    seen += 1
                    if f'id="{module}.{name}.{field}"' not in html:
                        missing.append(f"{module}.{name}.{field}")
    assert not missing, f"fields without a docstring: {missing}"
    assert seen > 500  # the walk reached the records (Judgment alone has 30 fields)


#: A Sphinx role (``:class:`X```), the one cross-reference style fbi does not use: the
#: API reference would print it raw. Cross-references are mkdocs-autorefs links.
SPHINX_ROLE = re.compile(r":(class|func|meth|mod|attr|data|exc|obj):(`|<code>)")


def test_no_cross_reference_prints_raw(site):
    raw = []
    for page in site.rglob("*.html"):
        # code listings may quote anything; a rendered docstring is never inside <pre>
        text = re.sub(r"<pre.*?</pre>", "", page.read_text(), flags=re.S)
        raw += [f"{page.relative_to(site)}: {m.group(0)}" for m in SPHINX_ROLE.finditer(text)]
    for path in (ROOT / "fbi").rglob("*.py"):
        raw += [f"{path.relative_to(ROOT)}: {m.group(0)}"
                for m in SPHINX_ROLE.finditer(path.read_text(encoding="utf-8"))]
    assert not raw, "\n".join(raw[:20])
    assert 'class="autorefs' in api_page(site, "fbi.runs")  # the links are rendered


def test_the_readme_stays_a_front_page():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    from test_doc_commands import TEST_COMMAND

    for command in ('pip install ".[local]" && fbi evaluate', TEST_COMMAND):
        assert command in readme
    assert TEST_COMMAND in (ROOT / ".ci" / "run").read_text()  # CI runs what users run
