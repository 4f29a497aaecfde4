"""Loopback judges with blind spots planted by the test (issue 40): a judge that catches
every edit of a gold answer except those its blind spot names. Used by tests/test_hunt.py
and benchmarks/hunt_search.py.

The judge knows the gold answers (as the test does) and finds the one a prompt is about
by its question; it answers in the format the prompt asks for: the top score for the gold
answer and for an edit its blind spot names, the bottom score for every other edit;
pairwise, the gold answer's slot unless the blind spot names the edit.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable

from fbi.text import LIST_ITEM

BlindSpot = Callable[[str, str], bool]  # (gold, edited) → the judge misses the edit


def _section(prompt: str, name: str) -> str | None:
    found = re.search(rf"<{name}>\n(.*?)\n</{name}>", prompt, re.DOTALL)
    return found.group(1) if found else None


def _basis(gold: str, edited: str) -> str:
    """What a random miss is drawn from: the edit; for an answer replaced whole (a
    master key, a string standing alone: the same text for every item, which keeps
    neither the gold answer's start nor its end) the item too, so it is missed at random
    item by item like any other edit — drawn from the text alone, one such string in ten
    would be missed on every item, a blind spot nobody planted."""
    kept = len(edited) > 60 and (gold[:30] in edited or gold[-30:] in edited)
    return edited if kept else f"{gold}\x1f{edited}"


class PlantedJudge:
    """A chat-server script (tests/openai_server.py) for ``items``' gold answers."""

    def __init__(self, items: Iterable, blind_spot: BlindSpot, noise: int = 0):
        self.golds: dict[str, list[str]] = {}  # a question may have several gold answers
        for item in items:
            self.golds.setdefault(item.instruction, []).append(item.gold_answer)
        self.blind_spot = blind_spot
        self.noise = noise  # misses one edit in ``noise`` at random as well (0: none)
        self.judged = 0

    @staticmethod
    def gold_of(golds: list[str], edited: str) -> str:
        """The gold answer an edit was made from: of the question's, the closest."""
        if len(golds) == 1:
            return golds[0]
        return max(golds, key=lambda g: difflib.SequenceMatcher(None, g, edited).ratio())

    def misses(self, gold: str, edited: str) -> bool:
        if self.noise:
            digest = int(hashlib.sha256(_basis(gold, edited).encode()).hexdigest(), 16)
            if digest % self.noise == 0:
                return True
        return self.blind_spot(gold, edited)

    def __call__(self, request: dict) -> str:
        prompt = "\n".join(m.get("content") or "" for m in request["messages"])
        golds = self.golds.get(_section(prompt, "question") or "")
        if golds is None:
            return "OK"  # the preflight probe
        self.judged += 1
        if "<answer_a>" in prompt:
            a, b = _section(prompt, "answer_a") or "", _section(prompt, "answer_b") or ""
            gold_slot, edited = ("A", b) if a in golds else ("B", a)
            missed = self.misses(self.gold_of(golds, edited), edited)
            verdict = ({"A": "B", "B": "A"}[gold_slot]) if missed else gold_slot
            return json.dumps({"explanation": "Compared them.", "verdict": verdict})
        low, high = (int(x) for x in re.findall(r"an integer from (\d+) to (\d+)",
                                                  prompt)[-1])
        answer = _section(prompt, "answer") or ""
        caught = answer not in golds and not self.misses(self.gold_of(golds, answer),
                                                          answer)
        return json.dumps({"explanation": "Checked it.", "score": low if caught else high})


def planted_word_perturber(word: str):
    """A loopback LLM perturber: it puts ``word`` into the answer's first sentence, whatever
    the category asked (the perturb stage's prompt: the answer inside <answer> tags)."""

    def perturb(request: dict) -> str:
        prompt = "\n".join(m.get("content") or "" for m in request["messages"])
        answer = _section(prompt, "answer")
        if answer is None:
            return "OK"  # the preflight probe
        first_space = answer.find(" ")
        edited = answer[:first_space] + f" {word}" + answer[first_space:]
        return json.dumps({"rationale": f"added «{word}»", "perturbed_answer": edited})

    return perturb


def changed_span(gold: str, edited: str) -> tuple[int, int, str, str] | None:
    """The first changed stretch: (start in gold, end in gold, before, after), by difflib
    over the characters between the two texts' common start and end (the same stretch
    difflib finds over the whole texts, in a fraction of the time)."""
    start = 0
    limit = min(len(gold), len(edited))
    while start < limit and gold[start] == edited[start]:
        start += 1
    end = 0
    while end < limit - start and gold[-1 - end] == edited[-1 - end]:
        end += 1
    a, b = gold[start:len(gold) - end], edited[start:len(edited) - end]
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b,
                                                      autojunk=False).get_opcodes():
        if op != "equal":
            return start + i1, start + i2, a[i1:i2], b[j1:j2]
    return None


