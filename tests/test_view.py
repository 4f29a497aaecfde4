"""`fbi view` (issue 42): the runs, a grid, the instances behind a figure with their
filters, and one instance — opened in headless Chromium, every figure checked against
one worked by hand from the run's own judgments.jsonl; hostile texts stay text; the
server never writes into a run folder, listens on loopback, and says what is wrong with
bad input."""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from browser import chromium, click_and_load, resource_urls
from click.testing import CliRunner
from conftest import OUTSIDE_CHECKOUT
from openai_server import ChatServer
from planted_judges import PlantedJudge, misses_nothing
from run_records import by_hand, latest_records

from fbi import load_dataset, write_dataset
from fbi.cli import main
from fbi.view import Filters, Viewer, ViewServer

SCRIPT_ATTACK = '<script>alert(1)</script><img src=x onerror="alert(2)">'
HOSTILE_LABEL = '"><b>label</b><script>alert(3)</script>'


def evaluate(server: ChatServer, dataset: str, output: Path, label: str, env: dict,
             *extra: str) -> None:
    result = CliRunner().invoke(main, [
        "evaluate", "--judge", "openai/judge", "--api-base", server.url, "--dataset",
        dataset, "--strategy", "vanilla", "--strategy", "pairwise", "--label", label,
        "--output", str(output), "--no-cache", *extra], env=env)
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """Two judges over the built-in sample: A answers by a hash of the prompt, B catches
    every planted error (a loopback judge that knows the gold answers)."""
    root = tmp_path_factory.mktemp("view") / "runs"
    env = {"OPENAI_API_KEY": "sk-test"}
    instances = load_dataset("sample").instances
    with ChatServer() as a, ChatServer(script=PlantedJudge(instances, misses_nothing)) as b:
        evaluate(a, "sample", root / "a", "judge-A", env)
        evaluate(b, "sample", root / "b", "judge-B", env)
    return root


@pytest.fixture(scope="module")
def served(runs):
    server = ViewServer(Viewer([runs]), port=0)
    server.start()
    yield server
    server.shutdown()
    server.server_close()


def every_page(viewer: Viewer, filters: Filters) -> set[str]:
    """The ids the instances page lists over all its pages."""
    shown: set[str] = set()
    pages = viewer.instances_page(filters)["pages"]
    for number in range(1, pages + 1):
        found = viewer.instances_page(Filters(**{**vars(filters), "page": number}))["found"]
        shown |= {instance.id for instance, _ in found.page}
    return shown


def category_of(folder: Path) -> dict[str, str]:
    return {r["instance_id"]: r["category"] for r in latest_records(folder)}


def get(url: str) -> tuple[int, str, dict]:
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.status, response.read().decode("utf-8"), dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode("utf-8"), dict(error.headers)


# ------------------------------------------------------------------------ in Chromium


