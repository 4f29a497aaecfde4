"""The run harness every stage shares: logs, guard, lock, interruption, and the failures
each of them once let through (issue 10), each reproduced here against real processes,
a real loopback server and real files."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import OUTSIDE_CHECKOUT
from openai_server import ChatServer

from fbi.cli import main
from fbi.errors import InputError
from fbi.logs import AppendLog, append_durably, read_log
from fbi.records import Judgment
from fbi.runs import RunBusy, RunFolder
from fbi.settings import ModelSettings

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).parent / "fixtures" / "report_run"
JUDGE = "openai/judge-under-test"


def env_for(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "OPENAI_API_KEY": "sk-test", "FBI_CACHE": str(tmp_path / "c.sqlite"),
            "COLUMNS": "200"}


def fbi(*args: str, env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fbi", *args], env=env, capture_output=True,
                          text=True, timeout=timeout, cwd=OUTSIDE_CHECKOUT)


def as_from_a_shell() -> None:
    """In the child: SIGINT and SIGTERM as a user's shell starts a command, whatever
    state earlier tests left the test process's signals in (a child inherits ignored
    and blocked signals, and then cannot be stopped with Ctrl-C at all)."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})


def start(*args: str, env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "fbi", *args], env=env,
                            cwd=OUTSIDE_CHECKOUT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=as_from_a_shell)


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().split(b"\n") if line.strip()]


def wait_for_lines(path: Path, count: int, process: subprocess.Popen, limit: float = 120):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and process.poll() is None:
        if path.exists() and path.read_bytes().count(b"\n") >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} never reached {count} lines")


# ----------------------------------------------------------------- the JSONL policy


def judgment(call_id: str, text: str = "fine") -> Judgment:
    return Judgment(call_id=call_id, prompt_hash="h", raw_output=text, status="ok",
                    instance_id=call_id, ability="factual", category="entity",
                    strategy="vanilla", strategy_version="1", paradigm="single",
                    role="gold", judge=JUDGE, score=5, score_range=(1, 10))


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085", "\r", "\x0b", "\x1c"])
def test_any_line_separator_in_a_text_reads_back(tmp_path, separator):
    path = tmp_path / "log.jsonl"
    log = AppendLog(path, Judgment)
    log.append(judgment("a", f"one{separator}two"))
    log.close()
    path.write_bytes(path.read_bytes() + b'{"call_id": "b", "prom')  # a torn tail
    contents = read_log(path, Judgment)
    assert contents.torn_tail and [r.raw_output for r in contents.records] == \
        [f"one{separator}two"]
    log = AppendLog(path, Judgment)  # the torn tail goes before the next append
    log.append(judgment("c"))
    log.close()
    again = read_log(path, Judgment)
    assert not again.torn_tail and not again.bad_lines
    assert [r.call_id for r in again.records] == ["a", "c"]