def line_at(text: str, position: int) -> str:
    start = text.rfind("\n", 0, position) + 1
    end = text.find("\n", position)
    return text[start:end if end != -1 else len(text)]


# ------------------------------------------------------------------ gold answers


def synthetic_gold(n: int = 160, seed: int = 0) -> list[dict]:
    """``n`` gold rows of four shapes (numbered steps with quantities and units under a
    heading, dated prose with a quotation, an aside in parentheses and a negation, worked
    arithmetic, bulleted advice in bold), every value drawn from ``seed``: material for
    every rule family and every place, in lists and in prose, at the start and the end
    of answers."""
    import random

    rng = random.Random(seed)
    dishes = ["bread", "a sponge cake", "pancakes", "a pie", "flatbread", "muffins",
              "a quiche", "scones", "a tart", "cookies"]
    towns = ["Aldmere", "Brackwater", "Corringham", "Dunlow", "Eastby", "Fenwick",
             "Greyhaven", "Holt", "Ivybridge", "Kelso"]
    topics = ["sleeping better", "learning a language", "saving money", "running a "
              "meeting", "writing an essay", "starting to run", "keeping plants alive",
              "studying for an exam", "moving house", "cooking for a crowd"]
    asides = ["(sifted twice)", "(about a cupful)", "(see the note below)", "(or less)",
              "(near the old river bridge)", "(a rare choice then)", "(by most accounts)",
              "(in round figures)", "(this matters most)", "(ask first)"]

    def aside() -> str:  # an aside in parentheses, at a place that varies, or none
        return " " + rng.choice(asides) if rng.random() < 0.5 else ""

    rows = []
    for i in range(n):
        shape = i % 4
        if shape == 0:
            dish = rng.choice(dishes)
            grams, eggs, minutes, degrees, rest = (rng.randrange(150, 500, 10),
                                                   rng.randrange(2, 6),
                                                   rng.randrange(15, 60, 5),
                                                   rng.randrange(160, 230, 10),
                                                   rng.randrange(5, 30, 5))
            heading = f"## Steps for {dish}\n" if rng.random() < 0.5 else \
                f"Here are the steps for {dish}:\n"
            rows.append({"instruction": f"List the steps, in order, to make {dish} "
                                        f"(recipe {i}).",
                         "gold_answer": heading +
                                        f"1. Mix **{grams} g** of flour{aside()} with "
                                        f"{eggs} eggs.\n"
                                        f"2. Rest the dough for {rest} minutes{aside()}.\n"
                                        f"3. Bake for {minutes} minutes at {degrees} °C"
                                        f"{aside()}.\n"
                                        f"4. Let it cool before serving{aside()}.\n"
                                        f"It serves {eggs + 2} people.",
                         "ability": "instruction-following"})
        elif shape == 1:
            town = rng.choice(towns)
            founded = rng.randrange(1700, 1900)
            moved, members = founded + rng.randrange(10, 60), rng.randrange(2, 90) * 100
            quote = f' by a group of local teachers, "the {town} Circle"' \
                if rng.random() < 0.6 else " by a group of local teachers"
            rows.append({"instruction": f"When was the {town} library founded, and what "
                                        f"happened to it next? (question {i})",
                         "gold_answer": f"The {town} library was founded in {founded}"
                                        f"{quote}{aside()}. In {moved} it moved to a larger "
                                        f"building{aside()}. By {moved + 30} it had "
                                        f"{members} members. It is not a lending library "
                                        f"any more{aside()}: today it is a museum of the "
                                        "town's history.",
                         "ability": "factual"})
        elif shape == 2:
            km, hours = rng.randrange(60, 600, 12), rng.randrange(2, 7)
            rows.append({"instruction": f"A train travels {km} km in {hours} hours. What "
                                        f"is its average speed? (problem {i})",
                         "gold_answer": f"Average speed is distance divided by time"
                                        f"{aside()}.\n"
                                        f"Distance = {km} km and time = {hours} hours.\n"
                                        f"Speed = {km} / {hours} = {km / hours:g} km/h.\n"
                                        f"Check: {km / hours:g} × {hours} = {km} km.\n"
                                        f"So the average speed is {km / hours:g} km/h.",
                         "ability": "reasoning"})
        else:
            topic = rng.choice(topics)
            rows.append({"instruction": f"Give some advice on {topic}. (request {i})",
                         "gold_answer": f"Some advice on {topic}:\n"
                                        f"- **Start** with a small, clear goal{aside()}.\n"
                                        "- Keep a regular routine every day.\n"
                                        f"- Ask someone you trust for feedback{aside()}.\n"
                                        "- Review what worked at the end of the week.\n"
                                        "Progress comes from steady habits rather than "
                                        f"from a single effort{aside()}, and you should "
                                        "not expect results at once.",
                         "ability": "long-form"})
        rows[-1]["id"] = f"g{i}"
    return rows