@pytest.mark.slow
def test_runs_grid_instances_filter_and_instance_in_chromium(runs, served, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    a, b = runs / "a", runs / "b"
    hand_a, hand_b = by_hand(a), by_hand(b)
    categories = category_of(a)
    with chromium(tmp_path / "profile") as driver:
        # the runs page: both runs, their judge, label, kind, calls and status
        driver.get(served.url)
        rows = {row.get_attribute("data-run"): row.text
                for row in driver.find_elements(By.CSS_SELECTOR, "#runs tbody tr")}
        assert set(rows) == {"runs/a", "runs/b"}
        for key, label in (("runs/a", "judge-A"), ("runs/b", "judge-B")):
            assert "openai/judge" in rows[key] and label in rows[key]
            assert "evaluate" in rows[key] and "finished" in rows[key]
            assert str(len(latest_records(runs / key.split("/")[1]))) in rows[key]

        # judge A's grid: the entity × vanilla figure, worked by hand
        click_and_load(driver, driver.find_element(By.LINK_TEXT, "runs/a"))
        assert "judge-A" in driver.find_element(By.TAG_NAME, "h1").text
        entity = [o for (i, s), o in hand_a.items() if s == "vanilla"
                  and categories[i] == "entity"]
        missed = entity.count("undetected")
        row = driver.find_element(By.XPATH, "//table[@id='grid']//tr[th='entity']")
        cell = row.find_elements(By.CSS_SELECTOR, "a.rate")[0]  # vanilla comes first
        assert cell.get_attribute("title").startswith(
            f"judge-A: {missed} of {len(entity)} readable")
        assert cell.text.startswith(f"{100 * missed / len(entity):.1f}")
        from statsmodels.stats.proportion import proportion_confint

        low, high = proportion_confint(missed, len(entity), method="wilson")
        assert f"[{100 * low:.1f}–{100 * high:.1f}]" in cell.text

        # the figure links to exactly its instances
        click_and_load(driver, cell)
        shown = {r.get_attribute("data-instance")
                 for r in driver.find_elements(By.CSS_SELECTOR, "#instances tbody tr")}
        assert shown == {i for (i, s), o in hand_a.items() if s == "vanilla"
                         and categories[i] == "entity" and o == "undetected"}

        # a filter: missed by A but caught by B, under either strategy; the URL says it
        driver.get(served.url + "instances")
        Select(driver.find_element(By.NAME, "missed_by")).select_by_visible_text("judge-A")
        Select(driver.find_element(By.NAME, "caught_by")).select_by_visible_text("judge-B")
        click_and_load(driver, driver.find_element(By.CSS_SELECTOR, "#filters button"))
        expected = {i for (i, s), o in hand_a.items()
                    if o == "undetected" and hand_b.get((i, s)) == "detected"}
        assert driver.find_element(By.ID, "count").text.startswith(f"{len(expected)} inst")
        assert "missed_by=runs%2Fa" in driver.current_url
        first_page = {r.get_attribute("data-instance")
                      for r in driver.find_elements(By.CSS_SELECTOR, "#instances tbody tr")}
        assert first_page <= expected and len(first_page) == min(50, len(expected))
        shared = driver.current_url
        driver.get(served.url)
        driver.get(shared)  # a shared link shows the same
        assert driver.find_element(By.ID, "count").text.startswith(f"{len(expected)} inst")

        # one instance: its question, the word diff, each judge's reply beside its verdict
        target = sorted(expected)[0]
        click_and_load(driver, driver.find_element(By.LINK_TEXT, target))
        instance = {i.id: i for i in load_dataset(str(a / "instances.jsonl")).instances}[
            target]
        assert driver.find_element(By.ID, "question").text == instance.instruction.strip()
        deleted = " ".join(e.text for e in driver.find_elements(By.CSS_SELECTOR, "#gold del"))
        inserted = " ".join(e.text for e in
                            driver.find_elements(By.CSS_SELECTOR, "#perturbed ins"))
        assert deleted or inserted
        assert all(part in instance.gold_answer for part in deleted.split())
        assert all(part in instance.perturbed_answer for part in inserted.split())
        replies = driver.find_element(By.ID, "replies").text
        for folder in (a, b):
            for record in latest_records(folder):
                if record["instance_id"] == target:
                    assert record["raw_output"] in replies
                    assert f"{record['call_id']}" in replies  # in its `fbi show` command
        headers = [h.text for h in driver.find_elements(By.CSS_SELECTOR, "#replies thead th")]
        assert headers == ["strategy", "judge-A", "judge-B"]

        # nothing was fetched from anywhere but the server
        assert all(url.startswith(served.url) for url in resource_urls(driver))


@pytest.mark.slow
def test_a_planted_blind_spot_shows_in_the_comparison(runs, served):
    """Two judges side by side: B misses nothing, so under each strategy A misses more,
    and the verdict says so with the counts of the report's test."""
    status, page, _ = get(served.url + "grid?run=runs/a&run=runs/b")
    assert status == 200
    for strategy, name in (("vanilla", "Vanilla"), ("pairwise", "Pairwise")):
        hand_a, hand_b = by_hand(runs / "a"), by_hand(runs / "b")
        readable = ("detected", "undetected")
        both = [k for k in hand_a if k[1] == strategy and hand_a[k] in readable
                and hand_b.get(k) in readable]
        rate_a = sum(hand_a[k] == "undetected" for k in both) / len(both)
        rate_b = sum(hand_b[k] == "undetected" for k in both) / len(both)
        assert rate_b == 0
        assert (f"judge-B misses fewer planted errors than judge-A: 0.0% vs "
                f"{100 * rate_a:.1f}%") in page, strategy
        assert f"(under {name}, {len(both)} instances both judged)" in page


# ------------------------------------------------------------------------ filters


@pytest.mark.parametrize("filters, keep", [
    (Filters(categories=("entity",)), lambda i, s, o, inst: inst.category == "entity"),
    (Filters(abilities=("R",)), lambda i, s, o, inst: inst.ability.short == "R"),
    (Filters(strategies=("pairwise",), outcomes=("undetected",)),
     lambda i, s, o, inst: s == "pairwise" and o == "undetected"),
    (Filters(outcomes=("detected",)), lambda i, s, o, inst: o == "detected"),
    (Filters(text="PARIS"), lambda i, s, o, inst: "paris" in " ".join(
        (inst.id, inst.instruction, inst.gold_answer, inst.perturbed_answer)).lower()),
])
def test_each_filter_keeps_the_instances_worked_by_hand(runs, filters, keep):
    viewer = Viewer([runs])
    instances = {i.id: i for i in load_dataset(str(runs / "a" / "instances.jsonl")).instances}
    hand = by_hand(runs / "a")
    filters = Filters(runs=("runs/a",), **{k: v for k, v in vars(filters).items()
                                          if k != "runs"})
    expected = {i for (i, s), o in hand.items() if keep(i, s, o, instances[i])}
    assert expected
    assert every_page(viewer, filters) == expected
    assert viewer.instances_page(filters)["found"].total == len(expected)


@pytest.mark.slow
def test_an_unreadable_reply_is_found_by_the_unparseable_filter(tmp_path):
    """A judge whose every third reply is no verdict: the filter lists exactly the
    instances with an unreadable call (worked out from judgments.jsonl)."""
    def sometimes_garbled(request):
        prompt = "\n".join(m.get("content") or "" for m in request["messages"])
        if int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % 3 == 0:
            return "I would rather not say."
        from openai_server import hashed_verdict_script
        return hashed_verdict_script(request)

    with ChatServer(script=sometimes_garbled) as server:
        evaluate(server, "sample", tmp_path / "runs" / "g", "garbled",
                 {"OPENAI_API_KEY": "sk-test"})
    hand = by_hand(tmp_path / "runs" / "g")
    expected = {i for (i, _), o in hand.items() if o == "unparseable"}
    assert expected
    viewer = Viewer([tmp_path / "runs"])
    assert every_page(viewer, Filters(outcomes=("unparseable",))) == expected


# ------------------------------------------------------------------------ safety


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    """A run over texts that carry markup, under a label that does, answered by a judge
    whose replies do."""
    root = tmp_path_factory.mktemp("hostile") / "runs"
    instances = [i.model_copy(update={"instruction": i.instruction + SCRIPT_ATTACK,
                                      "perturbed_answer": i.perturbed_answer + SCRIPT_ATTACK})
                 for i in load_dataset("sample").instances if i.category == "entity"]
    dataset = write_dataset(instances, root.parent / "hostile.jsonl")

    def reply(request):
        from openai_server import hashed_verdict_script
        answer = json.loads(hashed_verdict_script(request) if "answer" in json.dumps(
            request) else '{"x": 1}')
        answer["explanation"] = SCRIPT_ATTACK
        return json.dumps(answer)

    with ChatServer(script=reply) as server:
        evaluate(server, str(dataset), root / "h", HOSTILE_LABEL, {"OPENAI_API_KEY": "sk-t"})
    return root


@pytest.mark.slow
def test_hostile_texts_stay_text_in_chromium(hostile, tmp_path):
    from selenium.webdriver.common.by import By

    server = ViewServer(Viewer([hostile]), port=0)
    server.start()
    try:
        instance_id = latest_records(hostile / "h")[0]["instance_id"]
        with chromium(tmp_path / "profile") as driver:
            for path in ("", "grid?run=runs/h", "instances?run=runs/h",
                         f"instance?run=runs/h&id={instance_id}", "run?run=runs/h"):
                driver.get(server.url + path)
                assert driver.find_elements(By.TAG_NAME, "script") == []
                assert driver.find_elements(By.TAG_NAME, "img") == []
                assert driver.find_elements(By.CSS_SELECTOR, "main b") == []
            driver.get(server.url + f"instance?run=runs/h&id={instance_id}")
            assert SCRIPT_ATTACK in driver.find_element(By.ID, "question").text
            reply = latest_records(hostile / "h")[0]["raw_output"]
            assert "<script>alert(1)</script>" in reply
            assert reply in driver.find_element(By.ID, "replies").text
            driver.get(server.url + "grid?run=runs/h")
            assert HOSTILE_LABEL in driver.find_element(By.TAG_NAME, "h1").text
        _, _, headers = get(server.url)
        assert "default-src 'none'" in headers["Content-Security-Policy"]
        assert "script-src" not in headers["Content-Security-Policy"]
    finally:
        server.shutdown()
        server.server_close()


def snapshot(folder: Path) -> dict[str, tuple[int, str]]:
    return {str(p.relative_to(folder)): (p.stat().st_mtime_ns,
                                          hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_viewer_never_writes_into_a_run_folder(runs, tmp_path):
    before = snapshot(runs)
    server = ViewServer(Viewer([runs]), port=0)
    server.start()
    try:
        record = latest_records(runs / "a")[0]
        for path in ("", "grid", "grid?run=runs/a&run=runs/b&strategy=vanilla",
                     "instances?q=the&outcome=undetected", "instances?missed_by=runs/b&"
                     "caught_by=runs/a", f"instance?id={record['instance_id']}",
                     "run?run=runs/a", "static/view.css", "nothing-here"):
            status, _, _ = get(server.url + path)
            assert status in (200, 404), path
        for method in ("POST", "PUT", "DELETE"):
            request = urllib.request.Request(server.url + "grid", data=b"x", method=method)
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request, timeout=60)
            assert refused.value.code == 405
    finally:
        server.shutdown()
        server.server_close()
    assert snapshot(runs) == before


def test_an_index_is_built_once_and_again_when_the_run_grows(runs, tmp_path):
    import shutil

    shutil.copytree(runs / "a", tmp_path / "runs" / "a")
    viewer = Viewer([tmp_path / "runs"])
    first = viewer.index("runs/a")
    viewer.grid_page(["runs/a"], [])
    viewer.instances_page(Filters(text="the"))
    assert viewer.index("runs/a") is first  # no page read the log again
    log = tmp_path / "runs" / "a" / "judgments.jsonl"
    records = latest_records(tmp_path / "runs" / "a")
    retried = dict(records[0], status="error", reason="a failed retry", score=None)
    with open(log, "a", encoding="utf-8") as file:
        file.write(json.dumps(retried) + "\n")
    again = viewer.index("runs/a")
    assert again is not first
    assert again.unreadable_calls == first.unreadable_calls + 1


# ------------------------------------------------------------------------ the CLI


def fbi_view(*args: str, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "fbi", "view", *args], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "COLUMNS": "200"})


