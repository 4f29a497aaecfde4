"""What a newcomer met (issue 63): a stand-in judge shipped with fbi, a hunt whose calls
add up and that invites no vetting of an empty queue, unknown costs said as unknown, a
file fbi's marker does not list never replaced, a dataset summary that counts the
categories it holds, list items swapped whole, and the gate's, watch's and hunt's output
at 80 columns with every name whole."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import OUTSIDE_CHECKOUT
from openai_server import ChatServer
from planted_judges import PlantedJudge

from fbi import load_dataset
from fbi.cli import main
from fbi.standin import StandIn, reply_text

INSTANCES = load_dataset("sample").instances
FIXTURE = Path(__file__).parent / "fixtures" / "report_run"
ENV = {"OPENAI_API_KEY": "sk-test", "LITELLM_LOCAL_MODEL_COST_MAP": "True", "COLUMNS": "80"}


def post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url + "/chat/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as reply:
        return json.loads(reply.read())


def test_the_stand_in_answers_each_prompt_in_its_shape():
    """A judge prompt gets a score in its range, a pairwise one a verdict, a perturber's
    an answer with one number moved by one (or a word doubled), a QA prompt an answer."""
    score = json.loads(reply_text({"messages": [{"content": "Rate it: an integer from 1 "
                                                            "to 10. {\"score\": ...}"}]}))
    assert 1 <= score["score"] <= 10
    pair = json.loads(reply_text({"messages": [{"content": 'Reply {"verdict": "A"}'}]}))
    assert pair["verdict"] in ("A", "B", "tie", "both_bad")
    edit = json.loads(reply_text({"messages": [{"content": (
        "<answer>\nIt costs 41 dollars.\n</answer>\n"
        '{"rationale": "...", "perturbed_answer": "..."}')}]}))
    assert edit["perturbed_answer"] == "It costs 42 dollars."
    edit = json.loads(reply_text({"messages": [{"content": (
        "<answer>\nParis is lovely.\n</answer>\n{\"perturbed_answer\": \"\"}")}]}))
    assert edit["perturbed_answer"] == "Paris Paris is lovely."
    assert json.loads(reply_text({"messages": [{"content": "Question: capital?"}]})) == \
        {"answer": "Paris", "confidence": 60}
    assert reply_text({"messages": [{"content": "Reply with OK."}]}) == "OK"


def test_the_stand_in_speaks_the_openai_protocol():
    """The openai SDK pointed at it gets a chat completion; a body that is no JSON object
    is a 400, an unknown path a 404, never a crash of the server."""
    from openai import OpenAI

    with StandIn() as server:
        client = OpenAI(base_url=server.url, api_key="sk-stand-in")
        reply = client.chat.completions.create(model="stand-in", messages=[
            {"role": "user", "content": "Score: an integer from 0 to 2."}])
        assert json.loads(reply.choices[0].message.content)["score"] in (0, 1, 2)
        bad = urllib.request.Request(server.url + "/chat/completions", b"[1, 2]",
                                     {"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(bad, timeout=60)
        assert refused.value.code == 400
        assert post(server.url, {"messages": [{"content": "hi"}]})["choices"]


@pytest.mark.slow
def test_fbi_stand_in_detach_serves_until_killed(tmp_path):
    """`fbi stand-in --detach` returns once it listens, printing its URL and pid; a judge
    run goes through it; killing the pid stops it."""
    import os
    import re
    import signal

    started = subprocess.run([sys.executable, "-m", "fbi", "stand-in", "--port", "0",
                              "--detach"], capture_output=True, text=True, timeout=120,
                             cwd=OUTSIDE_CHECKOUT)
    assert started.returncode == 0, started.stderr
    url, pid = re.search(r"at (\S+) \(pid (\d+);", " ".join(started.stdout.split())).groups()
    try:
        result = CliRunner().invoke(main, [
            "evaluate", "--judge", "openai/stand-in", "--api-base", url, "--category",
            "entity", "--output", str(tmp_path / "run"), "--no-cache"], env=ENV)
        assert result.exit_code == 0, result.output
    finally:
        os.kill(int(pid), signal.SIGTERM)


@pytest.mark.slow
def test_a_hunt_with_nothing_confirmed_invites_no_vetting_and_its_calls_add_up(tmp_path):
    rows = [{"id": f"g{n}", "instruction": i.instruction, "gold_answer": i.gold_answer,
             "ability": i.ability.value}
            for n, i in enumerate({i.instruction: i for i in INSTANCES}.values())]
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with ChatServer(script=PlantedJudge(INSTANCES, lambda g, e: False)) as server:
        result = CliRunner().invoke(main, [
            "hunt", "--judge", "openai/j", "--api-base", server.url, "--dataset",
            str(gold), "--budget", "200", "--output", str(tmp_path / "h")],
            env={**ENV, "FBI_CACHE": str(tmp_path / "c.sqlite")})
    said = " ".join(result.output.split())
    assert result.exit_code == 0, said
    assert "no missed edit to vet" in said and "fbi annotate" not in said
    found = json.loads((tmp_path / "h" / "hunt.json").read_text())
    made = int(said.split(" calls this time")[0].split()[-1])
    assert found["calls"] == made + 1 and "1 for the probe call" in said
    assert found["calls"] == found["search_calls"] + found["confirmation_calls"] + 1


def test_unpriced_calls_are_cost_unknown_in_the_viewer(tmp_path):
    from fbi.view import Viewer

    with ChatServer(script=PlantedJudge(INSTANCES, lambda g, e: False)) as server:
        result = CliRunner().invoke(main, [
            "evaluate", "--judge", "openai/unpriced-judge", "--api-base", server.url,
            "--category", "entity", "--output", str(tmp_path / "run"), "--no-cache"],
            env=ENV)
    assert result.exit_code == 0 and "cost unknown" in result.output
    viewer = Viewer([tmp_path / "run"])
    (row,) = viewer.runs_page()["rows"]
    assert row["cost"] is None and row["unpriced"] > 0
    from fbi.view import ViewServer

    server = ViewServer(viewer, port=0)
    server.start()
    try:
        with urllib.request.urlopen(f"{server.url}/", timeout=60) as page:
            html = page.read().decode()
    finally:
        server.shutdown()
        server.server_close()
    assert "unknown" in html and "0.0000" not in html


def test_a_file_put_in_fbi_s_folder_since_is_never_replaced(tmp_path):
    """An Inspect export's folder, marked as fbi's; a file of the user's put there later
    under the very name the next export writes is refused, not replaced."""
    pytest.importorskip("inspect_ai")
    run = tmp_path / "run"
    shutil.copytree(FIXTURE, run)
    first = CliRunner().invoke(main, ["export", "inspect", str(run), "--output",
                                      str(tmp_path / "logs")])
    assert first.exit_code == 0, first.output
    assert len(list((tmp_path / "logs").glob("*.eval"))) == 1
    again = CliRunner().invoke(main, ["export", "inspect", str(run), "--output",
                                      str(tmp_path / "logs")])
    assert again.exit_code == 0, again.output  # fbi's own file: replaced
    (tmp_path / "logs" / "notes.eval").write_text("mine\n")
    other = tmp_path / "run2"
    shutil.copytree(FIXTURE, other)
    spec = json.loads((other / "run.json").read_text())
    spec["label"] = "notes"
    (other / "run.json").write_text(json.dumps(spec))
    refused = CliRunner().invoke(main, ["export", "inspect", str(other), "--output",
                                        str(tmp_path / "logs")])
    assert refused.exit_code == 2 and "not fbi's" in " ".join(refused.output.split())
    assert (tmp_path / "logs" / "notes.eval").read_text() == "mine\n"


def test_datasets_show_names_the_categories_it_holds(tmp_path):
    queue = tmp_path / "queue.jsonl"
    made = CliRunner().invoke(main, ["perturb", "--engine", "rules", "--input", "sample",
                                     "--categories", "spelling,grammar", "--output",
                                     str(queue)])
    assert made.exit_code == 0, made.output
    shown = CliRunner().invoke(main, ["datasets", "show", str(queue)],
                               env={"COLUMNS": "200"})
    assert "total (2 of the 22 categories)" in shown.output
    assert "22 categories + score-invariant" not in shown.output
    full = CliRunner().invoke(main, ["datasets", "show", "sample"], env={"COLUMNS": "200"})
    assert "total (the 22 categories + score-invariant)" in full.output


def test_list_items_are_swapped_whole_with_their_continuation_lines():
    """A list item whose text goes on over an indented line is moved whole: never its
    first line alone, which cut items mid-sentence."""
    from fbi.perturb.rules._base import GoldItem
    from fbi.perturb.rules.order import swap_list_items

    gold = ("Steps:\n- Wake up early and\n  stretch.\n- Put the phone away\n  from the "
            "bed.\n- Work for an hour.")
    item = GoldItem("g", "long-form", "Plan my morning.", gold)
    for seed in range(6):
        result = swap_list_items(item, random.Random(seed), "swapped")
        bodies = {line.strip("- ").strip() for line in result.perturbed.split("\n- ")[1:]}
        assert bodies == {"Wake up early and\n  stretch.", "Put the phone away\n  from the "
                          "bed.", "Work for an hour."}, result.perturbed


def fits_80(output: str) -> None:
    wide = [line for line in output.splitlines() if len(line) > 80
            and not line.startswith("  fbi ")]
    assert not wide, wide


@pytest.mark.slow
def test_gate_and_watch_tables_keep_names_whole_at_80_columns(tmp_path):
    good = PlantedJudge(INSTANCES, lambda g, e: False)
    bad = PlantedJudge(INSTANCES, lambda g, e: True)
    categories = {i.category for i in INSTANCES if i.category != "score-invariant"}

    def run(args, script):
        with ChatServer(script=script) as server:
            return CliRunner().invoke(main, [*args, "--api-base", server.url],
                                      terminal_width=80, env=ENV)

    base = run(["evaluate", "--judge", "openai/j", "--dataset", "sample", "--output",
                str(tmp_path / "base"), "--no-cache"], good)
    assert base.exit_code == 0, base.output
    gate = run(["gate", "sample", "--judge", "openai/j", "--baseline", str(tmp_path / "base"),
                "--output", str(tmp_path / "g")], bad)
    assert gate.exit_code == 1, gate.output
    fits_80(gate.output)
    words = set(gate.output.split())
    assert categories <= words, categories - words  # every category name whole
    watch_args = ["watch", "sample", "--judge", "openai/j", "--output", str(tmp_path / "w"),
                  "--canary", "3"]
    with ChatServer(script=good) as server:  # one server: the watch's api_base stays
        def step(steps: str):
            return CliRunner().invoke(main, [*watch_args, "--steps", steps, "--api-base",
                                             server.url], terminal_width=80, env=ENV)

        assert step("3").exit_code == 0
        server.script = bad
        watch = step("10")
    assert watch.exit_code == 1 and "ALARM" in watch.output
    fits_80(watch.output)
    table = watch.output.split("Where the judge changed", 1)[1]
    assert any(name in table.split() for name in categories)


@pytest.mark.slow
def test_a_huge_budget_on_a_handful_of_items_ends_when_their_edits_run_out(tmp_path):
    """Four gold answers and a budget of ten million calls: the search ends once rounds
    find few edits not judged yet, says so, and the hunt finishes far under its budget."""
    rows = [{"id": f"g{n}", "instruction": f"Question {n}?", "ability": "factual",
             "gold_answer": f"The answer is {n + 10}, as the {n}th source says."}
            for n in range(4)]
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with ChatServer() as server:  # (the stand-in's hashed judge)
        result = CliRunner().invoke(main, [
            "hunt", "--judge", "openai/j", "--api-base", server.url, "--dataset",
            str(gold), "--budget", "10000000", "--output", str(tmp_path / "h")],
            env={**ENV, "FBI_CACHE": str(tmp_path / "c.sqlite")})
    assert result.exit_code == 0, result.output
    found = json.loads((tmp_path / "h" / "hunt.json").read_text())
    assert found["edits_ran_out"] and found["calls"] < 10_000
    assert "held no more edits to try" in " ".join(result.output.split())
