"""Issue 41, item 3: reward models as judges. A loopback server speaking vLLM's Pooling
API (POST /pooling with the conversation, the reward in data[0].data) and a tiny
Hugging Face sequence classifier built here from a config (no download) score answers;
every single-answer and preference table reads their scalars; calls are cached and
resumed like chat calls. Expected values are worked by hand from the planted rewards, or
computed by transformers itself."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from click.testing import CliRunner

from fbi.cli import main

#: The reward each answer gets (RewardBench layout: chosen, then rejected).
PAIRS = [  # (prompt, chosen, rejected, chosen's reward, rejected's reward)
    ("What is 2+2?", "4", "5", 2.5, -1.0),      # ranked right
    ("Capital of Italy?", "Rome", "Milan", 0.5, 0.5),  # a tie: an error
    ("Largest planet?", "Jupiter", "Mars", -0.25, 1.75),  # ranked wrong
    ("Boiling point of water?", "100 C", "50 C", 3.0, 2.0),  # right
]
REWARDS = {answer: reward for _, good, bad, rg, rb in PAIRS
           for answer, reward in ((good, rg), (bad, rb))}


class PoolingServer:
    """vLLM's Pooling API on 127.0.0.1: the reward of the conversation's last turn."""

    def __init__(self, shape=lambda reward: [reward], reply=None):
        self.requests: list[dict] = []
        self.paths: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.paths.append(self.path)
                server.requests.append(body)
                last = body["messages"][-1]["content"]
                data = reply(last) if reply else shape(REWARDS.get(last, 0.0))
                answer = json.dumps({"id": "pool-1", "object": "list", "created": 0,
                                     "model": body["model"],
                                     "data": [{"index": 0, "object": "pooling",
                                               "data": data}],
                                     "usage": {"prompt_tokens": 7, "total_tokens": 7}})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer.encode())))
                self.end_headers()
                self.wfile.write(answer.encode())

        class Server(ThreadingHTTPServer):
            request_queue_size = 128
            daemon_threads = True

        self._httpd = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_port}/v1"

    def __enter__(self) -> PoolingServer:
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def rewardbench(path):
    path.write_text("".join(json.dumps({"id": f"p{n}", "prompt": q, "chosen": good,
                                        "rejected": bad, "subset": "demo"}) + "\n"
                            for n, (q, good, bad, _, _) in enumerate(PAIRS)))
    return path


def evaluate(tmp_path, judge, api_base, data, name, *extra):
    args = ["evaluate", "--judge", judge, "--dataset", str(data), "--output",
            str(tmp_path / name), *extra]
    if api_base:
        args[3:3] = ["--api-base", api_base]
    return CliRunner().invoke(main, args, env={"FBI_CACHE": str(tmp_path / "c.sqlite")},
                              terminal_width=120)


@pytest.mark.slow
def test_a_reward_server_judges_preference_pairs(tmp_path):
    data = rewardbench(tmp_path / "rb.jsonl")
    with PoolingServer() as server:
        result = evaluate(tmp_path, "reward/rm-a", server.url, data, "a")
        assert result.exit_code == 0, result.output
        asked = len(server.requests)
        again = evaluate(tmp_path, "reward/rm-a", server.url, data, "a-again")
        assert again.exit_code == 0, again.output
        assert len(server.requests) == asked  # every reward from the cache: no call
    assert set(server.paths) == {"/pooling"}  # beside /v1, vLLM's Pooling API
    judged = [json.loads(line) for line in (tmp_path / "a" / "judgments.jsonl").open()]
    assert {j["strategy"] for j in judged} == {"reward"}
    assert {(j["role"], j["score"]) for j in judged if j["instance_id"] == "p2"} == {
        ("gold", -0.25), ("perturbed", 1.75)}
    first = next(r for r in server.requests if r["messages"][-1]["content"] == "4")
    assert first == {"model": "rm-a", "messages": [
        {"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "4"}]}
    report = CliRunner().invoke(main, ["report", str(tmp_path / "a"), "--output",
                                       str(tmp_path / "r")], terminal_width=120)
    assert report.exit_code == 0, report.output
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    (overall,) = [r for r in summary["rates"] if r["level"] == "overall"]
    # right on p0 and p3; a tie (p1) and a wrong ranking (p2) are errors: 2 of 4
    assert (overall["detected"], overall["undetected"], overall["rate"]) == (2, 2, 0.5)
    (row,) = summary["leaderboard"]
    assert (row["judge"], row["strategy"], row["rate"]) == ("reward/rm-a", "reward", 0.5)
    shown = CliRunner().invoke(main, ["show", str(tmp_path / "a"), "p0|reward|gold"],
                               terminal_width=120)
    assert shown.exit_code == 0 and "prompt hash matches" in shown.output, shown.output


def test_a_reward_model_judges_pairwise_by_the_higher_reward(tmp_path):
    """reward_pairwise: one call gets both answers' rewards (two Pooling API requests,
    one conversation each) and its verdict is the slot with the higher reward, in both
    slot orders. Worked from PAIRS: p0 and p3 prefer gold, p2 the perturbed answer, p1
    is a tie; a tie and a preference for the perturbed answer are misses: 2 of 4."""
    data = rewardbench(tmp_path / "rb.jsonl")
    with PoolingServer() as server:
        result = evaluate(tmp_path, "reward/rm", server.url, data, "p",
                          "--strategy", "reward_pairwise")
        assert result.exit_code == 0, result.output
    judged = [json.loads(line) for line in (tmp_path / "p" / "judgments.jsonl").open()]
    assert len(judged) == 2 * len(PAIRS) and len(server.requests) == 2 * len(judged) + 1
    verdicts = {(j["instance_id"], j["role"]): (j["slot_verdict"], j["verdict"])
                for j in judged}
    assert verdicts == {
        ("p0", "gold-first"): ("A", "gold"), ("p0", "perturbed-first"): ("B", "gold"),
        ("p1", "gold-first"): ("tie", "tie"), ("p1", "perturbed-first"): ("tie", "tie"),
        ("p2", "gold-first"): ("B", "perturbed"), ("p2", "perturbed-first"): ("A", "perturbed"),
        ("p3", "gold-first"): ("A", "gold"), ("p3", "perturbed-first"): ("B", "gold")}
    first = next(j for j in judged if (j["instance_id"], j["role"]) == ("p2", "perturbed-first"))
    assert json.loads(first["raw_output"]) == [1.75, -0.25]  # slot A is the perturbed answer
    asked = [r["messages"] for r in server.requests if r["messages"][0]["content"] ==
             "Largest planet?"]
    assert sorted(m[-1]["content"] for m in asked) == ["Jupiter", "Jupiter", "Mars", "Mars"]
    assert all(len(m) == 2 for m in asked)  # each answer the last turn of its own conversation
    report = CliRunner().invoke(main, ["report", str(tmp_path / "p"), "--output",
                                       str(tmp_path / "r")], terminal_width=120)
    assert report.exit_code == 0, report.output
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    (overall,) = [r for r in summary["rates"] if r["level"] == "overall"]
    assert (overall["strategy"], overall["undetected"], overall["rate"]) == (
        "reward_pairwise", 2, 0.5)


def test_a_pairwise_reward_reply_that_is_no_pair_is_unreadable():
    from fbi.judge import pairwise_reward_parser
    from fbi.providers import ModelResponse

    parse = pairwise_reward_parser("gold-first")
    for text in ("1.5", "[1, 2, 3]", "[1, NaN]", '["a", 1]', "[true, 0]"):
        assert parse([ModelResponse(text=text)]).status == "unparseable", text
    assert parse([ModelResponse(text="[0.25, 0.5]")]).fields["verdict"] == "perturbed"


def test_a_conversation_is_sent_whole_with_the_answer_last(tmp_path):
    data = tmp_path / "chat.jsonl"
    data.write_text(json.dumps({"id": "c", "category": "entity", "messages": [
        {"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "4"},
        {"role": "user", "content": "Capital of Italy?"},
        {"role": "assistant", "content": "Rome"}], "perturbed_answer": "Milan"}) + "\n")
    with PoolingServer() as server:
        assert evaluate(tmp_path, "reward/rm", server.url, data, "c").exit_code == 0
    (sent,) = [r["messages"] for r in server.requests if r["messages"][-1]["content"] == "Milan"]
    assert [m["content"] for m in sent] == ["What is 2+2?", "4", "Capital of Italy?", "Milan"]


@pytest.mark.slow
def test_two_reward_models_are_compared_and_juried(tmp_path):
    data = rewardbench(tmp_path / "rb.jsonl")
    with PoolingServer() as server:
        assert evaluate(tmp_path, "reward/rm-a", server.url, data, "a").exit_code == 0
        with PoolingServer(lambda reward: [[-reward]]) as flipped:  # ranks every pair wrong
            assert evaluate(tmp_path, "reward/rm-b", flipped.url, data, "b").exit_code == 0
    report = CliRunner().invoke(main, ["report", str(tmp_path / "a"), str(tmp_path / "b"),
                                       "--output", str(tmp_path / "r")], terminal_width=120)
    assert report.exit_code == 0, report.output
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    rates = {r["judge"]: r["rate"] for r in summary["rates"] if r["level"] == "overall"}
    # rm-b negates every reward: p0 and p3 wrong, p2 right, the tie still a tie
    assert rates == {"reward/rm-a": 0.5, "reward/rm-b": 0.75}
    (test,) = [c for c in summary["comparisons"] if c["level"] == "overall"]
    assert (test["missed_by_a_only"], test["missed_by_b_only"]) == (1, 2)
    jury = CliRunner().invoke(main, ["report", str(tmp_path / "a"), str(tmp_path / "b"),
                                     "--jury", "mean", "--output", str(tmp_path / "j")],
                              terminal_width=120)
    assert jury.exit_code == 0, jury.output


def test_a_reply_of_several_values_is_refused_not_read(tmp_path):
    data = rewardbench(tmp_path / "rb.jsonl")
    with PoolingServer(lambda reward: [reward, 0.0]) as server:
        result = evaluate(tmp_path, "reward/rm", server.url, data, "bad", "--no-probe",
                          "--retries", "0")
    assert result.exit_code == 1, result.output
    judged = [json.loads(line) for line in (tmp_path / "bad" / "judgments.jsonl").open()]
    assert judged and all(j["status"] == "error" and "2 values" in j["reason"]
                          for j in judged)


def test_strategies_and_judges_of_the_wrong_kind_are_refused(tmp_path):
    data = rewardbench(tmp_path / "rb.jsonl")
    chat_strategy = evaluate(tmp_path, "reward/rm", "http://127.0.0.1:9/v1", data, "x",
                             "--strategy", "vanilla")
    assert chat_strategy.exit_code == 2 and "is a reward model" in chat_strategy.output
    chat_judge = evaluate(tmp_path, "openai/chat", "http://127.0.0.1:9/v1", data, "y",
                          "--strategy", "reward")
    assert chat_judge.exit_code == 2 and "needs a reward model" in chat_judge.output
    pairwise = evaluate(tmp_path, "openai/chat", "http://127.0.0.1:9/v1", data, "v",
                        "--strategy", "reward_pairwise")
    assert pairwise.exit_code == 2 and "needs a reward model" in pairwise.output
    no_server = evaluate(tmp_path, "reward/rm", None, data, "z")
    assert no_server.exit_code == 2 and "--api-base" in no_server.output
    batch = evaluate(tmp_path, "reward/rm", "http://127.0.0.1:9/v1", data, "w", "--batch")
    assert batch.exit_code == 2 and "litellm knows no provider" in batch.output
    assert "Traceback" not in chat_strategy.output + chat_judge.output + no_server.output \
        + batch.output


@pytest.fixture(scope="module")
def tiny_classifier(tmp_path_factory):
    """A one-label GPT-2 sequence classifier with a word-level tokenizer and a chat
    template, made from a config and random weights (seeded): no download."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2ForSequenceClassification, PreTrainedTokenizerFast

    folder = tmp_path_factory.mktemp("tiny-rm")
    words = sorted({w for q, good, bad, _, _ in PAIRS for w in f"{q} {good} {bad}".split()}
                   | {"<user>", "<assistant>"})
    vocab = {w: n for n, w in enumerate(["[UNK]", "[PAD]", *words])}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]",
                                   pad_token="[PAD]")
    fast.chat_template = ("{% for m in messages %}<{{ m['role'] }}> {{ m['content'] }} "
                          "{% endfor %}")
    fast.save_pretrained(folder)
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(vocab), n_positions=64, n_embd=16, n_layer=1,
                        n_head=2, num_labels=1, pad_token_id=vocab["[PAD]"])
    GPT2ForSequenceClassification(config).save_pretrained(folder)
    return folder


