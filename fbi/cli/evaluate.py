"""`fbi evaluate`: run a judge over a dataset with the FBI strategies."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import click
from rich import box
from rich.table import Table

from fbi.cli._bundles import (
    batch_bundle,
    bundle,
    cache_bundle,
    calls_bundle,
    reasoning_bundle,
)
from fbi.cli._config import load_config, resume_run
from fbi.cli._console import print_command
from fbi.cli._run import (
    MAX_SAMPLES,
    SEED,
    FiniteFloat,
    RichProgress,
    console,
    dry_run_option,
    exit_for,
    force_option,
    parse_model_args,
    print_dry_run,
    print_totals,
)
from fbi.datasets import QUICK
from fbi.errors import UnknownName
from fbi.files import read_text
from fbi.providers import LOCAL_JUDGE
from fbi.redaction import SECRET_PLACEHOLDER
from fbi.taxonomy import PAPER_STRATEGIES


def parse_score_range(ctx, param, value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    from fbi.judge import MAX_SCORE_RANGE_WIDTH

    match = re.fullmatch(r"\s*(-?\d+)\s*-\s*(-?\d+)\s*", value)
    if not match or int(match.group(1)) >= int(match.group(2)):
        raise click.BadParameter(f"'{value}' is not a range like 1-10 (low below high)")
    low, high = int(match.group(1)), int(match.group(2))
    if high - low > MAX_SCORE_RANGE_WIDTH:
        raise click.BadParameter(f"'{value}' is too wide: at most {MAX_SCORE_RANGE_WIDTH + 1} "
                                 "points, e.g. 1-10 or 0-100")
    return low, high


#: Top log-probabilities asked per token with --logprobs: OpenAI's maximum.
TOP_LOGPROBS = 20



def hub_choice(spec: str, config: str | None, split: str | None) -> str:
    """SPEC with --hf-config/--hf-split folded in (hf:ORG/NAME@REV?config=…&split=…),
    so run.json records them and --resume finds them."""
    import dataclasses

    from fbi.datasets import HubSpec

    if config is None and split is None:
        return spec
    if not spec.startswith("hf:"):
        raise click.UsageError("--hf-config and --hf-split go with --dataset hf:ORG/NAME")
    hub = HubSpec.parse(spec)
    return str(dataclasses.replace(hub, config=config or hub.config,
                                   split=split or hub.split))


def read_system_prompt(path: Path | None) -> str | None:
    from fbi.errors import InputError

    if path is None:
        return None
    try:
        text = read_text(path)
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: cannot be read as UTF-8 text ({error}). Fix: pass a "
                         "UTF-8 text file to --system-prompt") from None
    if not text.strip():
        raise InputError(f"{path}: the system prompt is empty. Fix: write the prompt in it "
                         "or leave out --system-prompt")
    return text


@dataclass(frozen=True)
class DatasetChoice:
    """The dataset and the part of it judged."""

    dataset_spec: str = QUICK
    columns: str | None = None
    hf_config: str | None = None
    hf_split: str | None = None
    abilities: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    include_extra: bool = False
    limit: int | None = None
    sample: int | None = None
    sample_seed: int = 0
    sample_by: str = "category"

    @property
    def spec(self) -> str:
        """The dataset's spec with --hf-config/--hf-split folded in."""
        return hub_choice(self.dataset_spec, self.hf_config, self.hf_split)

    @property
    def filtered(self) -> bool:
        return bool(self.abilities or self.categories or self.limit or self.sample)

    def chosen(self, dataset):
        """The part of ``dataset`` these options choose."""
        return dataset.select(self.abilities, self.categories, self.include_extra,
                              self.limit, self.sample, self.sample_seed, self.sample_by)