def url_of(process: subprocess.Popen) -> str:
    line = process.stdout.readline()
    found = re.search(r"http://\S+/", line)
    assert found, line + process.stderr.read()
    return found.group(0)


@pytest.mark.slow
def test_loopback_by_default_a_warning_otherwise_and_ctrl_c_stops(runs):
    process = fbi_view(str(runs), "--port", "0", cwd=Path(OUTSIDE_CHECKOUT))
    try:
        url = url_of(process)
        assert url.startswith("http://127.0.0.1:")
        assert get(url)[0] == 200
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0, err
    assert "stopped" in out and "Traceback" not in err

    process = fbi_view(str(runs), "--port", "0", "--host", "0.0.0.0",
                       cwd=Path(OUTSIDE_CHECKOUT))
    try:
        url_of(process)
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    assert "warning: listening on 0.0.0.0" in err


def test_bad_input_gets_one_message(runs, tmp_path):
    missing = CliRunner().invoke(main, ["view", str(tmp_path / "nope")])
    assert missing.exit_code == 2
    assert "no such folder" in missing.output and "Traceback" not in missing.output

    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = CliRunner().invoke(main, ["view", str(runs), "--port",
                                         str(taken.getsockname()[1])])
    assert busy.exit_code == 2 and "choose another --port" in busy.output

    bad_labels = tmp_path / "labels.csv"
    bad_labels.write_text("instance_id,verdict\nx,sideways\n")
    labels = CliRunner().invoke(main, ["view", str(runs), "--human", str(bad_labels)])
    assert labels.exit_code == 2 and "labels.csv" in labels.output

    # a broken spec is listed as unreadable; the other runs still show
    import shutil

    tree = tmp_path / "tree"
    shutil.copytree(runs / "a", tree / "good")
    (tree / "broken").mkdir()
    (tree / "broken" / "run.json").write_text("{not json")
    shutil.copytree(runs / "b", tree / "torn")
    with open(tree / "torn" / "judgments.jsonl", "a") as file:
        file.write('{"call_id": "x", "status": "ok"}\n{"call_id"')
    server = ViewServer(Viewer([tree]), port=0)
    server.start()
    try:
        _, page, _ = get(server.url)
        assert "tree/good" in page and "tree/torn" in page
        assert re.search(r"tree/broken.*?unreadable", page, re.S)
        status, grid, _ = get(server.url + "grid?run=tree/torn")
        assert status == 200 and "not a valid record" in grid
        status, page, _ = get(server.url + "grid?run=tree/elsewhere")
        assert status == 404 and "no run &#39;tree/elsewhere&#39; is served here" in page
        status, page, _ = get(server.url + "instance?id=nothing&run=tree/good")
        assert status == 404 and "no run shown holds an instance" in page
        status, page, _ = get(server.url + "instances?missed_by=tree/good")
        assert status == 404 and "choose both runs" in page
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow
def test_view_after_the_main_job_in_chromium(tmp_path):
    """As a new user: the README's main job (the embedded judge), then `fbi view` on
    fbi-runs; the run, its grid and an instance with its diff and reply, in Chromium."""
    pytest.importorskip("gguf", reason="the embedded judge is the [local] extra")
    from selenium.webdriver.common.by import By

    env = {**os.environ, "FBI_CACHE": str(tmp_path / "cache.sqlite")}
    done = subprocess.run([sys.executable, "-m", "fbi", "evaluate"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr
    process = fbi_view("fbi-runs", "--port", "0", cwd=tmp_path)
    try:
        url = url_of(process)
        with chromium(tmp_path / "profile") as driver:
            driver.get(url)
            link = driver.find_element(By.CSS_SELECTOR, "#runs tbody tr td:nth-child(2) a")
            assert link.text == "fbi-runs/smollm2-135m__quick"
            click_and_load(driver, link)
            assert driver.find_elements(By.CSS_SELECTOR, "#grid a.rate")
            click_and_load(driver, driver.find_element(By.CSS_SELECTOR, "#grid a.rate"))
            rows = driver.find_elements(By.CSS_SELECTOR, "#instances tbody tr a")
            if not rows:  # the judge caught it: every instance instead
                driver.get(url + "instances")
                rows = driver.find_elements(By.CSS_SELECTOR, "#instances tbody tr a")
            click_and_load(driver, rows[0])
            assert driver.find_elements(By.CSS_SELECTOR, "#gold del, #perturbed ins")
            record = latest_records(next((tmp_path / "fbi-runs").iterdir()))
            shown = driver.find_element(By.ID, "replies").text
            target = driver.find_element(By.TAG_NAME, "h1").text
            assert any(r["raw_output"].strip()[:40] in shown for r in record
                       if r["instance_id"] == target)
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=60)


# ------------------------------------------------------------------------ every kind


@pytest.mark.slow
def test_every_kind_of_run_is_listed_with_its_status(runs, tmp_path):
    """A perturb queue and a robustness run beside judge runs that are interrupted, that
    wait for a provider batch, and that a process is writing now."""
    import fcntl
    import shutil

    from openai_server import qa_script

    tree = tmp_path / "tree"
    env = {"OPENAI_API_KEY": "sk-test", "FBI_CACHE": str(tmp_path / "cache.sqlite")}
    queue = CliRunner().invoke(main, ["perturb", "--engine", "rules", "--input", "sample",
                                      "--categories", "spelling", "--output",
                                      str(tree / "queue.jsonl")], env=env)
    assert queue.exit_code == 0, queue.output
    # the set exported from it after vetting (every record labelled) is a dataset, not
    # a second queue (issue 51)
    (tree / "vetted.jsonl").write_text("".join(
        json.dumps({**json.loads(line), "label": "valid"}) + "\n"
        for line in (tree / "queue.jsonl").read_text(encoding="utf-8").splitlines()))
    with ChatServer(script=qa_script) as server:
        robust = CliRunner().invoke(main, [
            "robustness", "run", "--model", "openai/qa", "--api-base", server.url,
            "--suite", "all", "--limit", "2", "--output", str(tree / "robust")], env=env)
    assert robust.exit_code == 0, robust.output
    for name in ("stopped", "batched", "busy"):
        shutil.copytree(runs / "a", tree / name)
    spec = json.loads((tree / "stopped" / "run.json").read_text())
    spec["totals"]["interrupted"] = True
    (tree / "stopped" / "run.json").write_text(json.dumps(spec))
    (tree / "batched" / "judgments.batches.jsonl").write_text(json.dumps({
        "batch_id": "batch_1", "provider": "openai", "model": "openai/judge",
        "input_file_id": "file_1", "custom_ids": ["x"], "status": "in_progress",
        "created_at": 1.0, "updated_at": 2.0}) + "\n")
    with open(tree / "busy" / ".fbi.lock", "a+") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # a writer holds it, as a run does
        server = ViewServer(Viewer([tree]), port=0)
        server.start()
        try:
            _, page, _ = get(server.url)
            _, queue_page, _ = get(server.url + "run?run=tree/queue")
            _, robust_page, _ = get(server.url + "run?run=tree/robust")
        finally:
            server.shutdown()
            server.server_close()
    rows = dict(re.findall(r'<tr data-run="([^"]+)">(.*?)</tr>', page, re.S))
    assert set(rows) == {"tree/queue", "tree/robust", "tree/stopped", "tree/batched",
                         "tree/busy"}
    expected = {"tree/queue": ("perturb", "finished"),
                "tree/robust": ("robustness", "finished"),
                "tree/stopped": ("evaluate", "partial"),
                "tree/batched": ("evaluate", "batch pending"),
                "tree/busy": ("evaluate", "running")}
    for key, (kind, status) in expected.items():
        assert f"<td>{kind}</td>" in rows[key], key
        assert f">{status}</span>" in rows[key], key
    assert "openai/qa" in robust_page and "robustness" in robust_page
    candidates = [json.loads(line) for line in
                  (tree / "queue.jsonl").read_text(encoding="utf-8").splitlines()]
    assert f"Queue queue.jsonl: {len(candidates)} candidates" in queue_page
    assert f"spelling {len(candidates)}" in queue_page
    assert f"unvetted {len(candidates)}" in queue_page


def test_human_labels_show_beside_the_replies(runs, tmp_path):
    ids = sorted({r["instance_id"] for r in latest_records(runs / "a")})[:2]
    labels = tmp_path / "labels.csv"
    labels.write_text("instance_id,verdict,annotator\n"
                      f"{ids[0]},a,ann-1\n{ids[0]},tie,ann-2\n{ids[1]},b,ann-1\n")
    server = ViewServer(Viewer([runs], human=labels), port=0)
    server.start()
    try:
        _, first, _ = get(server.url + f"instance?id={ids[0]}")
        _, second, _ = get(server.url + f"instance?id={ids[1]}")
    finally:
        server.shutdown()
        server.server_close()
    human = re.search(r'<ul class="human" id="human">(.*?)</ul>', first, re.S).group(1)
    assert "ann-1: verdict a" in human and "ann-2: verdict tie" in human
    assert "ann-1: verdict b" in re.search(r'id="human">(.*?)</ul>', second, re.S).group(1)


@pytest.mark.slow
def test_a_hunts_page_lists_its_findings_with_their_examples(tmp_path):
    """A hunt against a judge blind to long additions: its page names each candidate of
    hunt.json with its miss rate, the confirmed ones apart, and shows each confirmed
    finding's examples as word diffs."""
    from planted_judges import misses_long_additions, synthetic_gold

    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps(row) + "\n" for row in synthetic_gold()),
                    encoding="utf-8")
    from fbi.datasets import load_gold_items

    judge = PlantedJudge(load_gold_items(str(gold))[0], misses_long_additions)
    with ChatServer(judge) as server:
        done = CliRunner().invoke(main, [
            "hunt", "--judge", "openai/planted", "--api-base", server.url, "--dataset",
            str(gold), "--budget", "800", "--output", str(tmp_path / "runs" / "hunt")],
            env={"OPENAI_API_KEY": "sk-test", "FBI_CACHE": str(tmp_path / "c.sqlite")})
    assert done.exit_code == 0, done.output
    findings = json.loads((tmp_path / "runs" / "hunt" / "hunt.json").read_text())["findings"]
    assert any(f["confirmed"] for f in findings)
    server = ViewServer(Viewer([tmp_path / "runs"]), port=0)
    server.start()
    try:
        _, runs_page, _ = get(server.url)
        _, page, _ = get(server.url + "run?run=runs/hunt")
    finally:
        server.shutdown()
        server.server_close()
    assert "<td>hunt</td>" in runs_page
    tables = {name: re.search(rf'<table class="hunt" id="{name}">(.*?)</table>', page,
                              re.S) for name in ("findings", "candidates")}
    for finding in findings:
        table = tables["findings" if finding["confirmed"] else "candidates"].group(1)
        assert finding["name"] in table
        if finding["miss_rate"] is not None:
            assert f"{100 * finding['miss_rate']:.1f}" in table
    confirmed = next(f for f in findings if f["confirmed"])
    example = confirmed["examples"][0]
    assert html.escape(example["instance_id"]) in page
    assert "<ins>" in page and 'id="hunt-summary"' in page