@pytest.mark.slow
def test_a_local_sequence_classifier_scores_as_transformers_does(tmp_path, tiny_classifier):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    data = rewardbench(tmp_path / "rb.jsonl")
    result = evaluate(tmp_path, f"hf-reward/{tiny_classifier}", None, data, "local")
    assert result.exit_code == 0, result.output
    judged = [json.loads(line) for line in (tmp_path / "local" / "judgments.jsonl").open()]
    tokenizer = AutoTokenizer.from_pretrained(tiny_classifier)
    model = AutoModelForSequenceClassification.from_pretrained(tiny_classifier).eval()
    by_id = {f"p{n}": pair for n, pair in enumerate(PAIRS)}
    assert len(judged) == 2 * len(PAIRS)
    for judgment in judged:
        question, good, bad, _, _ = by_id[judgment["instance_id"]]
        answer = good if judgment["role"] == "gold" else bad
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": question}, {"role": "assistant", "content": answer}],
            tokenize=False)
        with torch.no_grad():
            expected = model(**tokenizer(text, return_tensors="pt",
                                         add_special_tokens=False)).logits[0, 0].item()
        assert judgment["status"] == "ok"
        assert judgment["score"] == pytest.approx(expected, rel=1e-6)


def test_a_folder_that_is_no_reward_model_is_one_message(tmp_path):
    data = rewardbench(tmp_path / "rb.jsonl")
    (tmp_path / "empty").mkdir()
    result = evaluate(tmp_path, f"hf-reward/{tmp_path / 'empty'}", None, data, "x")
    assert result.exit_code == 2, result.output
    assert "cannot load a sequence classifier" in result.output
    assert "Traceback" not in result.output


