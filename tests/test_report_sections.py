"""Issue 52: report sections as data. A section is declared once and drawn by the
terminal, report.md and report.html alike; a new table is one file
(docs/examples/unreadable_section.py) whose figures, worked from the judgments by hand,
appear in all three."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import load_example
from openai_server import ChatServer, hashed_verdict_script

from fbi.cli import main


@pytest.fixture
def unreadable():
    """The example section, registered for one test and taken out after."""
    from fbi.report import SECTIONS

    module = load_example("unreadable_section")
    yield module
    SECTIONS.remove("unreadable")


def muddled(request: dict) -> str:
    """A judge that cannot put its verdict into words when an answer mentions a year."""
    text = request["messages"][-1]["content"]
    if "1989" in text or "1969" in text:
        return "I would rather not say."
    return hashed_verdict_script(request)


def test_the_sections_are_declared_once_in_one_order():
    from fbi.report import Section, register_section, sections

    keys = [s.key for s in sections()]
    assert len(keys) == len(set(keys)) and keys[:4] == ["manipulation", "master-keys",
                                                        "human", "certificate"]
    with pytest.raises(ValueError, match="no report section 'nope'"):
        register_section(Section("x", "X", tables=lambda s, t: []), before="nope")
    assert [s.key for s in sections()] == keys


def test_a_new_section_is_one_file_and_every_renderer_draws_it(tmp_path, unreadable):
    env = {"FBI_CACHE": str(tmp_path / "c.sqlite")}
    with ChatServer(script=muddled) as server:
        done = CliRunner().invoke(main, [
            "evaluate", "--judge", "openai/muddled", "--api-base", server.url, "--dataset",
            "sample", "--output", str(tmp_path / "run")], env=env)
        assert done.exit_code in (0, 1), done.output  # (unreadable replies: exit 1)
    judged = [json.loads(line) for line in (tmp_path / "run" / "judgments.jsonl").open()]
    # by hand: an instance is unreadable when one of its two calls is, judged when it has
    # any; the overall rate is over the planted errors (score-invariant edits apart)
    errors = [j for j in judged if j["category"] != "score-invariant"]
    instances = {j["instance_id"] for j in errors}
    unread = {j["instance_id"] for j in errors if j["status"] != "ok"}
    assert 0 < len(unread) < len(instances)
    report = CliRunner().invoke(main, ["report", str(tmp_path / "run"), "--output",
                                       str(tmp_path / "r")], terminal_width=200)
    assert report.exit_code == 0, report.output
    row = f"| {len(instances)} | {len(unread)} | {100 * len(unread) / len(instances):.1f} |"
    markdown = (tmp_path / "r" / "report.md").read_text()
    assert "## Unreadable verdicts: how far they could move the rate" in markdown
    assert row in markdown
    assert markdown.index("## Unreadable verdicts") < markdown.index("## Leaderboard")
    html = (tmp_path / "r" / "report.html").read_text()
    assert '<h2 id="unreadable">' in html and 'href="#unreadable">Unreadable verdicts<' in html
    assert f"<td>{len(unread)}</td><td>{100 * len(unread) / len(instances):.1f}</td>" in html
    assert "Unreadable verdicts: how far they could move the rate" in report.output