# ------------------------------------------------------------------------ hostile (issue 50)


def raw_get(port: int, path: str, host: str) -> tuple[int, bytes]:
    """A GET with the Host header a browser would send for ``host`` (a page of another
    site that rebinds its name to 127.0.0.1 sends its own name)."""
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.putrequest("GET", path, skip_host=True)
        connection.putheader("Host", host)
        connection.endheaders()
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_only_requests_addressed_to_the_viewer_are_answered(served):
    port = served.server_address[1]
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}"):
        assert raw_get(port, "/", host)[0] == 200, host
    for host in (f"attacker.example:{port}", "attacker.example", f"127.0.0.1:{port + 1}",
                 ""):
        status, body = raw_get(port, "/", host)
        assert status == 421 and b"addressed to it" in body, host


def test_ipv6_loopback_is_served_and_a_foreign_address_is_one_message(runs):
    import socket

    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        pytest.skip("this machine has no IPv6 loopback")
    for host in ("::1", "[::1]"):
        server = ViewServer(Viewer([runs]), host=host, port=0)
        server.start()
        try:
            assert server.url.startswith("http://[::1]:")
            status, _, _ = get(server.url)
            assert status == 200
        finally:
            server.shutdown()
            server.server_close()
    from fbi.errors import InputError

    with pytest.raises(InputError, match="not an address of this machine"):
        ViewServer(Viewer([runs]), host="192.0.2.1", port=0)