dataset_bundle = bundle("choice", DatasetChoice,
    click.option("--dataset", "dataset_spec", default=QUICK, show_default=True,
                 help="quick (one instance of each category of the built-in sample), sample "
                      "(all 72), a .jsonl/.csv/.parquet file, an FBI TSV folder, "
                      "hf:ORG/NAME[@REVISION]; or a preference set (prompt, chosen, "
                      "rejected[, subset], as RewardBench; LLMBar's layout too)."),
    click.option("--columns", help="A preference set's columns under other names: "
                                   "prompt=COL,chosen=COL,rejected=COL, and optionally "
                                   "category=COL and id=COL."),
    click.option("--hf-config", help="With --dataset hf:ORG/NAME[@REVISION]: one config."),
    click.option("--hf-split", help="With --dataset hf:ORG/NAME[@REVISION]: one split."),
    click.option("--ability", "abilities", multiple=True,
                 help="Only these abilities: factual, instruction-following, long-form, "
                      "reasoning."),
    click.option("--category", "categories", multiple=True,
                 help="Only these category ids (repeatable); `fbi categories` lists them."),
    click.option("--include-extra", is_flag=True,
                 help="Also judge the release's extra categories (formatting, superficial)."),
    click.option("--limit", type=click.IntRange(min=1), help="At most N instances per category."),
    click.option("--sample", type=click.IntRange(min=1),
                 help="A seeded random N instances per category (or overall: --sample-by)."),
    click.option("--sample-seed", type=SEED, default=0, show_default=True),
    click.option("--sample-by", type=click.Choice(["category", "overall"]), default="category",
                 show_default=True))


@dataclass(frozen=True)
class JudgingChoice:
    """What the judge is asked: strategies, prompts, reply shape and protocol."""

    strategies: tuple[str, ...] = ()
    score_range: tuple[int, int] | None = None
    explanation_chars: int | None = None
    repair: int = 0
    prompts_dir: Path | None = None
    label: str | None = None
    system_prompt: Path | None = None
    samples: int = 1
    logprobs: bool = False
    protocol: str = "fbi"

    def config(self, settings, judge: str):
        """The EvaluationConfig of these options and the judge's ``settings``."""
        from fbi.judge import EvaluationConfig, default_strategies

        return EvaluationConfig(
            model=settings, strategies=tuple(self.strategies) or default_strategies(judge),
            score_range=self.score_range, repair=self.repair, prompts_dir=self.prompts_dir,
            label=self.label, system_prompt=read_system_prompt(self.system_prompt),
            samples=self.samples, logprobs=TOP_LOGPROBS if self.logprobs else 0,
            explanation_chars=self.explanation_chars,
            protocol=self.protocol)  # type: ignore[arg-type]


judging_bundle = bundle("judging", JudgingChoice,
    click.option("--strategy", "strategies", multiple=True,
                 help="Strategy name or 'all' (repeatable). Default: vanilla. The paper's: "
                      f"{', '.join(PAPER_STRATEGIES)}; `fbi strategies` describes them."),
    click.option("--score-range", callback=parse_score_range,
                 help="Score range A-B for every scored strategy (default: each strategy's own)."),
    click.option("--explanation-chars", type=click.IntRange(min=1, max=100_000),
                 help="Longest explanation the reply's JSON schema allows, in characters "
                      "(default 120 for the embedded judge, 600 otherwise)."),
    click.option("--repair", type=click.IntRange(min=0, max=10), default=0, show_default=True,
                 help="Ask again up to N times for just the verdict when a reply is unreadable."),
    click.option("--prompts", "prompts_dir", type=click.Path(file_okay=False, path_type=Path),
                 help="A folder of extra or overriding strategy templates (NAME.jinja)."),
    click.option("--label", help="This run's name in comparison reports (default: the judge, "
                                 "plus what differs from the other runs there)."),
    click.option("--system-prompt", type=click.Path(dir_okay=False, exists=True, path_type=Path),
                 help="A file whose text is sent as the system message of every call."),
    click.option("--samples", type=click.IntRange(min=1, max=MAX_SAMPLES), default=1,
                 show_default=True,
                 help="Ask every call K times (use with --temperature > 0): the report gives "
                      "how often an instance's outcome changes between samples, Fleiss' κ "
                      "across them, and the rate's spread. Tables use the first sample."),
    click.option("--logprobs", is_flag=True,
                 help="Ask single-answer and reference calls for token log-probabilities and "
                      "store the probability-weighted (G-Eval) expected score beside the "
                      "sampled one; the report shows the undetected rate under both. For "
                      "providers that return them (OpenAI, vLLM, the embedded judge)."),
    click.option("--protocol", type=click.Choice(["fbi", "paper"]), default="fbi",
                 show_default=True,
                 help="What is sent: fbi's structured protocol (a JSON schema the provider "
                      "enforces) or the FBI authors' (their system message, their reply schema "
                      "described in the prompt, their field names and section markers, no "
                      "response_format). Recorded in run.json."))