def test_a_local_sequence_classifier_rewards_both_answers_of_a_pair(tmp_path, tiny_classifier):
    """Asked pairwise, the local classifier's two rewards are transformers' logits of the
    two conversations, slot A's first."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    data = rewardbench(tmp_path / "rb.jsonl")
    result = evaluate(tmp_path, f"hf-reward/{tiny_classifier}", None, data, "pair",
                      "--strategy", "reward_pairwise")
    assert result.exit_code == 0, result.output
    judged = [json.loads(line) for line in (tmp_path / "pair" / "judgments.jsonl").open()]
    tokenizer = AutoTokenizer.from_pretrained(tiny_classifier)
    model = AutoModelForSequenceClassification.from_pretrained(tiny_classifier).eval()

    def reward(question: str, answer: str) -> float:
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": question}, {"role": "assistant", "content": answer}],
            tokenize=False)
        with torch.no_grad():
            return model(**tokenizer(text, return_tensors="pt",
                                     add_special_tokens=False)).logits[0, 0].item()

    by_id = {f"p{n}": pair for n, pair in enumerate(PAIRS)}
    for judgment in judged:
        question, good, bad, _, _ = by_id[judgment["instance_id"]]
        a, b = (good, bad) if judgment["role"] == "gold-first" else (bad, good)
        assert json.loads(judgment["raw_output"]) == pytest.approx(
            [reward(question, a), reward(question, b)], rel=1e-6)
        higher = "gold" if reward(question, good) > reward(question, bad) else "perturbed"
        assert judgment["verdict"] == higher


# ------------------------------------------------------------------ process reward models

def loopback_prm(tag: str, positive_first: bool, drop_one: bool = False):
    """A process reward model on 127.0.0.1: the assistant's turn split at ``tag``, each
    step "correct" with probability 0.9 unless it is a tool's error result (0.1); each
    step's entry the two labels' probabilities, the positive one first or last."""
    def reply(content: str) -> list:
        if tag not in content:
            return [1.0]  # the preflight probe
        steps = content.split(tag)
        assert steps[-1] == ""  # every step, the last one too, ends with the tag
        entries = []
        for step in steps[:-1]:
            p = 0.1 if "returned an error" in step.split("\n")[0] else 0.9
            entries.append([p, 1 - p] if positive_first else [1 - p, p])
        return entries[:-1] if drop_one else entries
    return reply


@pytest.mark.slow
@pytest.mark.parametrize(("tag", "extra"), [
    ("<extra_0>", ()),  # Qwen2.5-Math-PRM: [wrong, correct], its step token by default
    ("ки", ("--model-arg", "step_tag=ки", "--model-arg", "positive_label=0")),  # Math-Shepherd
])
def test_a_process_reward_model_names_the_first_step_it_doubts(tmp_path, tag, extra):
    """Issue 54, item 5: agent_prm sends the trajectory's steps, each ended by the step
    tag, and names the first step under ½. The loopback PRM doubts only error results,
    so an ignored error is named at its own step (exact, detected) and a misreported
    result is named nowhere (missed); the rates and placements are counted by hand from
    the candidates."""
    from fbi import write_dataset
    from fbi.perturb import trajectory_candidates
    from fbi.trajectories import sample_trajectories

    made, _ = trajectory_candidates(sample_trajectories()[:8], [
        "trajectory/ignored-error", "trajectory/misreported-result",
        "score-invariant/renamed-ids"])
    data = write_dataset(made, tmp_path / "agents.jsonl")
    with PoolingServer(reply=loopback_prm(tag, positive_first=bool(extra))) as server:
        result = evaluate(tmp_path, "reward/prm", server.url, data, "run", "--strategy",
                          "agent_prm", *extra)
        assert result.exit_code == 0, result.output
    # each request: the task, then the perturbed trajectory's steps, each ended by the tag
    sent = {(r["messages"][0]["content"], r["messages"][-1]["content"])
            for r in server.requests if len(r["messages"]) == 2}
    blocks = {i.id: i.perturbed_answer.split("\nStep ") for i in made}
    assert sent == {(i.question, tag.join([blocks[i.id][0], *(
        "Step " + b for b in blocks[i.id][1:])]) + tag) for i in made}
    report = CliRunner().invoke(main, ["report", str(tmp_path / "run"), "--output",
                                       str(tmp_path / "r")], terminal_width=120)
    assert report.exit_code == 0, report.output
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    count = {c: sum(i.category == c for i in made) for c in (
        "trajectory/ignored-error", "trajectory/misreported-result", "score-invariant")}
    rows = {r["category"]: r for r in summary["steps"]}
    assert rows["trajectory/ignored-error"]["exact"] == count["trajectory/ignored-error"]
    assert rows["trajectory/misreported-result"]["missed"] == \
        count["trajectory/misreported-result"]
    rates = {(r["level"], r["group"]): (r["rate"], r["n"]) for r in summary["rates"]}
    assert rates[("category", "trajectory/ignored-error")] == (
        0.0, count["trajectory/ignored-error"])
    assert rates[("category", "trajectory/misreported-result")] == (
        1.0, count["trajectory/misreported-result"])
    assert rates[("score-invariant", "SI")] == (1.0, count["score-invariant"])


def test_a_prm_reply_with_a_step_too_few_is_a_failed_call_said_so(tmp_path):
    from fbi import write_dataset
    from fbi.perturb import trajectory_candidates
    from fbi.trajectories import sample_trajectories

    made, _ = trajectory_candidates(sample_trajectories()[:1], ["trajectory/ignored-error"])
    data = write_dataset(made, tmp_path / "agents.jsonl")
    with PoolingServer(reply=loopback_prm("<extra_0>", False, drop_one=True)) as server:
        result = evaluate(tmp_path, "reward/prm", server.url, data, "run", "--strategy",
                          "agent_prm", "--retries", "0")
    assert result.exit_code == 1, result.output
    (judged,) = [json.loads(line) for line in (tmp_path / "run" / "judgments.jsonl").open()]
    steps = made[0].perturbed_answer.count("\nStep ") + 1
    assert judged["status"] == "error" and judged["score"] is None
    assert f"holds {steps - 1} entries for {steps} steps" in judged["reason"]


def test_a_local_classifier_cannot_score_steps(tmp_path):
    from fbi import write_dataset
    from fbi.perturb import trajectory_candidates
    from fbi.trajectories import sample_trajectories

    made, _ = trajectory_candidates(sample_trajectories()[:1], ["trajectory/ignored-error"])
    data = write_dataset(made, tmp_path / "agents.jsonl")
    result = evaluate(tmp_path, "hf-reward/some/model", None, data, "run", "--strategy",
                      "agent_prm")
    assert result.exit_code == 2 and "not one a step" in result.output, result.output


def test_an_outcome_reward_model_scores_whole_trajectories(tmp_path):
    """Issue 54, item 5: a reward model scores a rendered trajectory through `reward` as
    it scores an answer. The loopback model gives −1 to a trajectory holding an error
    result and +1 to any other, so an ignored error is caught (its reward below the
    gold trajectory's) and a misreported result missed (a tie): by hand, 0% and 100%."""
    from fbi import write_dataset
    from fbi.perturb import trajectory_candidates
    from fbi.trajectories import sample_trajectories

    made, _ = trajectory_candidates(sample_trajectories()[:8], [
        "trajectory/ignored-error", "trajectory/misreported-result"])
    data = write_dataset(made, tmp_path / "agents.jsonl")
    with PoolingServer(reply=lambda content: [-1.0 if "returned an error" in content
                                              else 1.0]) as server:
        result = evaluate(tmp_path, "reward/orm", server.url, data, "run")
        assert result.exit_code == 0, result.output
    report = CliRunner().invoke(main, ["report", str(tmp_path / "run"), "--output",
                                       str(tmp_path / "r")], terminal_width=120)
    assert report.exit_code == 0, report.output
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    rates = {r["group"]: r["rate"] for r in summary["rates"] if r["level"] == "category"}
    assert rates == {"trajectory/ignored-error": 0.0, "trajectory/misreported-result": 1.0}