def copy_run(runs: Path, to: Path) -> Path:
    import shutil

    shutil.copytree(runs / "a", to, ignore=shutil.ignore_patterns(".fbi.lock"))
    return to


def test_a_link_out_of_the_served_folders_and_a_fifo_are_never_opened(runs, tmp_path):
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("the user's private notes\n")
    served_root = tmp_path / "served"
    linked = copy_run(runs, served_root / "linked")
    (linked / "judgments.jsonl").unlink()
    (linked / "judgments.jsonl").symlink_to(secret)
    piped = copy_run(runs, served_root / "piped")
    os.mkfifo(piped / "notes.jsonl")
    inside = copy_run(runs, served_root / "inside")
    (inside / "copy.jsonl").symlink_to(inside / "judgments.jsonl")  # a link within: fine
    viewer = Viewer([served_root])  # returns: a FIFO never blocks the catalogue
    entries = {e.key: e for e in viewer.entries.values()}
    assert entries["served/linked"].status == "unreadable"
    assert "links out of the folders served" in entries["served/linked"].status_note
    assert entries["served/piped"].status == "unreadable"
    assert "not a regular file" in entries["served/piped"].status_note
    assert entries["served/inside"].status != "unreadable"
    server = ViewServer(viewer, port=0)
    server.start()
    try:
        pages = [get(server.url + path)[1] for path in (
            "", "run?run=served/linked", "grid?run=served/linked",
            "instances?run=served/linked")]
    finally:
        server.shutdown()
        server.server_close()
    assert not any("private notes" in page for page in pages)


