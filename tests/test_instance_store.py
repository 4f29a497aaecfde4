"""Issue 21: past 20,000 instances a dataset is held compact (compressed canonical rows).
Everything read from it must be what the plain list gives: the instances, their order,
the fingerprint, every selection, and the calls a run plans."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from openai_server import ChatServer

import fbi.datasets._store as store_module
from fbi import load_dataset, write_dataset
from fbi.cli import main
from fbi.datasets import Dataset
from fbi.datasets._store import InstanceStore, canonical_row


@pytest.fixture
def sample():
    return list(load_dataset("sample").instances)


def test_a_compact_store_gives_back_every_instance(sample):
    plain, compact = InstanceStore(sample), InstanceStore(sample, compact_above=5)
    assert not plain.compact and compact.compact and len(compact) == len(sample)
    assert list(compact) == sample and compact == sample and compact == plain
    assert compact[-1] == sample[-1] and compact[3:9] == sample[3:9]
    assert compact.fingerprint() == plain.fingerprint()
    # the fingerprint is sha256 over the canonical rows in id order, worked here directly
    import hashlib

    digest = hashlib.sha256()
    for instance in sorted(sample, key=lambda i: i.id):
        digest.update(canonical_row(instance))
    assert compact.fingerprint() == digest.hexdigest()
    chosen = compact.subset([7, 2, 40])
    assert chosen.compact and list(chosen) == [sample[7], sample[2], sample[40]]
    # a row compressed is smaller than its text (the point of the store)
    rows = compact._rows
    assert sum(map(len, rows)) < sum(len(canonical_row(i)) for i in sample)


@pytest.mark.parametrize("filters", [
    {}, {"limit": 2}, {"sample": 1, "sample_seed": 3},
    {"sample": 5, "sample_by": "overall", "sample_seed": 9},
    {"abilities": ["factual"]}, {"categories": ["entity", "grammar"], "limit": 1},
    {"include_extra": True},
])
def test_selections_are_the_same_compact_or_not(sample, filters):
    plain = Dataset("sample", InstanceStore(sample), len(sample))
    compact = Dataset("sample", InstanceStore(sample, compact_above=5), len(sample))
    a, b = plain.select(**filters), compact.select(**filters)
    assert [i.id for i in a] == [i.id for i in b] and len(a) > 0
    assert a.source_fingerprint == b.source_fingerprint and a.fingerprint == b.fingerprint


@pytest.mark.slow
def test_a_run_over_a_compact_dataset_makes_the_same_calls(tmp_path, monkeypatch, sample):
    """The whole path: a .jsonl read past the (lowered) threshold, judged through the
    loopback server; the judgments are those of the same file read plainly."""
    path = write_dataset(sample, tmp_path / "data.jsonl")
    env = {"OPENAI_API_KEY": "sk-test", "FBI_CACHE": str(tmp_path / "cache.sqlite")}
    bodies = {}
    for name, threshold in (("plain", 10_000), ("compact", 10)):
        monkeypatch.setattr(store_module, "COMPACT_ABOVE", threshold)
        assert load_dataset(str(path)).instances.compact == (name == "compact")
        with ChatServer() as server:
            result = CliRunner().invoke(main, [
                "evaluate", "--judge", "openai/j", "--api-base", server.url, "--dataset",
                str(path), "--strategy", "vanilla", "--strategy", "pairwise", "--limit", "1",
                "--no-cache", "--output", str(tmp_path / name)], env=env)
            assert result.exit_code == 0, result.output
            bodies[name] = sorted(json.dumps(r["messages"]) for r in server.requests)
    assert bodies["plain"] == bodies["compact"] and bodies["plain"]
    read = [(tmp_path / name / "instances.jsonl").read_text() for name in bodies]
    assert read[0] == read[1]