# ------------------------------------------------------------------ blind spots


def misses_nothing(gold: str, edited: str) -> bool:
    return False


def misses_changed_digits_in_lists(gold: str, edited: str) -> bool:
    """Edits that change only digits, inside a list item."""
    span = changed_span(gold, edited)
    if span is None or abs(len(edited) - len(gold)) > 3:
        return False
    start, _, before, after = span
    digits_only = all(c.isdigit() or c in ".," for c in before + after)
    return digits_only and bool(LIST_ITEM.match(line_at(gold, start)))


def misses_edits_in_the_last_third(gold: str, edited: str) -> bool:
    """Any edit whose first change lies in the answer's last third."""
    span = changed_span(gold, edited)
    return span is not None and 3 * span[0] >= 2 * len(gold)


def misses_long_additions(gold: str, edited: str) -> bool:
    """Any answer made half again as long as the gold (padding swayed it)."""
    return len(edited) >= 1.5 * len(gold)


UNITS = frozenset("km miles kilometres kilometers metres meters m ft feet cm mm kg lb "
                  "kilograms pounds grams ounces g mg litres liters gallons L mL hours "
                  "minutes hour minute seconds days weeks °C °F".split())


def misses_unit_swaps(gold: str, edited: str) -> bool:
    """Edits that put one unit in another's place (one word changed, unit for unit)."""
    a, b = gold.split(), edited.split()
    changes = [op for op in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
               if op[0] != "equal"]
    if len(changes) != 1 or changes[0][0] != "replace":
        return False
    _, i1, i2, j1, j2 = changes[0]
    before, after = a[i1:i2], b[j1:j2]
    return len(before) == len(after) == 1 and before[0].strip(".,;:)") in UNITS and \
        after[0].strip(".,;:)") in UNITS


def misses_small_changes_in_the_first_sentence(gold: str, edited: str) -> bool:
    """Edits of at most five characters in the answer's first sentence."""
    span = changed_span(gold, edited)
    if span is None or abs(len(edited) - len(gold)) > 5:
        return False
    start, _, before, after = span
    first_end = re.search(r"[.!?](\s|$)", gold)
    return max(len(before), len(after)) <= 5 and (first_end is None
                                                   or start < first_end.end())


# ------------------------------------------------------------------ several blind spots
# (issue 49) Each test below reads the edit its own way — difflib over characters or
# words, brackets counted by hand — never through fbi's predicates, so a hunt that names
# a spot has found what the judge does, not what fbi computes.


class SeveralSpots:
    """A blind spot made of several: the judge misses an edit when any spot names it,
    each with its own probability (a hash of the spot's name, the item and the edit, so
    the same edit is missed or caught every time it is asked, and an answer that is one
    text for every item — a master key — at the spot's rate)."""

    def __init__(self, spots: dict[str, tuple[BlindSpot, float]]):
        self.spots = spots

    def which(self, gold: str, edited: str) -> list[str]:
        return [name for name, (spot, _) in self.spots.items() if spot(gold, edited)]

    def __call__(self, gold: str, edited: str) -> bool:
        for name, (spot, rate) in self.spots.items():
            if spot(gold, edited):
                digest = int(hashlib.sha256(f"{name}\x1f{_basis(gold, edited)}".encode()
                                            ).hexdigest(), 16)
                if digest % 1000 < rate * 1000:
                    return True
        return False


def _word_changes(gold: str, edited: str) -> tuple[list[str], list[str]]:
    """Words removed and words added, by difflib over whitespace-split words."""
    a, b = gold.split(), edited.split()
    removed, added = [], []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b,
                                                      autojunk=False).get_opcodes():
        if op != "equal":
            removed += a[i1:i2]
            added += b[j1:j2]
    return removed, added