def test_a_long_reply_is_clipped_with_a_link_to_the_whole_text(tmp_path):
    long_reply = "Score: 3. " + "very long reasoning " * 5_000  # 100,000 characters

    with ChatServer(script=lambda request: long_reply) as server:
        evaluate(server, "sample", tmp_path / "runs" / "long", "long",
                 {"OPENAI_API_KEY": "sk-test"}, "--category", "entity", "--limit", "1")
    record = next(r for r in latest_records(tmp_path / "runs" / "long")
                  if r["raw_output"] == long_reply)
    server = ViewServer(Viewer([tmp_path / "runs"]), port=0)
    server.start()
    try:
        status, page, _ = get(server.url + f"instance?id={record['instance_id']}")
        assert status == 200
        assert len(page) < 200_000  # every call of the instance clipped
        link = re.search(r'<a href="(/text\?[^"]+)">the whole text</a>', page)
        assert link and f"{len(long_reply) - 20_000:,} more characters" in page
        status, text, headers = get(server.url.rstrip("/") + html.unescape(link.group(1)))
    finally:
        server.shutdown()
        server.server_close()
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    assert text == long_reply


def test_view_with_human_labels_matched_by_text_starts(runs, tmp_path):
    """`fbi view RUN --human LABELS` with labels naming instances by their texts (no
    instance_id) reads them against the served runs: it goes on to listen (here: the
    port is taken, so that is where it stops)."""
    import csv
    import socket

    instance = load_dataset(str(runs / "a" / "instances.jsonl")).instances[0] \
        if (runs / "a" / "instances.jsonl").exists() else load_dataset("sample").instances[0]
    labels = tmp_path / "labels.csv"
    with open(labels, "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["prompt", "perturbed_answer", "verdict", "annotator"])
        writer.writerow([instance.instruction, instance.perturbed_answer, "a", "ann-1"])
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        result = CliRunner().invoke(main, ["view", str(runs), "--human", str(labels),
                                           "--port", str(taken.getsockname()[1])])
    assert result.exit_code == 2 and "choose another --port" in result.output, result.output


@pytest.mark.parametrize("query, said", [
    ("outcome=undetectd", "outcome='undetectd'"),
    ("strategy=vanila", "strategy='vanila'"),
    ("category=entities", "category='entities'"),
    ("ability=XX", "ability='XX'"),
])
def test_a_filter_naming_nothing_the_runs_hold_is_said_not_ignored(served, query, said):
    """Issue 51: a mistyped filter in a shared link is a message naming the valid values,
    never a page that silently shows everything (or nothing)."""
    status, page, _ = get(served.url + "instances?" + query)
    assert status == 404 and said in html.unescape(page)
    assert "the runs shown hold no such" in html.unescape(page)
