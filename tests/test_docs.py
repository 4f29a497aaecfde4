"""The documentation site builds with no warning, and its CLI reference covers every
command and option, so the docs cannot fall behind the code unnoticed."""

from __future__ import annotations

import importlib
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest

from fbi.cli import main
from fbi.taxonomy import CATEGORIES

ROOT = Path(__file__).resolve().parent.parent
PUBLIC_PACKAGES = ("fbi", "fbi.runs", "fbi.judge", "fbi.metrics", "fbi.report", "fbi.perturb",
                   "fbi.vet", "fbi.robustness", "fbi.local")


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


def test_the_concepts_list_every_category_of_the_paper():
    text = (ROOT / "docs" / "concepts" / "fbi-method.md").read_text()
    for category in CATEGORIES:
        if not category.family:
            assert f"| `{category.name}` |" in text, category.name


def test_the_api_reference_shows_every_public_class_and_function(site):
    html = (site / "reference" / "api" / "index.html").read_text()
    for package in PUBLIC_PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isclass(value) or inspect.isfunction(value):
                # mkdocstrings leaves out what has no docstring: this fails for it too
                assert f'id="{package}.{name}"' in html, f"{package}.{name} has no API entry"


def test_the_readme_stays_a_front_page():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    for command in ('pip install ".[local]" && fbi evaluate',
                    'pip install torch==2.13.0 ".[local,embeddings,dev]" && pytest'):
        assert command in readme