def misses_number_changes(gold: str, edited: str) -> bool:
    """Any edit that changes a number (a word with a digit removed or added)."""
    removed, added = _word_changes(gold, edited)
    digits = [w for w in removed if re.search(r"\d", w)], [w for w in added
                                                          if re.search(r"\d", w)]
    return digits[0] != digits[1]


def misses_inside_parentheses(gold: str, edited: str) -> bool:
    """Any edit whose first change lies between ( and ) of the gold answer."""
    span = changed_span(gold, edited)
    if span is None:
        return False
    start = span[0]
    paragraph_start = gold.rfind("\n\n", 0, start) + 1
    before = gold[paragraph_start:start]
    opened = before.rfind("(")
    return opened != -1 and ")" not in before[opened:] and ")" in gold[start:start + 400]


def misses_negation_changes(gold: str, edited: str) -> bool:
    """An edit that puts in or takes out a negation."""
    removed, added = _word_changes(gold, edited)

    def negations(words: list[str]) -> list[str]:
        return [w for w in (x.lower().strip(".,;:!?\"'()") for x in words)
                if w in ("not", "never", "no", "cannot") or w.endswith("n't")]
    return negations(removed) != negations(added)


_AUTHORITY = re.compile(r"\b(experts?|professor|verified|certified|confirmed)\b",
                        re.IGNORECASE)


def misses_authority_claims(gold: str, edited: str) -> bool:
    """An answer that now opens with a claim of expert approval."""
    return not gold.startswith(edited[:40]) and bool(_AUTHORITY.search(edited[:200])) \
        and not _AUTHORITY.search(gold[:200])


def misses_last_tenth(gold: str, edited: str) -> bool:
    """An edit whose first change lies in the last tenth of the gold answer."""
    span = changed_span(gold, edited)
    return span is not None and span[0] >= 0.9 * len(gold)


def misses_in_headings(gold: str, edited: str) -> bool:
    """An edit on a Markdown heading line."""
    span = changed_span(gold, edited)
    return span is not None and line_at(gold, span[0]).lstrip().startswith("#")


def misses_inside_quotes(gold: str, edited: str) -> bool:
    """An edit between double quotation marks."""
    span = changed_span(gold, edited)
    if span is None:
        return False
    line_start = gold.rfind("\n", 0, span[0]) + 1
    return gold[line_start:span[0]].count('"') % 2 == 1


def misses_in_bold(gold: str, edited: str) -> bool:
    """An edit between ** and **."""
    span = changed_span(gold, edited)
    if span is None:
        return False
    line_start = gold.rfind("\n", 0, span[0]) + 1
    return gold[line_start:span[0]].count("**") % 2 == 1


def misses_entity_changes(gold: str, edited: str) -> bool:
    """An edit that replaces or alters a name: a word-level replacement of at most five
    words whose capitalised words in mid-sentence differ."""
    a, b = gold.split(), edited.split()
    ops = [op for op in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
           if op[0] != "equal"]
    if len(ops) != 1 or ops[0][0] != "replace":
        return False
    _, i1, i2, j1, j2 = ops[0]
    if i2 - i1 > 5 or j2 - j1 > 5:
        return False

    def names(words: list[str], first: int) -> list[str]:
        return [w.strip(".,;:!?\"'()*") for k, w in enumerate(words[first:], first)
                if k and w[:1].isupper() and not words[k - 1].endswith((".", "!", "?", ":"))]
    return names(a[:i2], i1) != names(b[:j2], j1)


def misses_modal_changes(gold: str, edited: str) -> bool:
    """An edit that changes a modal verb (can, should, must, ...)."""
    removed, added = _word_changes(gold, edited)
    modal = {"can", "could", "may", "might", "must", "shall", "should", "will", "would"}
    return [w.lower() for w in removed if w.lower() in modal] != \
        [w.lower() for w in added if w.lower() in modal]


def misses_self_praise(gold: str, edited: str) -> bool:
    """An answer that now ends with praise of itself."""
    return not edited.startswith(gold[-40:]) and bool(re.search(
        r"(precise, complete|confident this is|every fact above)", edited[-250:],
        re.IGNORECASE)) and not re.search(r"(precise, complete|confident this is|"
                                          r"every fact above)", gold, re.IGNORECASE)


