"""Issue 41, item 1: instructions that are conversations. Each published layout (a
messages list, preference pairs of whole conversations, MT-Bench's question.jsonl, its
human judgments) is read from small files written here; perturbations edit the final
assistant turn only; every strategy judges it in its context; reports split by turn."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from openai_server import ChatServer

from fbi import load_dataset, write_dataset
from fbi.cli import main
from fbi.conversations import CONVERSATION_NOTE
from fbi.datasets import load_gold_items


def turns(*texts):
    """user, assistant, user, assistant, ... messages."""
    return [{"role": ("user", "assistant")[n % 2], "content": t} for n, t in enumerate(texts)]


MESSAGES_ROWS = [
    {"id": "c1", "category": "entity",
     "messages": turns("Who wrote Hamlet?", "William Shakespeare.",
                       "When was he born?", "Shakespeare was born in 1564 in Stratford."),
     "perturbed_answer": "Shakespeare was born in 1564 in Canterbury."},
    {"id": "c2", "category": "number-errors",
     "messages": [{"role": "system", "content": "Be brief."},
                  *turns("What is 12 squared?", "144.", "And 13 squared?", "169.")],
     "perturbed_answer": "196."},
    {"id": "s1", "category": "entity",
     "messages": turns("What is the capital of France?", "Paris is the capital."),
     "perturbed_answer": "Lyon is the capital."},
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_the_messages_layout_reads_the_final_turn_in_its_context(tmp_path):
    loaded = {i.id: i for i in load_dataset(str(write_jsonl(tmp_path / "m.jsonl",
                                                            MESSAGES_ROWS))).instances}
    first = loaded["c1"]
    assert first.context == (("user", "Who wrote Hamlet?"), ("assistant", "William Shakespeare."))
    assert (first.instruction, first.gold_answer, first.turn) == (
        "When was he born?", "Shakespeare was born in 1564 in Stratford.", 2)
    assert loaded["c2"].context[0] == ("system", "Be brief.") and loaded["c2"].turn == 2
    assert loaded["s1"].context == () and loaded["s1"].turn == 1
    assert loaded["s1"].question == "What is the capital of France?"  # as before
    assert loaded["c1"].question.startswith(CONVERSATION_NOTE)
    assert "### User:\nWho wrote Hamlet?\n\n### Assistant:\nWilliam Shakespeare.\n\n" \
           "### User:\nWhen was he born?" in loaded["c1"].question


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_a_written_conversation_reads_back_the_same(tmp_path, suffix):
    instances = list(load_dataset(str(write_jsonl(tmp_path / "m.jsonl",
                                                  MESSAGES_ROWS))).instances)
    path = write_dataset(instances, tmp_path / f"out{suffix}")
    again = list(load_dataset(str(path)).instances)
    assert [(i.id, i.context, i.instruction, i.gold_answer) for i in again] == \
        [(i.id, i.context, i.instruction, i.gold_answer) for i in instances]


def test_preference_pairs_of_whole_conversations(tmp_path):
    """HH-RLHF's and UltraFeedback-binarized's layout: chosen and rejected conversations
    sharing every turn but the last (UltraFeedback's prompt, prompt_id, messages and
    scores beside them)."""
    history = turns("Name a prime.", "7.", "Another one?")
    row = {"prompt_id": "u1", "prompt": "Name a prime.",
           "chosen": [*history, {"role": "assistant", "content": "11."}],
           "rejected": [*history, {"role": "assistant", "content": "9."}],
           "messages": [], "score_chosen": 8.0, "score_rejected": 2.0}
    (pair,) = load_dataset(str(write_jsonl(tmp_path / "uf.jsonl", [row]))).instances
    assert (pair.id, pair.instruction, pair.gold_answer, pair.perturbed_answer, pair.turn,
            pair.category) == ("u1", "Another one?", "11.", "9.", 2, "preference/all")
    assert pair.context == (("user", "Name a prime."), ("assistant", "7."))


@pytest.mark.parametrize(("row", "said"), [
    ({"messages": turns("Q", "A", "Q2")}, "must end with a user turn and the assistant's"),
    ({"messages": [{"role": "user", "content": "Q"}, {"role": "user", "content": "Q2"},
                   {"role": "assistant", "content": "A"}]}, "'messages' ends with a user turn"),
    ({"messages": [{"role": "assistant", "content": "hi"}, *turns("Q", "A")]},
     "turn 1 is assistant, where a user turn belongs"),
    ({"messages": [{"role": "robot", "content": "Q"}, {"role": "assistant", "content": "A"}]},
     "role 'robot'"),
    ({"messages": turns("Q", "")}, "content must be non-empty text"),
    ({"messages": "not json"}, "not a JSON list of messages"),
    ({"messages": turns("Q", "A"), "instruction": "Q"}, "both 'messages' and 'instruction'"),
    ({"chosen": [*turns("Q", "A", "Q2"), {"role": "assistant", "content": "x"}],
      "rejected": [*turns("Q", "B", "Q2"), {"role": "assistant", "content": "y"}]},
     "differ at turn 2, before their last"),
])
def test_bad_conversations_name_file_and_row(tmp_path, row, said):
    good = MESSAGES_ROWS[2]
    bad = {"category": "entity", "perturbed_answer": "x", **row}
    if "chosen" in row:
        good, bad = {"prompt": "p", "chosen": "a", "rejected": "b"}, row
    path = write_jsonl(tmp_path / "bad.jsonl", [good, bad])
    result = CliRunner().invoke(main, ["evaluate", "--judge", "openai/x", "--api-base",
                                       "http://127.0.0.1:9/v1", "--dataset", str(path),
                                       "--output", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    flat = " ".join(result.output.split())
    assert f"{path}, line 2" in flat and said in flat and "Traceback" not in result.output


MT_BENCH = [
    {"question_id": 111, "category": "math",
     "turns": ["The vertices of a triangle are at (0, 0), (-1, 1) and (3, 3). What is its "
               "area?", "What's the area of the circle circumscribing the triangle?"],
     "reference": ["The area is 3.", "The circumradius is sqrt(5), so the area is 5pi."]},
    {"question_id": 81, "category": "writing",
     "turns": ["Compose a travel blog post about Hawaii.", "Rewrite it, every sentence "
               "starting with A."]},
]


def test_mt_bench_questions_are_gold_items_per_turn(tmp_path):
    path = write_jsonl(tmp_path / "question.jsonl", MT_BENCH)
    with pytest.warns(Warning, match="1 MT-Bench question"):
        items, rows = load_gold_items(str(path))
    assert rows == 2 and [i.id for i in items] == ["mt-bench-111-t1", "mt-bench-111-t2"]
    first, second = items
    assert first.context == () and first.ability == "reasoning"
    assert second.context == (("user", MT_BENCH[0]["turns"][0]),
                              ("assistant", MT_BENCH[0]["reference"][0]))
    assert second.gold_answer == MT_BENCH[0]["reference"][1]
    # as a dataset to judge it holds nothing to judge: one message, exit 2
    result = CliRunner().invoke(main, ["evaluate", "--judge", "openai/x", "--api-base",
                                       "http://127.0.0.1:9/v1", "--dataset", str(path),
                                       "--output", str(tmp_path / "out")])
    assert result.exit_code == 2 and "MT-Bench question" in result.output


def test_rules_edit_the_final_turn_and_keep_the_rest(tmp_path):
    path = write_jsonl(tmp_path / "question.jsonl", MT_BENCH[:1])
    queue = tmp_path / "queue.jsonl"
    result = CliRunner().invoke(main, ["perturb", "--input", str(path), "--output",
                                       str(queue), "--categories", "final-errors",
                                       "--engine", "rules"],
                                env={"FBI_CACHE": str(tmp_path / "c.sqlite")})
    assert result.exit_code == 0, result.output
    made = list(load_dataset(str(queue)).instances)
    assert made and {i.turn for i in made} <= {1, 2}
    for instance in made:
        assert instance.gold_answer != instance.perturbed_answer
        expected = () if instance.turn == 1 else (
            ("user", MT_BENCH[0]["turns"][0]), ("assistant", MT_BENCH[0]["reference"][0]))
        assert instance.context == expected


def conversation_judge(request: dict) -> str:
    """Detects the error only in single-turn prompts: a judge blind in conversations."""
    prompt = "\n".join(m["content"] for m in request["messages"])
    conversation = CONVERSATION_NOTE in prompt
    if '"verdict"' in prompt:
        gold_first = "Stratford" in prompt.split("</question>")[-1].split("Canterbury")[0] \
            or "144" in prompt.split("</question>")[-1].split("196")[0] or \
            "Paris" in prompt.split("</question>")[-1].split("Lyon")[0]
        verdict = "tie" if conversation else ("A" if gold_first else "B")
        return json.dumps({"explanation": ".", "verdict": verdict})
    if "an integer from" not in prompt:
        return "OK"
    answer = prompt.split("<answer>")[-1]
    flawed = any(word in answer for word in ("Canterbury", "196", "Lyon"))
    return json.dumps({"explanation": ".", "score": 5 if conversation or not flawed else 2})


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    folder = tmp_path_factory.mktemp("conv")
    path = write_jsonl(folder / "m.jsonl", MESSAGES_ROWS)
    env = {"OPENAI_API_KEY": "sk-test", "FBI_CACHE": str(folder / "c.sqlite")}
    with ChatServer(conversation_judge) as server:
        result = CliRunner().invoke(main, [
            "evaluate", "--judge", "openai/j", "--api-base", server.url, "--dataset",
            str(path), "--strategy", "vanilla", "--strategy", "pairwise", "--strategy",
            "reference", "--output", str(folder / "run")], env=env, terminal_width=120)
        assert result.exit_code == 0, result.output
        prompts = ["\n".join(m["content"] for m in r["messages"]) for r in server.requests]
    report = CliRunner().invoke(main, ["report", str(folder / "run"), "--output",
                                       str(folder / "r")], terminal_width=120)
    assert report.exit_code == 0, report.output
    return folder, prompts, report.output


def test_every_strategy_shows_the_conversation_and_judges_the_final_turn(judged):
    _, prompts, _ = judged
    with_context = [p for p in prompts if "When was he born?" in p]
    assert len(with_context) == 2 + 2 + 1  # vanilla ×2, pairwise ×2, reference ×1
    for prompt in with_context:
        assert CONVERSATION_NOTE in prompt and "### Assistant:\nWilliam Shakespeare." in prompt
        question = prompt.index("### User:\nWhen was he born?")
        assert "Stratford" not in prompt[:question] and "Canterbury" not in prompt[:question]
    single_turn = [p for p in prompts if "capital of France" in p]
    assert single_turn and not any(CONVERSATION_NOTE in p for p in single_turn)


def test_reports_split_by_turn(judged):
    """The planted judge misses every error in a conversation (turn 2) and catches every
    single-turn one: undetected 100% at turn 2, 0% at turn 1, for Vanilla and Pairwise."""
    folder, _, terminal = judged
    summary = json.loads((folder / "r" / "summary.json").read_text())
    by_turn = {(r["strategy"], r["group"]): (r["n"], r["undetected"], r["rate"])
               for r in summary["rates"] if r["level"] == "turn"}
    assert by_turn[("vanilla", "turn 1")] == (1, 0, 0.0)
    assert by_turn[("vanilla", "turn 2")] == (2, 2, 1.0)
    assert by_turn[("pairwise", "turn 1")] == (1, 0, 0.0)
    assert by_turn[("pairwise", "turn 2")] == (2, 2, 1.0)
    markdown = (folder / "r" / "report.md").read_text()
    html = (folder / "r" / "report.html").read_text()
    for text in (markdown, html, terminal):
        assert "By turn" in text


def test_mt_bench_human_judgments_are_read_by_human(tmp_path):
    """MT-Bench's layout names a pair by question and models: the instance whose
    original id is the question, gold answer model_a's, perturbed model_b's, at that
    turn; the other way round, the verdict turns round."""
    pairs = [{"id": "q7", "prompt": "Who wrote Hamlet?",
              "chosen": [*turns("Who wrote Hamlet?", "Shakespeare.")],
              "rejected": [*turns("Who wrote Hamlet?", "Marlowe.")],
              "chosen_model": "gpt-4", "rejected_model": "llama-13b"}]
    data = write_jsonl(tmp_path / "pairs.jsonl", pairs)
    with ChatServer(conversation_judge) as server:
        assert CliRunner().invoke(main, [
            "evaluate", "--judge", "openai/j", "--api-base", server.url, "--dataset",
            str(data), "--strategy", "pairwise", "--output", str(tmp_path / "run")],
            env={"OPENAI_API_KEY": "x", "FBI_CACHE": str(tmp_path / "c.sqlite")}
        ).exit_code == 0
    human = write_jsonl(tmp_path / "human.jsonl", [
        {"question_id": "q7", "model_a": "gpt-4", "model_b": "llama-13b",
         "winner": "model_a", "judge": "expert_1", "turn": 1},
        {"question_id": "q7", "model_a": "llama-13b", "model_b": "gpt-4",
         "winner": "model_b", "judge": "expert_2", "turn": 1},
        {"question_id": "q7", "model_a": "gpt-4", "model_b": "llama-13b",
         "winner": "tie", "judge": "expert_3", "turn": 2},  # no such instance
        # the paper's authors are not people to agree with (FastChat counts expert_*)
        {"question_id": "q7", "model_a": "gpt-4", "model_b": "llama-13b",
         "winner": "model_b", "judge": "author_0", "turn": 1},
    ])
    report = CliRunner().invoke(main, ["report", str(tmp_path / "run"), "--human",
                                       str(human), "--output", str(tmp_path / "r")],
                                terminal_width=120)
    assert report.exit_code == 0, report.output
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    (overall,) = [r for r in summary["human_agreement"]["humans"] if r["level"] == "overall"]
    # the two experts both said the gold (gpt-4's) answer is better: they agree
    assert (overall["n_with_ties"], overall["agreement_with_ties"]) == (1, 1.0)
    assert any("1 MT-Bench row(s) name pairs that no run reported holds" in p
               for p in summary["problems"])
    assert any("1 MT-Bench row(s) by the paper's authors (judge author_*) are left out" in p
               for p in summary["problems"])
    # asked, the authors count as people: the author said the other answer, so of the
    # three pairs of votes on the instance one agrees
    report = CliRunner().invoke(main, ["report", str(tmp_path / "run"), "--human",
                                       str(human), "--human-authors", "--output",
                                       str(tmp_path / "r2")], terminal_width=120)
    assert report.exit_code == 0, report.output
    summary = json.loads((tmp_path / "r2" / "summary.json").read_text())
    (overall,) = [r for r in summary["human_agreement"]["humans"] if r["level"] == "overall"]
    assert overall["agreement_with_ties"] == pytest.approx(1 / 3)
    assert not any("paper's authors" in p for p in summary["problems"])


def test_hunt_edits_and_manipulations_keep_the_conversation(tmp_path):
    """fbi hunt's operators (an error rule, then a manipulation) and the manipulation of
    a perturbed instance edit the final answer and keep every earlier turn."""
    from fbi.hunt import Operator
    from fbi.perturb import manipulate

    path = write_jsonl(tmp_path / "question.jsonl", MT_BENCH[:1])
    items, _ = load_gold_items(str(path))
    second = next(i for i in items if i.context)
    edit = Operator.parse("final-errors").apply(second, seed=3)
    assert edit.instance.context == second.context
    assert edit.instance.gold_answer == second.gold_answer != edit.instance.perturbed_answer
    with_note = Operator.parse("final-errors+manipulation/padding").apply(second, seed=3)
    assert with_note.instance.context == second.context
    manipulated = manipulate(edit.instance, "authority-claim", seed=0)
    assert manipulated.context == second.context and manipulated.turn == 2


@pytest.mark.parametrize(("row", "said"), [
    ({"turns": "one question"}, "'turns' must be a list of questions"),
    ({"reference": ["only one"]}, "must list one answer (text) for each of the 2 turns"),
    ({"category": "poetry"}, "MT-Bench category 'poetry'"),
    # a repeated id would make the second question's items the first's (issue 50)
    ({"question_id": 111, "turns": ["Another question?", "And another?"]},
     "question_id 111 again (first at question.jsonl line 1)"),
])
def test_bad_mt_bench_questions_name_file_and_line(tmp_path, row, said):
    path = write_jsonl(tmp_path / "question.jsonl", [MT_BENCH[0], {**MT_BENCH[0],
                                                                   "question_id": 112, **row}])
    result = CliRunner().invoke(main, ["perturb", "--input", str(path), "--output",
                                       str(tmp_path / "q.jsonl"), "--engine", "rules"],
                                env={"FBI_CACHE": str(tmp_path / "c.sqlite")})
    assert result.exit_code == 2, result.output
    flat = " ".join(result.output.split())
    assert f"{path}, line 2" in flat and said in flat and "Traceback" not in result.output


def test_a_bad_mt_bench_judgment_is_named_with_its_line(tmp_path):
    data = write_jsonl(tmp_path / "m.jsonl", MESSAGES_ROWS)
    with ChatServer(conversation_judge) as server:
        assert CliRunner().invoke(main, [
            "evaluate", "--judge", "openai/j", "--api-base", server.url, "--dataset",
            str(data), "--output", str(tmp_path / "run")],
            env={"OPENAI_API_KEY": "x", "FBI_CACHE": str(tmp_path / "c.sqlite")}).exit_code == 0
    human = write_jsonl(tmp_path / "human.jsonl", [
        {"question_id": "q7", "model_a": "a", "model_b": "b", "winner": "model_a",
         "judge": "e1", "turn": 1},
        {"question_id": "q7", "model_a": "a", "model_b": "b", "winner": "tiebreaker",
         "judge": "e2", "turn": 1}])
    report = CliRunner().invoke(main, ["report", str(tmp_path / "run"), "--human",
                                       str(human), "--output", str(tmp_path / "r")])
    assert report.exit_code == 2, report.output
    flat = " ".join(report.output.split())
    assert "line 2" in flat and "winner 'tiebreaker'" in flat