@dataclass(frozen=True)
class SamplingChoice:
    """How each reply is sampled, and what else the request carries."""

    temperature: float = 0.0
    max_tokens: int | None = None
    seed: int | None = None
    model_args: tuple[tuple[str, object], ...] = ()


sampling_bundle = bundle("sampling", SamplingChoice,
    click.option("--temperature", type=FiniteFloat(min=0, max=5), default=0.0, show_default=True),
    click.option("--max-tokens", type=click.IntRange(min=1, max=1_000_000),
                 help="Reply token limit (default 400 for the embedded judge, 1024 otherwise)."),
    click.option("--seed", type=SEED, help="Sampling seed, for providers that take one."),
    click.option("--model-arg", "model_args", multiple=True, callback=parse_model_args,
                 metavar="KEY=VALUE",
                 help="Another litellm parameter (repeatable), e.g. top_p=0.9, "
                      "reasoning_effort=low, api_version=2024-06-01; VALUE is read as JSON "
                      "when it parses. Recorded in run.json and the cache key."))


@click.command()
@click.option("--judge", default=LOCAL_JUDGE, show_default=True,
              help="Any litellm model string, e.g. gpt-4-turbo or openai/NAME with --api-base.")
@dataset_bundle
@judging_bundle
@sampling_bundle
@calls_bundle
@click.option("--api-base", "api_bases", multiple=True,
              help="Base URL of an OpenAI-compatible or other provider API. Repeat it for "
                   "a pool of servers of the same model: calls are spread over them, and a "
                   "server that fails is left out while the others answer.")
@click.option("--output", type=click.Path(file_okay=False, path_type=Path),
              help="Run folder (default fbi-runs/JUDGE__DATASET). Re-running resumes it.")
@force_option
@dry_run_option
@click.option("--show-prompts", is_flag=True,
              help="With --dry-run: also print one rendered prompt per strategy.")
@cache_bundle
@reasoning_bundle
@batch_bundle
@click.option("--config", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              is_eager=True, expose_value=False, callback=load_config,
              help="Take options from a YAML file (keys as the flags: strategy: [vanilla], "
                   "max-tokens: 200); flags given here win.")
@click.option("--resume", type=click.Path(file_okay=False, exists=True, path_type=Path),
              is_eager=True, callback=resume_run,
              help="Remake the run a folder records (its run.json): same judge, data, "
                   "selection and parameters, into that folder unless --output is given.")
def evaluate(judge, choice, judging, sampling, calls, api_bases, output, force, dry_run,
             show_prompts, cache, reasoning, batch, resume) -> None:
    """Run a judge over the dataset with the FBI strategies and record every judgment."""
    from fbi.datasets import load_dataset, parse_columns
    from fbi.judge import Evaluation, default_output, evaluate

    if show_prompts and not dry_run:
        raise click.UsageError("--show-prompts goes with --dry-run")
    model_args = reasoning.model_args(sampling.model_args)
    if resume is not None:  # the run's other arguments beside the secrets given again
        model_args = resumed_model_args(resume, model_args)
    settings = calls.settings(judge, api_bases, temperature=sampling.temperature,
                              max_tokens=sampling.max_tokens, seed=sampling.seed,
                              model_args=model_args)
    if resume is not None:
        check_resumable(resume, judging.system_prompt, settings)
    dataset_spec = choice.spec
    dataset = load_dataset(dataset_spec, columns=parse_columns(choice.columns))
    chosen = choice.chosen(dataset)
    said_what_is_judged(dataset, chosen, dataset_spec, filtered=choice.filtered)
    config = judging.config(settings, judge)
    output = output or default_output(judge, dataset_spec)
    client = calls.client(settings, cache)
    if dry_run:
        evaluation = Evaluation(chosen, config, output, force)
        print_dry_run(evaluation.dry_run(client), judge, str(output))
        if show_prompts:
            print_examples(evaluation.examples())
        else:
            console.print("--show-prompts prints one rendered prompt per strategy.")
        return
    result = evaluate(dataset=chosen, config=config, output=output, client=client,
                      progress=RichProgress("judging"), force=force,
                      batch=batch.options(calls.concurrency))
    print_totals(result.totals)
    print_headline(result.evaluation, output)
    exit_for(result.totals)