def misses_small_changes(gold: str, edited: str) -> bool:
    """Any edit of at most five characters, wherever it is."""
    span = changed_span(gold, edited)
    if span is None:
        return False
    _, _, before, after = span
    tail = len(gold) - span[1]
    return abs(len(edited) - len(gold)) <= 5 and max(len(before), len(after)) <= 5 and \
        gold[span[1]:] == edited[len(edited) - tail:]


#: Judges with several blind spots at once, one loud (missed 95% of the time, a third of
#: the edits or so) and the others quiet (missed 70% of the time, each 3–10% of the
#: edits), beside one edit in ten missed at random (issue 49): the hunt's benchmark and
#: tests plant these.
SEVERAL = {
    "numbers, parentheses, negation, authority": SeveralSpots({
        "numbers": (misses_number_changes, 0.95),
        "parentheses": (misses_inside_parentheses, 0.7),
        "negation": (misses_negation_changes, 0.7),
        "authority claims": (misses_authority_claims, 0.7)}),
    "last third, headings, quotes, entities, self-praise": SeveralSpots({
        "last third": (misses_edits_in_the_last_third, 0.95),
        "headings": (misses_in_headings, 0.7),
        "quotes": (misses_inside_quotes, 0.7),
        "entities": (misses_entity_changes, 0.7),
        "self-praise": (misses_self_praise, 0.7)}),
    "small changes, bold, modals, last tenth": SeveralSpots({
        "small changes": (misses_small_changes, 0.95),
        "bold": (misses_in_bold, 0.7),
        "modal verbs": (misses_modal_changes, 0.7),
        "last tenth": (misses_last_tenth, 0.7)}),
}


def planted_describer(word: str, predicates: tuple[str, ...] = ()):
    """A loopback describer (``fbi hunt --describer``): asked to describe, it proposes
    edits that mention ``word`` (in words, with an instruction) and, when ``predicates``
    are given, a second hypothesis said with them; asked to make an edit, it puts
    ``word`` into the answer's first sentence."""
    perturb = planted_word_perturber(word)

    def answer(request: dict) -> str:
        prompt = "\n".join(m.get("content") or "" for m in request["messages"])
        if "<missed>" in prompt:
            hypotheses = [{"description": f"edits that mention {word}", "predicates": [],
                           "edit_instruction": f"put the word {word} into the answer"}]
            if predicates:
                hypotheses.append({"description": "as the predicates say",
                                   "predicates": list(predicates), "edit_instruction": ""})
            return json.dumps({"hypotheses": hypotheses})
        return perturb(request)

    return answer


# ------------------------------------------------------------------ by hand


