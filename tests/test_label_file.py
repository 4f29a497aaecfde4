"""One labels file, several annotators (issue 63): every process only appends, under the
file's lock, so one person's undo never deletes another's labels and two processes
labelling at once lose nothing; one reader, so `fbi label`, `--agreement` and `--human`
accept or refuse a file alike."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from fbi.cli import main
from fbi.errors import InputError
from fbi.trust import LabelFile
from fbi.trust._label_file import COLUMNS, read_label_rows

HEADER = ",".join(COLUMNS) + "\n"


def test_an_undo_keeps_what_another_annotator_gave_meanwhile(tmp_path):
    """Ana and Ben hold the file open at once (two LabelFile objects, as two processes
    would): Ana labels x, Ben labels y, Ana takes hers back. Ben's label stands; the file
    holds three rows and a retraction, never rewritten."""
    path = tmp_path / "labels.csv"
    ana, ben = LabelFile(path, "stratified", 0), LabelFile(path, "stratified", 0)
    ana.add("x", "a", "ana", "gold")
    ben.add("y", "b", "ben", "perturbed")
    before = path.read_bytes()
    assert ana.undo("ana").instance_id == "x"
    assert path.read_bytes().startswith(before)  # appended to, never rewritten
    assert [(r.instance_id, r.annotator) for r in read_label_rows(path)] == [("y", "ben")]
    lines = path.read_text().splitlines()
    assert len(lines) == 4 and lines[3].split(",")[:3] == ["x", "retracted", "ana"]
    assert [(r.instance_id, r.annotator) for r in ben.rows] == [("x", "ana"), ("y", "ben")]
    ben.add("z", "tie", "ben", "gold")  # Ben's next append reads Ana's retraction first
    assert [(r.instance_id, r.annotator) for r in ben.rows] == [("y", "ben"), ("z", "ben")]
    # Ana labels x again after taking it back: allowed, one label of hers stands
    ana.add("x", "b", "ana", "gold")
    assert [(r.instance_id, r.verdict) for r in read_label_rows(path)
            if r.annotator == "ana"] == [("x", "b")]


def test_the_same_person_in_two_sessions_labels_an_item_once(tmp_path):
    path = tmp_path / "labels.csv"
    first, second = LabelFile(path, "uniform", 3), LabelFile(path, "uniform", 3)
    assert first.add("x", "a", "ana", "gold") is not None
    assert second.add("x", "b", "ana", "gold") is None  # hers stands; nothing written
    assert len(path.read_text().splitlines()) == 2


WRITER = textwrap.dedent("""
    import sys
    from fbi.trust import LabelFile
    path, who, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    labels = LabelFile(path, "stratified", 0)
    for k in range(n):
        labels.add(f"{who}-{k}", "a", who, "gold")
        if k % 7 == 3:
            labels.undo(who)
            labels.add(f"{who}-{k}", "tie", who, "gold")
""")


def test_processes_labelling_at_once_lose_nothing(tmp_path):
    """Three processes append 60 labels each (with undos) into one file at the same
    time: 180 labels stand, each process's own, and every line is whole."""
    path = tmp_path / "labels.csv"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), who, "60"])
             for who in ("ana", "ben", "cat")]
    assert [p.wait(timeout=600) for p in procs] == [0, 0, 0]
    rows = read_label_rows(path)
    assert len(rows) == 180
    for who in ("ana", "ben", "cat"):
        assert sorted(r.instance_id for r in rows if r.annotator == who) == \
            sorted(f"{who}-{k}" for k in range(60))
    assert path.read_text().count(HEADER) == 1


def write(tmp_path: Path, *rows: str, bom: bool = False) -> Path:
    path = tmp_path / "labels.csv"
    path.write_bytes(("\ufeff" if bom else "").encode() + (HEADER + "".join(
        r + "\n" for r in rows)).encode())
    return path


def row(instance: str, verdict: str = "a", who: str = "ana", version: str = "2",
        shown: str = "gold") -> str:
    return f"{instance},{verdict},{who},{shown},stratified,0,2026-12-01T00:00:00+00:00,{version}"


@pytest.mark.parametrize(("rows", "message"), [
    ([row("x", "A")], "line 2: verdict 'A'"),
    ([row("x", "model_a")], "line 2: verdict 'model_a'"),
    ([row("x"), row("x", "b")], "line 3: annotator 'ana' labels instance 'x' again"),
    ([row("x", "retracted")], "retracts a label of 'x' they have not given"),
    ([row("x", "retracted", version="1")], "verdict 'retracted'"),
    ([row("x", version="7")], "label_version '7'"),
    ([row("x", shown="left")], "shown_first 'left'"),
    ([row("x"), row("y").replace("stratified", "uniform")], "line 3: labelled in the order"),
    (["x,a,ana"], "line 2: 3 columns where 8 belong"),
    ([row("x" * 200_000)], "line 2"),
])
def test_one_reader_refuses_alike_everywhere(tmp_path, rows, message):
    """The same file refused by the reader, by `fbi label`, by `fbi label --agreement`
    and by `fbi trust --human`, each with the same line."""
    path = write(tmp_path, *rows)
    with pytest.raises(InputError, match=message):
        read_label_rows(path)
    with pytest.raises(InputError, match=message):
        LabelFile(path, "stratified", 0)
    with pytest.raises(InputError, match=message):
        from types import SimpleNamespace

        from fbi.trust import read_human_labels

        read_human_labels(path, {k: SimpleNamespace(id=k, instruction="q", perturbed_answer=k)
                                 for k in ("x", "y")})


def test_a_byte_order_mark_is_read(tmp_path):
    path = write(tmp_path, row("x"), row("y", "b", "ben"), bom=True)
    assert [(r.instance_id, r.verdict) for r in read_label_rows(path)] == \
        [("x", "a"), ("y", "b")]
    labels = LabelFile(path, "stratified", 0)
    labels.add("z", "tie", "ana", "gold")
    assert [r.instance_id for r in read_label_rows(path)] == ["x", "y", "z"]


def test_a_torn_last_row_is_cut_before_the_next(tmp_path):
    """A process killed mid-row leaves a line without its end: reading ignores it, the
    next append cuts it off first, so no row glues onto half of another."""
    path = write(tmp_path, row("x"))
    with path.open("a") as file:
        file.write("y,b,ben,gold,strat")
    assert [r.instance_id for r in read_label_rows(path)] == ["x"]
    LabelFile(path, "stratified", 0).add("z", "a", "ben", "gold")
    assert path.read_text().splitlines()[-1].startswith("z,a,ben")
    assert [r.instance_id for r in read_label_rows(path)] == ["x", "z"]


def test_a_fifo_as_the_labels_file_is_refused_not_waited_on(tmp_path):
    import os

    fifo = tmp_path / "labels.csv"
    os.mkfifo(fifo)
    result = CliRunner().invoke(main, ["label", str(tmp_path), "--output", str(fifo),
                                       "--annotator", "ana"])
    output = " ".join(result.output.split())
    assert result.exit_code == 2 and "not a regular file" in output, output
