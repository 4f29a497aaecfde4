"""`fbi show RUN CALL_ID`: one stored judge call, its prompt re-rendered and checked."""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape
from rich.panel import Panel

from fbi.cli._console import console


@click.command()
@click.argument("run_dir", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.argument("call_id")
@click.option("--prompts", "prompts_dir", type=click.Path(file_okay=False, path_type=Path),
              help="The template folder of a custom strategy, if it has moved.")
@click.option("--system-prompt", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="The system prompt file the run was given, if any.")
def show(run_dir, call_id, prompts_dir, system_prompt) -> None:
    """The call CALL_ID of a judge run (INSTANCE|STRATEGY|ROLE, as in judgments.jsonl):
    its messages re-rendered and checked against the recorded prompt hash, the raw
    reply, and the verdict read from it. No model call."""
    from fbi.cli.evaluate import read_system_prompt
    from fbi.judge import show_call

    shown = show_call(run_dir, call_id, prompts_dir, read_system_prompt(system_prompt))
    judgment = shown.judgment
    console.print(f"[bold]{escape(shown.call_id)}[/] of {escape(str(run_dir))}: judge "
                  f"{escape(shown.judge)}, strategy {escape(shown.strategy)}")
    for role, content in shown.messages:
        console.print(Panel(escape(content), title=f"{role} message", title_align="left"))
    if shown.hash_matches:
        console.print(f"[green]prompt hash matches[/] the call's (sha256 "
                      f"{judgment.prompt_hash[:12]})")
    else:
        console.print(f"[yellow]prompt hash differs[/] from the call's (sha256 "
                      f"{judgment.prompt_hash[:12]}): {escape(shown.note or '')}")
    if judgment.reasoning is not None:
        console.print(Panel(escape(judgment.reasoning), title=(
            f"reasoning ({judgment.reasoning_tokens} tokens; never read for the verdict)"),
            title_align="left"))
    console.print(Panel(escape(judgment.raw_output or f"(no reply: {judgment.reason})"),
                        title="raw reply", title_align="left"))
    for number, reply in enumerate(judgment.repair_outputs, start=1):
        console.print(Panel(escape(reply), title=f"repair reply {number}", title_align="left"))
    verdict = (f"score {judgment.score}" if judgment.score is not None else
               f"verdict {judgment.slot_verdict} (→ {judgment.verdict})"
               if judgment.slot_verdict else "none")
    if judgment.expected_score is not None:
        distribution = ", ".join(f"{value}: {p:.2f}" for value, p in
                                 (judgment.score_probabilities or {}).items())
        verdict += (f" (weighted {judgment.expected_score:.2f} over {distribution}; "
                    f"{100 * (judgment.score_mass or 0):.0f}% of the token's probability)")
    console.print(f"status [bold]{judgment.status}[/]"
                  + (f" ({escape(judgment.reason)})" if judgment.reason else "")
                  + f"; {verdict}; parser {judgment.parser_version}; "
                  + f"{judgment.prompt_tokens}+{judgment.completion_tokens} tokens"
                  + (" (from the cache)" if judgment.cached else ""))