def main() -> None:
    """Serve a planted judge by hand, as the hunt guide does (docs/how-to/hunt.md):

    python tests/planted_judges.py gold gold.jsonl
    python tests/planted_judges.py serve --gold gold.jsonl --spots "last third,quotes"

    ``gold`` writes the synthetic gold answers; ``serve`` prints the judge's base URL and
    serves until stopped. ``--spots`` names the blind spots (of `SPOTS`), the first missed
    95% of the time and the rest 70%, with one edit in ten missed at random besides."""
    import argparse
    import sys
    import threading
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from openai_server import ChatServer

    from fbi.datasets import load_gold_items

    parser = argparse.ArgumentParser(description=main.__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    gold = commands.add_parser("gold", help="write the synthetic gold answers")
    gold.add_argument("path")
    serve = commands.add_parser("serve", help="serve a judge with planted blind spots")
    serve.add_argument("--gold", required=True)
    serve.add_argument("--spots", required=True,
                       help=f"comma-separated, of: {', '.join(SPOTS)}")
    serve.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    if args.command == "gold":
        Path(args.path).write_text("".join(json.dumps(row) + "\n"
                                           for row in synthetic_gold()), encoding="utf-8")
        return
    names = [n.strip() for n in args.spots.split(",")]
    unknown = [n for n in names if n not in SPOTS]
    if unknown:
        parser.error(f"unknown spots {unknown}: choose from {', '.join(SPOTS)}")
    spots = SeveralSpots({name: (SPOTS[name], 0.95 if i == 0 else 0.7)
                          for i, name in enumerate(names)})
    items, _ = load_gold_items(args.gold)
    with ChatServer(PlantedJudge(items, spots, noise=10), port=args.port) as server:
        print(server.url, flush=True)
        threading.Event().wait()


#: The blind spots a judge served by hand can have, by name.
SPOTS: dict[str, BlindSpot] = {
    name: spot for judge in SEVERAL.values() for name, (spot, _) in judge.spots.items()}



def step_judge(instances: Iterable, shift: dict[str, int | None]):
    """A loopback step-level judge of agents' trajectories (issue 54): names the first
    step at which an instance's perturbed trajectory differs from its gold one, moved by
    ``shift[category]`` steps (−1: one early, +1: one late; None: no step named, a
    miss); score-invariant rewrites get no step named. Used by tests/test_trajectories.py
    and benchmarks/agent_judges.py."""
    by_answer = {i.perturbed_answer: i for i in instances}

    def script(request: dict) -> str:
        prompt = request["messages"][-1]["content"]
        instance = by_answer.get(_section(prompt, "answer") or "")
        if instance is None:
            return "OK"  # the preflight probe
        gold, edited = _numbered(instance.gold_answer), _numbered(instance.perturbed_answer)
        # the number the first differing step shows (a window keeps the trajectory's)
        first = next((n for (_, a), (n, b) in zip(gold, edited, strict=False) if a != b),
                     None)
        if first is None:
            longer = edited if len(edited) > len(gold) else gold
            first = longer[min(len(gold), len(edited))][0] if len(longer) > \
                min(len(gold), len(edited)) else len(edited) + 1
        moved = shift.get(instance.category, 0)
        step = 0 if moved is None or instance.category == "score-invariant" else \
            max(1, first + moved)
        return json.dumps({"explanation": "Checked every step.", "score": step})
    return script


def _numbered(text: str) -> list[tuple[int, str]]:
    """A rendered trajectory's steps: each one's number and its text without it (the
    lines a window puts for steps left out dropped)."""
    steps = []
    for block in re.split(r"\n(?=Step \d+ · )", text):
        found = re.match(r"Step (\d+) · (.*)", block, re.DOTALL)
        if found:
            body = re.sub(r"\n\[… steps \d+–\d+ left out …\]$", "", found[2])
            steps.append((int(found[1]), body))
    return steps


def _changed_block(gold: str, edited: str) -> str | None:
    """The first step of an edited trajectory's rendering whose text (its number
    aside) differs from the gold one's; None when the edit removed the last steps."""
    def blocks(text: str) -> list[str]:
        return [re.sub(r"^(Step )?\d+ · ", "", b) for b in text.split("\nStep ")]
    before, after = blocks(gold), blocks(edited)
    for a, b in zip(before, after, strict=False):
        if a != b:
            return b
    return after[len(before)] if len(after) > len(before) else None


def _tools_in(block: str) -> set[str]:
    found = set(re.findall(r"^ {2}calls ([\w-]+)\(", block, re.MULTILINE))
    return found | set(re.findall(r"^tool ([\w-]+) returned", block))


def trajectory_spots(items: Iterable) -> dict[str, BlindSpot]:
    """Blind spots of a judge of agents (issue 54), by the step an edit changed: at a
    tool with side effects (as the trajectory's own tool definitions say), at a tool's
    error result, in the final answer (the last step, with no call), a call made again
    with the same arguments, and at a step of each tool (``tool:NAME``). Used by
    tests/test_hunt_agents.py and benchmarks/agent_judges.py."""
    effects = {item.gold_answer: {t.name for t in item.trajectory.tools if t.side_effects}
               for item in items}

    def at_side_effects(gold: str, edited: str) -> bool:
        block = _changed_block(gold, edited)
        return block is not None and bool(_tools_in(block) & effects[gold])

    def at_errors(gold: str, edited: str) -> bool:
        block = _changed_block(gold, edited)
        return block is not None and block.split("\n")[0].startswith("tool ") and \
            "returned an error" in block.split("\n")[0]

    def in_final_answer(gold: str, edited: str) -> bool:
        block = _changed_block(gold, edited)
        return block is not None and edited.endswith(block) and \
            block.startswith("assistant:") and "\n  calls " not in block

    def repeated_calls(gold: str, edited: str) -> bool:
        def calls(text: str) -> Counter:
            return Counter(re.findall(r"^ {2}calls (.*) \(call [^)]*\)$", text, re.MULTILINE))
        return any(n > max(1, calls(gold)[c]) for c, n in calls(edited).items())

    spots = {"side effects": at_side_effects, "tool errors": at_errors,
             "final answer": in_final_answer, "repeated calls": repeated_calls}
    for name in sorted(set().union(*({t.name for t in i.trajectory.tools} for i in items))):
        spots[f"tool:{name}"] = lambda gold, edited, n=name: (
            (block := _changed_block(gold, edited)) is not None and n in _tools_in(block))
    return spots


if __name__ == "__main__":
    main()
