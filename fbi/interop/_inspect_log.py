"""`fbi export inspect`: a judge run as an Inspect eval log, written through inspect_ai's
own log API (`inspect_ai.log.write_eval_log`), so `inspect view` and `read_eval_log` show
fbi's judgments as samples.

One sample per judgment (a ``--samples K`` run: K epochs): its input is the call's
messages, re-rendered from the run's instances and templates (`fbi.judge.replayed_calls`,
as `fbi show` does, and checked against the recorded prompt hash); its output the judge's
raw reply with the call's usage; its score ``fbi`` the outcome of the instance under the
strategy (C detected / retained, I undetected / penalised, N unreadable, as
`fbi.metrics.instance_outcomes` decides it), with the verdict the parser read as the
answer and the judge's explanation; its metadata the FBI category, ability, strategy,
paradigm, role, cost and latency. The log's results hold each strategy's undetected rate
overall and per ability — `fbi report`'s numbers.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from fbi.errors import InputError, MissingExtra
from fbi.interop._eval_zip import write_eval_zip
from fbi.judge import replayed_calls
from fbi.metrics import aggregate, instance_outcomes
from fbi.outputs import claim_folder, mark_written
from fbi.records import Judgment
from fbi.runs import Run, load_run
from fbi.taxonomy import strategy_order

#: An outcome as an Inspect score value (`inspect_ai.scorer`'s CORRECT / INCORRECT / NOANSWER).
SCORE_VALUES = {"detected": "C", "retained": "C", "undetected": "I", "penalised": "I",
                "unparseable": "N"}


def _inspect_log_api():
    try:
        import inspect_ai.log as log_api
        import inspect_ai.model as model_api
        import inspect_ai.scorer as scorer_api
    except ImportError:
        raise MissingExtra("inspect-ai", "inspect", "Exporting to Inspect") from None
    return log_api, model_api, scorer_api


def export_inspect(run_folders: list[str | Path], output: str | Path, force: bool = False,
                   prompts_dir: Path | None = None, system_prompt: str | None = None,
                   log_format: str = "eval") -> list[Path]:
    """Write each judge run as an Inspect eval log in ``output`` (one file per run, named
    after its label); returns the files written. ``output`` is refused if it holds files
    fbi did not write, unless ``force`` (fbi's never replace theirs)."""
    log_api, _, _ = _inspect_log_api()
    runs = [load_run(folder) for folder in run_folders]
    names = _file_names(runs, log_format)
    output = Path(output)
    theirs = claim_folder(output, names, force)
    output.mkdir(parents=True, exist_ok=True)
    written = []
    for run, name in zip(runs, names, strict=True):
        path = output / name
        partial = output / f".{name}.{os.getpid()}.tmp.{log_format}"
        try:
            if log_format == "eval":  # written sample by sample (Inspect's own writer is
                header, samples = _header_and_samples(run, prompts_dir, system_prompt)
                write_eval_zip(header, samples, partial)  # quadratic in the samples)
            else:
                log = run_as_eval_log(run, prompts_dir, system_prompt)
                log_api.write_eval_log(log, str(partial), format=log_format)  # type: ignore[arg-type]
            os.replace(partial, path)
        finally:
            partial.unlink(missing_ok=True)
        written.append(path)
    mark_written(output, written, theirs)
    return written


def _file_names(runs: list[Run], log_format: str) -> list[str]:
    """A file name per run, from its label (a model string's slashes and the like
    replaced), told apart when two runs share one."""
    names: list[str] = []
    for run in runs:
        name = re.sub(r"[^A-Za-z0-9._-]+", "-", run.label).strip("-.") or "run"
        while f"{name}.{log_format}" in names:
            name += "-2"
        names.append(f"{name}.{log_format}")
    return names


def run_as_eval_log(run: Run, prompts_dir: Path | None = None,
                    system_prompt: str | None = None):
    """One run as an `inspect_ai.log.EvalLog` (see the module docstring)."""
    header, samples = _header_and_samples(run, prompts_dir, system_prompt)
    return header.model_copy(update={"samples": list(samples)})


def _header_and_samples(run: Run, prompts_dir: Path | None, system_prompt: str | None):
    """The log without its samples, and its samples one at a time (a whole release's
    50,400 are never held at once)."""
    log_api, model_api, _ = _inspect_log_api()
    if run.problems:
        raise InputError(f"{run.folder}: {run.problems[0]}")
    records = {(j.call_id, j.sample): j for j in [*run.judgments, *run.repeats]}
    samples_per_call = max([j.sample for j in run.repeats], default=0) + 1
    strategies = strategy_order({j.strategy for j in run.judgments})
    header = _log(log_api, model_api, run, len(records), samples_per_call, strategies)
    return header, _samples(run, records, strategies, samples_per_call, prompts_dir,
                            system_prompt)


def _samples(run: Run, records: dict, strategies: list[str], samples_per_call: int,
             prompts_dir: Path | None, system_prompt: str | None):
    log_api, model_api, scorer_api = _inspect_log_api()
    outcomes = {(o.instance_id, o.strategy): o.outcome
                for o in instance_outcomes(run.judgments)}
    instances = sorted({j.instance_id for j in run.judgments} & run.instances.keys())
    rendered: set[str] = set()
    for strategy in strategies:
        for call in replayed_calls(run, strategy, [run.instances[i] for i in instances],
                                   prompts_dir, system_prompt, samples_per_call):
            judgment = records.get((call.call_id, call.fields.get("sample", 0)))
            if judgment is None:
                continue  # a call the run has not made (yet)
            rendered.add(call.call_id)
            messages = [_message(model_api, role, content)
                        for role, content in call.request.messages]
            yield _sample(log_api, model_api, scorer_api, judgment, messages,
                          call.request.prompt_hash() == judgment.prompt_hash,
                          outcomes.get((judgment.instance_id, strategy)))
    for (call_id, _), judgment in records.items():  # judged instances no longer held
        if call_id not in rendered:
            yield _sample(log_api, model_api, scorer_api, judgment, None, False,
                          outcomes.get((judgment.instance_id, judgment.strategy)))


def _message(model_api, role: str, content: str):
    kind = {"system": model_api.ChatMessageSystem, "assistant": model_api.ChatMessageAssistant
            }.get(role, model_api.ChatMessageUser)
    return kind(content=content)


def _usage(model_api, judgments: list[Judgment]):
    prompt = sum(j.prompt_tokens or 0 for j in judgments)
    completion = sum(j.completion_tokens or 0 for j in judgments)
    costs = [j.cost for j in judgments if j.cost is not None]
    return model_api.ModelUsage(
        input_tokens=prompt, output_tokens=completion, total_tokens=prompt + completion,
        reasoning_tokens=sum(j.reasoning_tokens or 0 for j in judgments) or None,
        total_cost=sum(costs) if costs else None)


def _answer(judgment: Judgment) -> str:
    if judgment.status != "ok":
        return ""
    if judgment.score is not None:
        return str(judgment.score)
    return f"{judgment.slot_verdict} ({judgment.verdict})"


def _sample(log_api, model_api, scorer_api, judgment: Judgment, messages, matches: bool,
            outcome: str | None):
    reply = judgment.raw_output or ""
    output = model_api.ModelOutput.from_content(
        model=judgment.judge, content=reply,
        error=judgment.reason if judgment.status == "error" else None)
    output.usage = _usage(model_api, [judgment])
    inputs = messages or [model_api.ChatMessageUser(
        content=f"(the prompt of {judgment.call_id} cannot be re-rendered: its instance is "
                "not in the run's instances.jsonl)")]
    score = scorer_api.Score(
        value=SCORE_VALUES.get(outcome or "", "N"), answer=_answer(judgment),
        explanation=judgment.explanation,
        metadata={"outcome": outcome, "status": judgment.status, "reason": judgment.reason,
                  "score": judgment.score, "slot_verdict": judgment.slot_verdict,
                  "verdict": judgment.verdict})
    return log_api.EvalSample(
        id=judgment.call_id, epoch=judgment.sample + 1, input=inputs, target="",
        messages=[*inputs, model_api.ChatMessageAssistant(content=reply)], output=output,
        scores={"fbi": score},
        metadata={"instance_id": judgment.instance_id, "category": judgment.category,
                  "ability": judgment.ability.short, "strategy": judgment.strategy,
                  "paradigm": judgment.paradigm, "role": judgment.role,
                  "score_range": judgment.score_range, "cost": judgment.cost,
                  "latency_s": judgment.latency_s, "cached": judgment.cached,
                  "prompt_matches": matches},
        model_usage={judgment.judge: output.usage}, total_time=judgment.latency_s)


def _log(log_api, model_api, run: Run, samples: int, epochs: int, strategies: list[str]):
    from fbi import __version__

    spec = run.spec
    metrics = {}
    for rate in aggregate(instance_outcomes(run.judgments)):
        if rate.level in ("overall", "ability") and rate.rate is not None:
            name = f"undetected_{rate.strategy}" + \
                ("" if rate.level == "overall" else f"_{rate.group}")
            metrics[name] = log_api.EvalMetric(name=name, value=rate.rate)
    results = log_api.EvalResults(
        total_samples=samples, completed_samples=samples,
        scores=[log_api.EvalScore(name="fbi", scorer="fbi", metrics=metrics,
                                  scored_samples=samples)])
    return log_api.EvalLog(
        status="cancelled" if spec.totals.interrupted else "success",
        eval=log_api.EvalSpec(
            created=spec.created_at, task=f"fbi/{run.label}", model=spec.model,
            model_base_url=spec.api_base,
            dataset=log_api.EvalDataset(name=Path(spec.dataset.spec or "dataset").name,
                                        location=spec.dataset.spec, samples=samples),
            config=log_api.EvalConfig(epochs=epochs),
            task_args={"strategies": strategies},
            packages={"fbi": __version__},
            metadata={"fbi_run": str(run.folder), "label": spec.label,
                      "dataset_fingerprint": spec.dataset.fingerprint}),
        results=results,
        stats=log_api.EvalStats(started_at=spec.created_at, completed_at=spec.updated_at,
                                model_usage={spec.model: _usage(
                                    model_api, [*run.judgments, *run.repeats])}))