def resumed_model_args(folder: Path, given: tuple[tuple[str, object], ...]
                       ) -> tuple[tuple[str, object], ...]:
    """The --model-arg values of a resumed run: those given on the command line, and the
    run's recorded ones that are not secret (click takes a repeated option given on the
    command line in place of the recorded list, not beside it)."""
    from fbi.runs import read_spec

    recorded = read_spec(folder / "run.json").parameters.model_args or {}
    merged = {name: value for name, value in recorded.items()
              if value != SECRET_PLACEHOLDER}
    return tuple(sorted({**merged, **dict(given)}.items()))


def check_resumable(folder: Path, system_prompt: Path | None, settings) -> None:
    """What --resume cannot take from run.json: the system prompt's file, and the values
    of secret model arguments (recorded only as [secret]); each must be given again."""
    from fbi.runs import read_spec

    parameters = read_spec(folder / "run.json").parameters
    if parameters.system_prompt_sha256 and system_prompt is None:
        raise click.UsageError(f"{folder} was run with a system prompt; pass the same file "
                               "again with --system-prompt")
    recorded = parameters.model_args or {}
    missing = [name for name, value in recorded.items()
               if value == SECRET_PLACEHOLDER and dict(settings.model_args).get(name)
               in (None, SECRET_PLACEHOLDER)]
    if missing:
        raise click.UsageError(
            f"{folder} was run with secret model arguments ({', '.join(missing)}), which "
            "run.json never keeps; pass them again with --model-arg NAME=VALUE")


def said_what_is_judged(dataset, chosen, spec: str, filtered: bool) -> None:
    left_out = len(dataset) - len(chosen)
    why = "by the filters" if filtered else \
        "in extra categories; --include-extra judges them"
    console.print(f"Read {dataset.rows_read} rows from {spec}; judging {len(chosen)} "
                  f"instances" + (f" ({left_out} left out {why})" if left_out else ""))
    if spec == QUICK:
        console.print("quick: the first instance per category of the sample; "
                      "--dataset sample: all 72")


def print_headline(evaluation, output: Path) -> None:
    """The run's headline table (fbi.report's), or why there is none yet."""
    from fbi.judge import read_verdicts
    from fbi.report import headline_table

    judgments = read_verdicts(output)
    if not judgments:  # nothing to tabulate yet (all in batches, or every call failed)
        console.print(f"No judgments in {output} yet.")
        return
    names = {}
    for strategy in {j.strategy for j in judgments}:
        try:
            names[strategy] = evaluation.registry.get(strategy).meta.display_name
        except UnknownName:  # a strategy from a template folder not given this time
            names[strategy] = strategy
    console.print(as_rich_table(headline_table(judgments, names, evaluation.config.label)))
    print_command(f"Judgments in {output / 'judgments.jsonl'}; the full report:",
                  f"fbi report {output}")


def print_examples(examples) -> None:
    """One rendered prompt per strategy, as the judge will receive it."""
    from rich.markup import escape
    from rich.panel import Panel

    for strategy, call in examples.items():
        for role, content in call.request.messages:
            console.print(Panel(escape(content), title_align="left",
                                title=f"{strategy}: {role} message of {call.call_id}"))


def as_rich_table(headline) -> Table:
    """fbi.report's headline, drawn as the terminal shows it: light rules, numbers
    right-aligned and never wrapped."""
    table = Table(title=headline.title, caption=headline.caption, box=box.SIMPLE_HEAD,
                  collapse_padding=True, pad_edge=False)
    for column in headline.header:
        text = column in ("judge", "strategy")
        table.add_column(column, justify="left" if text else "right", no_wrap=True)
    for row in headline.rows:
        table.add_row(*row)
    return table
