"""`fbi watch` (issue 53): the e-process against an independent computation and a value
worked by hand, its false-alarm rate and power by Monte Carlo, and the watch end to end
against a loopback judge whose behaviour changes between steps."""

from __future__ import annotations

import html
import json
import math
import re
import urllib.parse
import urllib.request

import numpy as np
import pytest
from click.testing import CliRunner
from openai_server import ChatServer
from planted_judges import PlantedJudge
from scipy import integrate, optimize, stats

from fbi import load_dataset
from fbi.cli import main
from fbi.view import Viewer, ViewServer
from fbi.watch import change_evidence, log_start_weight

INSTANCES = load_dataset("sample").instances
ENV = {"OPENAI_API_KEY": "sk-test", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def independent_e_value(counts: list[tuple[int, int]]) -> float:
    """E(t) computed another way: each KT mixture integrated numerically against the
    Beta(½, ½) density, the null's maximum likelihood found by a bounded optimiser, the
    starts weighted ln 2 · (1/ln k − 1/ln(k + 1))."""
    def mixture(m: int, n: int) -> float:
        if n == 0:
            return 1.0
        value, _ = integrate.quad(lambda p: p ** m * (1 - p) ** (n - m)
                                  * stats.beta.pdf(p, 0.5, 0.5), 0, 1, limit=200)
        return value

    m_all, n_all = sum(c[0] for c in counts), sum(c[1] for c in counts)
    if 0 < m_all < n_all:
        fit = optimize.minimize_scalar(
            lambda p: -(m_all * math.log(p) + (n_all - m_all) * math.log(1 - p)),
            bounds=(1e-12, 1 - 1e-12), method="bounded", options={"xatol": 1e-12})
        null = math.exp(-fit.fun)
    else:
        null = 1.0
    total = 0.0
    for k in range(2, len(counts) + 1):
        before, after = counts[:k - 1], counts[k - 1:]
        numerator = mixture(sum(c[0] for c in before), sum(c[1] for c in before)) * \
            mixture(sum(c[0] for c in after), sum(c[1] for c in after))
        total += numerator / null * math.log(2) * (1 / math.log(k) - 1 / math.log(k + 1))
    return total


def test_the_e_value_by_hand():
    """Steps (0 of 1), (1 of 1): one start, k = 2, weight ln 2 (1/ln 2 − 1/ln 3) =
    1 − ln 2 / ln 3. KT(0 of 1) = KT(1 of 1) = B(½, 3/2) / B(½, ½) = (π/2) / π = ½; the
    null's best fit, p = ½, gives ¼: Λ = 1, E = 1 − ln 2 / ln 3 ≈ 0.369. One step is no
    evidence: E = 0. The start weights sum to 1."""
    assert math.exp(change_evidence([(0, 1), (1, 1)]).log_e) == pytest.approx(
        1 - math.log(2) / math.log(3))
    k = np.arange(2, 10**6)
    tail = math.log(2) / math.log(10**6)  # the telescoping sum's remainder
    assert np.exp(log_start_weight(k)).sum() + tail == pytest.approx(1, abs=1e-9)
    assert change_evidence([(3, 5)]).log_e == -math.inf


@pytest.mark.parametrize("counts", [
    [(1, 10), (2, 10), (7, 10)],
    [(0, 5), (0, 5), (0, 5), (5, 5)],
    [(3, 4), (1, 4), (2, 4), (0, 4), (4, 4)],
    [(2, 3), (2, 3)],
])
def test_the_e_value_equals_an_independent_computation(counts):
    assert math.exp(change_evidence(counts).log_e) == pytest.approx(
        independent_e_value(counts), rel=1e-6)


def watch_alarms(rates: np.ndarray, per_step: int, alpha: float, rng) -> int | None:
    """The first step a one-stream watch's E reaches 1/α, for failure rates by step."""
    counts = []
    for step, rate in enumerate(rates, 1):
        counts.append((int(rng.binomial(per_step, rate)), per_step))
        if change_evidence(counts).log_e >= math.log(1 / alpha):
            return step
    return None


def test_false_alarms_stay_under_alpha_over_every_look():
    """No change, 40 looks, α = 0.2 (large enough for 400 draws to see it): the share of
    watches that ever alarm stays under α, within three standard errors of the draws."""
    rng = np.random.default_rng(7)
    draws = 400
    alarms = sum(watch_alarms(np.full(40, rng.choice([0.05, 0.3, 0.6])), 5, 0.2, rng)
                 is not None for _ in range(draws))
    assert alarms / draws <= 0.2 + 3 * math.sqrt(0.2 * 0.8 / draws)


def test_a_large_change_is_found_within_ten_steps():
    """From 10% to 60% failures at step 21, ten judgments a step: about 0.75 nats of
    evidence a judgment, far past the ~13 nats the alarm needs (log 100 plus the start's
    weight and the two mixtures) in ten steps."""
    rng = np.random.default_rng(3)
    found = []
    for _ in range(100):
        rates = np.r_[np.full(20, 0.1), np.full(10, 0.6)]
        step = watch_alarms(rates, 10, 0.01, rng)
        found.append(step is not None and step > 20)
    assert sum(found) >= 95


# ------------------------------------------------------------------ end to end

def judge_missing(category: str | None, now: dict | None = None) -> PlantedJudge:
    """A loopback judge that catches every planted error but those of ``category`` (or
    of ``now["category"]``, which a test may change between steps)."""
    categories = {i.perturbed_answer: i.category for i in INSTANCES}
    return PlantedJudge(INSTANCES, lambda gold, edited: categories.get(edited) == (
        category if now is None else now["category"]))


def watch(args: list[str], script, chat: ChatServer | None = None, **server
          ) -> tuple[int, str]:
    """``fbi watch ARGS`` against ``chat``, or a server of its own running ``script``."""
    if chat is None:
        with ChatServer(script=script, **server) as own:
            return watch(args, script, own)
    result = CliRunner().invoke(main, ["watch", *args, "--api-base", chat.url],
                                env={**ENV, "COLUMNS": "200"})
    return result.exit_code, result.output


def get(url: str) -> tuple[int, str, dict]:
    with urllib.request.urlopen(url, timeout=60) as response:
        return response.status, response.read().decode("utf-8"), dict(response.headers)


def history(folder) -> list[dict]:
    return [json.loads(line) for line in (folder / "watch.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_a_judge_that_changes_raises_the_alarm(tmp_path):
    """Three unchanged steps (every stream 0 of 3 failures): E stays far below 100. Then
    the judge misses every edit of one category: by the worked figures (start 4 weighs
    ln 2 (1/ln 4 − 1/ln 5) ≈ 0.069, KT(0 of 9) ≈ 0.18, KT(12 of 12) ≈ 0.16, the null's
    best fit (12/21)¹² (9/21)⁹ ≈ 5.9e-7, 23 streams averaged), the fourth changed step
    gives that stream E ≈ 3,400 and the watch E ≈ 150 ≥ 100 — the alarm, naming the
    category and the step the change began at; exit 1."""
    out = tmp_path / "w"
    args = ["sample", "--judge", "openai/judge", "--output", str(out), "--canary", "3"]
    now = {"category": None}
    with ChatServer(script=judge_missing(None, now)) as chat:
        code, output = watch([*args, "--steps", "3"], None, chat)
        assert code == 0, output
        assert [s["alarm"] for s in history(out)] == [False] * 3
        assert "no change seen" in output
        now["category"] = "entity"
        code, output = watch([*args, "--steps", "10"], None, chat)
    assert code == 1, output
    steps = history(out)
    assert len(steps) == 7 and steps[-1]["alarm"] and steps[-1]["first_alarm"] == 7
    assert [s["alarm"] for s in steps] == [False] * 6 + [True]
    (changed,) = [s for s in steps[-1]["streams"] if s["category"] == "entity"]
    assert (changed["change_step"], changed["rate_before"], changed["rate_after"]) == \
        (4, 0.0, 1.0)
    assert "ALARM" in output and "entity" in output
    # the viewer's runs page shows where the watch stands, its page the history
    viewer = Viewer([tmp_path])
    (key,) = [row["entry"].key for row in viewer.runs_page()["rows"]]
    server = ViewServer(viewer, port=0)
    server.start()
    try:
        status, page, _ = get(f"{server.url}/")
        assert status == 200 and "ALARM since step 7: step 7" in html.unescape(page)
        status, page, _ = get(f"{server.url}/run?run={urllib.parse.quote(key)}")
        rows = re.findall(r"<tr><td class=\"num\">(\d+)</td>", page)
        assert status == 200 and rows == [str(n) for n in range(7, 0, -1)]
        assert "vanilla · entity since step 4" in html.unescape(page)
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow
def test_a_step_with_failed_calls_is_not_counted_and_resumes(tmp_path):
    """Calls that fail leave the step out of watch.jsonl (exit 1, said); the same command
    asks them again and the step is recorded once, from the same draws."""
    out = tmp_path / "w"
    args = ["sample", "--judge", "openai/judge", "--output", str(out), "--canary", "1",
            "--retries", "0"]
    with ChatServer(script=judge_missing(None), fault_rate=0.3, faults=("500",)) as chat:
        code, output = watch(args, None, chat)
        assert code == 1 and "failed" in output
        assert not (out / "watch.jsonl").exists()
        chat.fault_rate = 0.0
        code, output = watch(args, None, chat)
    assert code == 0, output
    (step,) = history(out)
    assert step["step"] == 1 and step["calls"] == 2 * 23


def test_bad_input_is_one_message(tmp_path):
    out = tmp_path / "w"
    base = ["--judge", "openai/judge", "--output", str(out), "--canary", "1"]
    chat = ChatServer(script=judge_missing(None)).__enter__()
    assert watch(["sample", *base], None, chat)[0] == 0
    (tmp_path / "none.jsonl").write_text("")
    cases = [
        (["sample", "--judge", "openai/other", "--output", str(out), "--canary", "1"],
         "another"),
        ([str(tmp_path / "none.jsonl"), *base[:2], "--output", str(tmp_path / "x")],
         "empty"),
        (["sample", *base, "--every", "soon"], "--every"),
        (["sample", *base, "--alpha", "1"], "--alpha"),
    ]
    try:
        for args, message in cases:
            code, output = watch(args, None, chat)
            assert code == 2, (args, output)
            assert message in output and "Traceback" not in output
        with (out / "watch.jsonl").open("a") as damaged:
            damaged.write("{not json}\n")
        code, output = watch(["sample", *base], None, chat)
        assert code == 2 and "watch.jsonl, line 2" in " ".join(output.split())
    finally:
        chat.__exit__(None, None, None)