def test_a_bad_line_inside_a_log_is_named_never_skipped(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text(json.dumps(judgment("a").model_dump(mode="json")) + "\n{not json}\n"
                    + json.dumps(judgment("b").model_dump(mode="json")) + "\n")
    contents = read_log(path, Judgment)
    assert [b.number for b in contents.bad_lines] == [2]
    assert "line 2" in contents.problem()
    with pytest.raises(InputError, match="line 2"):
        AppendLog(path, Judgment)


def test_a_torn_event_log_never_swallows_the_next_label(tmp_path):
    """The full-disk path: a write that left `{"sc` behind, then the next label."""
    path = tmp_path / "queue.ann.events.jsonl"
    append_durably(path, judgment("a"))
    with open(path, "ab") as log:
        log.write(b'{"sc')
    append_durably(path, judgment("b"))
    contents = read_log(path, Judgment)
    assert [r.call_id for r in contents.records] == ["a", "b"] and not contents.bad_lines


# ----------------------------------------------------------------- 1. re-parsing


@pytest.mark.slow
def test_reparse_keeps_the_verdicts_of_strategies_not_run_today(tmp_path):
    """Judgments from an older parser are read again with the slot order of their role,
    not of today's plan: pairwise verdicts survive a resume with another strategy set."""
    env = env_for(tmp_path)
    out = tmp_path / "run"
    with ChatServer() as server:
        common = ("evaluate", "--judge", JUDGE, "--api-base", server.url, "--output", str(out),
                  "--category", "entity")
        assert fbi(*common, "--strategy", "pairwise_star", env=env).returncode == 0
        before = {r["call_id"]: r for r in lines(out / "judgments.jsonl")}
        assert any(r["verdict"] for r in before.values())
        stale = [{**r, "parser_version": "1"} for r in before.values()]
        (out / "judgments.jsonl").write_text("".join(json.dumps(r) + "\n" for r in stale))
        result = fbi(*common, "--strategy", "vanilla_star", env=env)
    assert result.returncode == 0, result.stderr
    after = {r["call_id"]: r for r in lines(out / "judgments.jsonl")}
    for call_id, old in before.items():
        assert (after[call_id]["verdict"], after[call_id]["slot_verdict"],
                after[call_id]["status"]) == (old["verdict"], old["slot_verdict"],
                                              old["status"]), call_id


# ----------------------------------------------------------------- 2. another model


def qa_model(request: dict) -> str:
    prompt = request["messages"][-1]["content"]
    if "Rewrite the question" in prompt:
        return json.dumps({"rewrites": ["<rewrite 1>", "<rewrite 2>", "..."]})
    return json.dumps({"answer": "Paris" if "good" in request["model"] else "Lyon",
                       "confidence": 50})


@pytest.mark.slow
def test_a_robustness_folder_refuses_another_model(tmp_path):
    env = env_for(tmp_path)
    with ChatServer(script=qa_model) as server:
        common = ("robustness", "run", "--api-base", server.url, "--output",
                  str(tmp_path / "run"), "--suite", "noise", "--limit", "2")
        first = fbi(*common, "--model", "openai/good", env=env)
        assert first.returncode == 0, first.stderr
        other = fbi(*common, "--model", "openai/bad", env=env)
    assert other.returncode == 2 and 'model: "openai/good" → "openai/bad"' in other.stderr
    assert "Traceback" not in other.stderr


@pytest.mark.slow
def test_perturb_exits_1_on_failed_calls_and_refuses_another_model(tmp_path):
    env = env_for(tmp_path)
    queue = tmp_path / "queue.jsonl"
    with ChatServer(script=lambda request: "no JSON here") as server:
        common = ("perturb", "--engine", "llm", "--api-base", server.url, "--categories",
                  "entity", "--output", str(queue))
        first = fbi(*common, "--model", "openai/a", env=env)
        assert first.returncode == 1, first.stdout + first.stderr
        assert "0 candidates" in first.stdout
        other = fbi(*common, "--model", "openai/b", env=env)
    assert other.returncode == 2 and 'model: "openai/a" → "openai/b"' in other.stderr


# ----------------------------------------------------------------- 3. runs never pooled


def report_beside_the_fixture(tmp_path, name: str, **parameters) -> dict:
    """summary.json of a report on the fixture run and a copy of it whose run.json
    parameters are changed by ``parameters``."""
    copy = tmp_path / name
    shutil.copytree(FIXTURE, copy)
    spec = json.loads((copy / "run.json").read_text())
    spec["parameters"].update(parameters)
    (copy / "run.json").write_text(json.dumps(spec))
    result = CliRunner().invoke(main, ["report", str(FIXTURE), str(copy), "--output",
                                       str(tmp_path / f"out-{name}"), "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads((tmp_path / f"out-{name}" / "summary.json").read_text())


def test_a_report_never_pools_two_runs(tmp_path):
    summary = report_beside_the_fixture(tmp_path, "t07", temperature=0.7)
    labels = {r["label"] for r in summary["runs"]}
    assert labels == {"openai/hand-judge@t0.0", "openai/hand-judge@t0.7"}
    overall = [r for r in summary["rates"] if r["level"] == "overall"
               and r["strategy"] == "vanilla"]
    assert sorted(r["judge"] for r in overall) == sorted(labels)
    assert all(r["n"] == overall[0]["n"] for r in overall)  # each run alone, not pooled
    # the explanation cap tells runs apart too; a run.json without it (written before
    # the option) had 600
    summary = report_beside_the_fixture(tmp_path, "short", explanation_chars=120)
    assert {r["label"] for r in summary["runs"]} == {"openai/hand-judge@expl600",
                                                     "openai/hand-judge@expl120"}

    twin = tmp_path / "twin"
    shutil.copytree(FIXTURE, twin)
    result = CliRunner().invoke(main, ["report", str(FIXTURE), str(twin), "--output",
                                       str(tmp_path / "out2")])
    assert result.exit_code == 2 and "never pools" in result.output


# ----------------------------------------------------------------- 4. Ctrl-C


@pytest.mark.slow
@pytest.mark.parametrize("sent_signal, code, said", [
    (signal.SIGINT, 130, "interrupted"),
    (signal.SIGTERM, 143, "terminated (SIGTERM)"),  # issue 22: as the first Ctrl-C
])
def test_ctrl_c_saves_what_finished_and_exits_130_within_seconds(tmp_path, sent_signal, code,
                                                                  said):
    """No new call starts after the signal (the server receives at most the calls already
    on their way), the calls in flight get a grace period, and the run is resumable.
    Asserted by what the server received, not by a clock a busy machine slows."""
    env = env_for(tmp_path)
    out = tmp_path / "run"
    with ChatServer(latency_s=0.5) as server:
        args = ("evaluate", "--judge", JUDGE, "--api-base", server.url, "--dataset", "sample",
                "--output", str(out), "--strategy", "vanilla_star", "--concurrency", "4")
        process = start(*args, env=env)
        wait_for_lines(out / "judgments.jsonl", 8, process)
        asked_before = server.counts["ok"]
        process.send_signal(sent_signal)
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == code, stderr
        assert server.counts["ok"] - asked_before <= 4  # only those already sent
        assert f"{said}: " in stderr and "to resume" in stderr
        assert "never awaited" not in stderr and "Traceback" not in stderr
        kept = lines(out / "judgments.jsonl")
        assert len(kept) >= 8 and json.loads((out / "run.json").read_text())["totals"][
            "interrupted"]
        resumed = fbi(*args, env=env)
    assert resumed.returncode == 0, resumed.stderr
    final = lines(out / "judgments.jsonl")
    assert len(final) == len({r["call_id"] for r in final}) == 144


@pytest.mark.slow
def test_a_second_ctrl_c_exits_at_once(tmp_path):
    env = env_for(tmp_path)
    """The second signal ends the process without waiting for the call in flight: its
    reply would take 300 s, so exiting at all shows it."""
    with ChatServer(latency_s=300) as server:
        for stage, extra in (("probe", ()), ("run", ("--no-probe",))):
            out = tmp_path / stage
            judge = f"{JUDGE}-{stage}"  # its own model name: only this process's calls count
            process = start("evaluate", "--judge", judge, "--api-base", server.url, "--output",
                            str(out), "--strategy", "vanilla_star", *extra, env=env)
            deadline = time.monotonic() + 60
            while not any(r.get("model") == judge.removeprefix("openai/")
                          for r in list(server.requests)) and time.monotonic() < deadline:
                time.sleep(0.05)
            process.send_signal(signal.SIGINT)
            time.sleep(0.3)
            process.send_signal(signal.SIGINT)
            _, stderr = process.communicate(timeout=120)  # (a hang guard, not a bound)
            assert process.returncode == 130, (stage, stderr)
            assert "Traceback" not in stderr
        assert not (tmp_path / "probe").exists()  # stopped before the run began


def test_sigterm_before_the_run_starts_exits_143_with_the_message(tmp_path):
    with ChatServer(latency_s=20) as server:
        process = start("evaluate", "--judge", JUDGE, "--api-base", server.url, "--output",
                        str(tmp_path / "run"), "--strategy", "vanilla_star", env=env_for(tmp_path))
        deadline = time.monotonic() + 60
        while not sum(server.counts.values()) and time.monotonic() < deadline:
            time.sleep(0.05)  # the probe call is waiting for its reply
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == 143, stderr
    assert "terminated (SIGTERM); finished work is saved" in stderr and "Traceback" not in stderr


@pytest.mark.slow
def test_ctrl_c_stops_the_embedded_judge_within_seconds(tmp_path):
    pytest.importorskip("gguf", reason="needs the embedded judge: pip install 'fbi[local]'")
    out = tmp_path / "run"
    process = start("evaluate", "--output", str(out), "--strategy", "vanilla", "--category",
                    "entity", "--category", "grammar", env=env_for(tmp_path))
    wait_for_lines(out / "judgments.jsonl", 1, process, limit=240)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)  # (a hang guard, not a bound)
    assert process.returncode == 130, stderr
    kept = lines(out / "judgments.jsonl")
    # the embedded judge stopped generating: the run ended before its last call, with no
    # call cut short recorded as failed, and says it was interrupted
    assert 1 <= len(kept) < 4 and all(r["status"] != "error" for r in kept)
    assert json.loads((out / "run.json").read_text())["totals"]["interrupted"]


# ----------------------------------------------------------------- 5. robustness


@pytest.mark.slow
def test_robustness_reports_a_failed_suite_and_score_agrees_with_the_run(tmp_path):
    env = env_for(tmp_path)
    out = tmp_path / "run"
    with ChatServer(script=qa_model) as server:
        result = fbi("robustness", "run", "--model", "openai/good", "--api-base", server.url,
                     "--output", str(out), "--suite", "multiqa", "--suite", "shuffle",
                     "--limit", "6", env=env)
    assert result.returncode == 1, result.stdout + result.stderr
    summary = json.loads((out / "robustness.json").read_text())
    # every rewrite copied the template's placeholders: none was asked as a question
    assert "multiqa" in summary["failed_suites"] and "multiqa" not in summary["suites"]
    assert "suite multiqa failed" in result.stdout
    rewrites = lines(out / "rewrites.jsonl")
    assert rewrites and all(r["status"] == "unparseable" for r in rewrites)
    asked = {a["question"] for a in lines(out / "answers.jsonl")}
    assert not any("<rewrite" in q for q in asked)
    scored = CliRunner().invoke(main, ["robustness", "score", str(out / "answers.jsonl"),
                                       "--output", str(tmp_path / "scored.json")],
                                terminal_width=200)
    assert scored.exit_code == 1, scored.output  # a failed suite, as the run (issue 26)
    again = json.loads((tmp_path / "scored.json").read_text())
    for key in ("answers", "unusable_answers", "suites", "failed_suites", "skipped_suites"):
        assert again[key] == summary[key], key


# ----------------------------------------------------------------- 6. the rule engine


@pytest.mark.slow
def test_the_rule_engine_never_raises_on_the_release(fbi_original):
    from fbi.datasets import load_gold_items
    from fbi.perturb import PerturbConfig, Perturber

    items, _ = load_gold_items(str(fbi_original))
    for seed in (0, 1):
        perturber = Perturber(items, PerturbConfig(engine="rules", seed=seed),
                              Path(OUTSIDE_CHECKOUT) / f"fbi-rules-{os.getpid()}.jsonl")
        perturber.run(None)  # a rules-only run needs no model client
        result = perturber.result
        assert len(result.candidates) > 1500
        assert all(c.perturbed_answer != c.gold_answer for c in result.candidates)
        for path in (perturber.output, perturber.spec_path,  # (a rules run has its spec)
                     perturber.folder.lock_path):
            path.unlink(missing_ok=True)


# ----------------------------------------------------------------- 7. install paths


def test_every_command_runs_from_a_source_checkout():
    """`python -m fbi` in a clone finds prompts/, perturbations/ and annotate/ beside the
    package, as an installed one finds them inside it."""
    probe = ("import fbi.annotate.app, fbi.prompts, fbi.perturbations; "
             "print(fbi.annotate.__file__)")
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(ROOT / "annotate" / "__init__.py")
    helped = subprocess.run([sys.executable, "-m", "fbi", "annotate", "--help"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert helped.returncode == 0 and "--annotator" in helped.stdout, helped.stderr


def test_the_dataset_card_names_sources_without_local_paths(tmp_path):
    from fbi.datasets import load_dataset, source_name
    from fbi.vet import dataset_card

    assert source_name("/home/someone/data/fbi-original/") == "fbi-original"
    assert source_name("hf:ai4bharat/FBI") == "ai4bharat/FBI"
    assert source_name("sample") == "sample"
    instances = [i.model_copy(update={"provenance": i.provenance.model_copy(
        update={"source": "/home/someone/private/gold.jsonl"})})
        for i in load_dataset("sample").instances[:3]]
    card = dataset_card(instances, {("factual", "entity"): instances}, "org/x", "cc-by-4.0",
                        None, None)
    assert "/home/someone" not in card and "`gold.jsonl` (3)" in card


# ----------------------------------------------------------------- 8. one writer


@pytest.mark.slow
def test_a_second_process_on_a_busy_folder_is_refused_and_loses_nothing(tmp_path):
    env = env_for(tmp_path)
    out = tmp_path / "run"
    with ChatServer(latency_s=0.2) as server:
        args = ("evaluate", "--judge", JUDGE, "--api-base", server.url, "--dataset", "sample",
                "--output", str(out), "--strategy", "vanilla_star", "--concurrency", "2")
        first = start(*args, env=env)
        wait_for_lines(out / "judgments.jsonl", 4, first)
        second = fbi(*args, env=env)
        assert second.returncode == 2, second.stderr
        assert f"in use by another fbi process (pid {first.pid})" in second.stderr
        beside = fbi(*args, "--dry-run", env=env)  # reads, never writes
        assert beside.returncode == 0, beside.stderr
        first.communicate(timeout=300)
    assert first.returncode == 0
    final = lines(out / "judgments.jsonl")
    assert len(final) == len({r["call_id"] for r in final}) == 144
    # nothing was paid twice: one request per reply not taken from the cache
    # (and one probe call per process: the second probes before it meets the lock)
    assert server.counts["ok"] == sum(not r["cached"] for r in final) + 2


def test_the_lock_is_released_when_the_run_ends(tmp_path):
    from fbi.run_spec import RunSpec

    spec = RunSpec(model="m", fbi_version="x", created_at="now", updated_at="now")
    with RunFolder.open(spec, tmp_path / "run.json"), pytest.raises(RunBusy):
        RunFolder.open(spec, tmp_path / "run.json")
    RunFolder.open(spec, tmp_path / "run.json").close()  # free again


# ----------------------------------------------------------------- secrets (issue 12.4)


@pytest.mark.slow
def test_no_secret_from_an_error_body_reaches_a_file_or_the_console(tmp_path):
    secret = "sk-echoed-by-a-careless-provider-9f3e"
    env = {**env_for(tmp_path), "OPENAI_API_KEY": secret}
    common = ("--judge", JUDGE, "--category", "entity", "--limit", "1", "--strategy",
              "vanilla_star", "--retries", "0")
    with ChatServer(echo_credentials=True) as server:
        probed = fbi("evaluate", *common, "--api-base", server.url, "--output",
                     str(tmp_path / "probed"), env=env)
        # without the probe, the calls themselves meet the 401 and are recorded
        echoed = fbi("evaluate", *common, "--api-base", server.url, "--output",
                     str(tmp_path / "echoed"), "--no-probe", env=env)
        credentials = server.url.replace("http://", "http://alice:pa55word@")
        with_userinfo = fbi("evaluate", *common, "--api-base", credentials, "--output",
                            str(tmp_path / "userinfo"), "--no-probe", env=env)
    assert probed.returncode == 2 and "[redacted]" in probed.stderr, probed.stderr
    assert echoed.returncode == 1, echoed.stdout + echoed.stderr
    records = lines(tmp_path / "echoed" / "judgments.jsonl")
    assert records and all("Authentication" in r["reason"] and "[redacted]" in r["reason"]
                           for r in records)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert secret.encode() not in data and b"pa55word" not in data, path
    for result in (probed, echoed, with_userinfo):
        assert secret not in result.stdout + result.stderr
        assert "pa55word" not in result.stdout + result.stderr
    spec = json.loads((tmp_path / "userinfo" / "run.json").read_text())
    assert spec["api_base"] == server.url  # the user:password part is never written


@pytest.mark.slow
@pytest.mark.parametrize("given", ["option", "environment"])
def test_a_key_without_a_known_prefix_is_redacted_in_every_echoed_form(tmp_path, given):
    """Issue 22: the exact key of --api-key or FBI_API_KEY, as given, base64-encoded (at
    any alignment) or URL-encoded, in an error or in a reply, is never stored or shown."""
    import base64
    from urllib.parse import quote

    secret = "plainKEYnoPrefix/42+x=="
    forms = [secret, base64.b64encode(secret.encode()).decode(),
             base64.b64encode(("user:" + secret).encode()).decode()[8:],
             quote(secret, safe="")]
    env = env_for(tmp_path)
    key = ("--api-key", secret) if given == "option" else ()
    if given == "environment":
        env["FBI_API_KEY"] = secret
    common = ("--judge", JUDGE, "--category", "entity", "--limit", "1", "--strategy",
              "vanilla_star", "--retries", "0", "--no-cache", *key)
    results = []
    for mode in (True, "reply"):
        with ChatServer(echo_credentials=mode) as server:
            results.append(fbi("evaluate", *common, "--api-base", server.url, "--output",
                               str(tmp_path / f"echo-{mode}"), "--no-probe", env=env))
    records = lines(tmp_path / "echo-True" / "judgments.jsonl") + \
        lines(tmp_path / "echo-reply" / "judgments.jsonl")
    assert any("[redacted]" in (r.get("reason") or "") for r in records)
    assert any("[redacted]" in (r.get("raw_output") or "") for r in records)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            data = path.read_bytes().decode("utf-8", "replace")
            assert not [form for form in forms if form in data], path
    for result in results:
        assert not [form for form in forms if form in result.stdout + result.stderr]


# ----------------------------------------------------------------- 9. the heap during a run


class FreezeCounts:
    """A progress display that notes how much of the heap is frozen as each call ends."""

    def __init__(self) -> None:
        self.during: list[int] = []

    def start(self, total: int, already_done: int) -> None:
        pass

    def advance(self, record) -> None:
        import gc

        self.during.append(gc.get_freeze_count())

    def finish(self) -> None:
        pass


def _judge_sample(tmp_path: Path, server: ChatServer, name: str) -> tuple[int, FreezeCounts]:
    from fbi import load_dataset
    from fbi.judge import Evaluation, EvaluationConfig
    from fbi.providers import ModelClient

    dataset = load_dataset("sample").select((), ("entity",), False, None)
    config = EvaluationConfig(model=ModelSettings(model=JUDGE, api_base=server.url),
                              strategies=("vanilla",))
    counts = FreezeCounts()
    totals = Evaluation(dataset, config, tmp_path / name).run(
        ModelClient(api_key="sk-freeze-test", probe_first=False), counts)
    return totals.completed, counts


@pytest.mark.slow
def test_the_start_up_heap_is_frozen_only_while_the_calls_run(tmp_path):
    """Full collections skip what was alive before the calls (see heap_frozen); after the
    run the collector sees everything again, and a heap the caller froze stays frozen."""
    import gc

    with ChatServer() as server:
        completed, counts = _judge_sample(tmp_path, server, "first")
        assert completed == 6 and len(counts.during) == 6
        assert all(count > 10_000 for count in counts.during)  # litellm, fbi, the dataset
        assert gc.get_freeze_count() == 0

        gc.freeze()  # the caller's own choice, e.g. before forking workers
        try:
            frozen = gc.get_freeze_count()
            completed, counts = _judge_sample(tmp_path, server, "second")
            # neither frozen further nor thawed (frozen objects freed meanwhile leave it)
            assert completed == 6 and all(0 < c <= frozen for c in counts.during)
            assert 0 < gc.get_freeze_count() <= frozen
        finally:
            gc.unfreeze()


@pytest.mark.slow
def test_a_resumed_run_renders_only_the_prompts_of_the_calls_it_makes(tmp_path, monkeypatch):
    """Calls are planned by id and rendered when first needed: resuming a run with 2 of
    its 6 calls left renders 2 prompts for the cache check before the run and the same 2
    for the run, never the 4 finished ones (a finished 50,400-call folder took 7.2 s to
    re-run when every prompt was rendered to be skipped; benchmarks/RESULTS.md)."""
    from fbi.judge import StrategyRegistry

    with ChatServer() as server:
        completed, _ = _judge_sample(tmp_path, server, "run")
        assert completed == 6
        log = tmp_path / "run" / "judgments.jsonl"
        kept = log.read_bytes().splitlines(keepends=True)[:4]
        log.write_bytes(b"".join(kept))
        rendered = []
        render = StrategyRegistry.render

        def counted(self, strategy, **variables):
            rendered.append(strategy.name)
            return render(self, strategy, **variables)

        monkeypatch.setattr(StrategyRegistry, "render", counted)
        completed, _ = _judge_sample(tmp_path, server, "run")
    assert completed == 2 and len(rendered) == 2 * 2
    assert len(log.read_bytes().splitlines()) == 6
