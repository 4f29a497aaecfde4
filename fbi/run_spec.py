"""``run.json``: what a run was asked to do ([`RunSpec`][fbi.run_spec.RunSpec]) and its
parts — the prompts, the dataset, the selection, the parameters that change a reply, the
settings that do not, and each invocation's totals. One schema for every stage, versioned
like every record ([`fbi.records`][fbi.records]).

A spec is two parts: what a stage says of its run ([`RunIdentity`][fbi.run_spec.RunIdentity]:
model, prompts, dataset, parameters...) and what the run harness writes the same for every
stage ([`RunHeader`][fbi.run_spec.RunHeader]: the kind, versions, command line, times and
totals; `fbi.runs.Stage.spec`). A stage never writes the header itself."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_serializer,
    field_validator,
    model_validator,
)

from fbi.records import CallRecord, judge_name

RUN_SCHEMA_VERSION = 2

class PromptRecord(BaseModel):
    """One prompt template a run used (a strategy, a perturbation category, a QA prompt):
    what makes its requests what they are."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)

    version: str | int | None = None
    """The template's version (its front matter)."""
    template_sha: str | None = None
    """sha256 (16 hex digits) of the template file as it was."""
    display_name: str | None = None
    """Evaluate: the strategy's name as the paper prints it."""
    paradigm: str | None = None
    """Evaluate: ``single``, ``pairwise``, ``reference`` or ``step``."""
    origin: str | None = None
    """Evaluate: ``built-in``, or the --prompts folder it came from."""
    score_range: list[int] | None = None
    """Evaluate: the score range asked for (None for pairwise strategies)."""
    axis_score_ranges: dict[str, list[int]] = Field(default_factory=dict)
    """Evaluate: another range on some axes (Axis: hallucination 0–1)."""


class DatasetRecord(BaseModel):
    """What a run read."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)

    spec: str | None = None
    """The dataset as given (``sample``, a path, ``hf:ORG/NAME``)."""
    fingerprint: str | None = None
    """sha256 of its content, before any selection: another dataset is another run."""
    instances: int | None = None
    """Evaluate: instances judged."""
    rows_read: int | None = None
    """Evaluate: rows read from the source."""
    items: int | None = None
    """Perturb: gold answers used."""
    questions: int | None = None
    """Robustness: questions asked."""
    judge_run: str | None = None
    """Explain-check: the judge run folder whose explanations are checked."""
    judge: str | None = None
    """Explain-check: that run's judge."""


class Selection(BaseModel):
    """Which part of the dataset a run took: part of its identity."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)

    abilities: list[str] | None = None
    """Evaluate: only these abilities (empty: all)."""
    categories: list[str] | None = None
    """Evaluate and perturb: only these categories (empty: all)."""
    include_extra: bool | None = None
    """Evaluate: the release's extra categories too."""
    limit: int | None = None
    """At most N instances per category (evaluate), gold answers (perturb) or questions
    (robustness)."""
    sample: int | None = None
    """Evaluate: a seeded random N per category (or overall)."""
    sample_seed: int | None = None
    """Evaluate: the sample's seed."""
    sample_by: str | None = None
    """Evaluate: ``category`` or ``overall``."""
    columns: dict[str, str] | None = None
    """Evaluate: a preference set's columns under other names (--columns)."""
    engine: str | None = None
    """Perturb: ``auto``, ``rules`` or ``llm``."""
    n_per_item: int | None = None
    """Perturb: candidates per gold answer and category."""
    suites: list[str] | None = None
    """Robustness: the suites run."""


class Parameters(BaseModel):
    """What changes a reply: part of a run's identity (a resumed run must share it)."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)

    temperature: float | None = None
    """Sampling temperature."""
    max_tokens: int | None = None
    """The reply's token limit."""
    seed: int | None = None
    """Sampling seed."""
    model_args: dict[str, Any] | None = None
    """Further request parameters (--model-arg); a secret's value is ``[secret]``."""
    samples: int | None = None
    """Evaluate: each call asked K times (--samples); robustness: MAQA samples."""
    logprobs: int | None = None
    """Evaluate: top token log-probabilities asked for (--logprobs)."""
    explanation_chars: int | None = None
    """Evaluate: the explanation's cap in the reply schema, when not 600."""
    system_prompt_sha256: str | None = None
    """Evaluate: sha256 of the --system-prompt file's text."""
    protocol: str | None = None
    """Evaluate: ``paper`` when the FBI authors' request protocol was sent."""
    protocol_version: int | None = None
    """Evaluate: that protocol's version (a later one sends other prompts)."""
    rules_version: str | None = None
    """Perturb: the rule engine's version."""
    rephrasings: int | None = None
    """Robustness: rewrites asked per question."""
    shuffles: int | None = None
    """Robustness: answer orders per multiple-choice question."""
    correctness: str | None = None
    """Robustness: how free-text answers are judged right."""
    threshold: float | None = None
    """Robustness: the correctness threshold."""
    possible_answers: int | None = None
    """Robustness: K for certainty and M2."""
    budget: int | None = None
    """Hunt: the calls the search and its confirmation may make."""
    search_version: str | None = None
    """Hunt: the search's version (another would plan other probes)."""
    perturber: str | None = None
    """Hunt: the LLM perturber's model and the edits asked of it per category."""
    describer: str | None = None
    """Hunt: the describer's model and the edits asked of it per proposal."""
    alpha: float | None = None
    """Watch: the false-alarm level (another would void the guarantee so far)."""


class RunSettings(BaseModel):
    """What does not change a reply: may differ between invocations of one run."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)

    concurrency: int | None = None
    """Calls in flight at once."""
    timeout_s: float | None = None
    """Seconds per call."""
    retries: int | None = None
    """Retries per call."""
    max_cost: float | None = None
    """The budget (USD)."""
    repair: int | None = None
    """Evaluate: follow-up asks for an unreadable verdict."""
    api_pool: list[str] | None = None
    """Every server of a pool (without credentials)."""
    score_range: list[int] | None = None
    """Evaluate: the --score-range asked for (its effect is in the prompts)."""
    length_threshold: float | None = None
    """Perturb: the pre-screen's relative length change."""


class RunTotals(BaseModel):
    """What a run (or one invocation of it) did: its calls, their outcomes, tokens and
    cost, and why it stopped, if it did. The one totals record: the harness counts into
    it, and ``run.json`` keeps it (under its file names: ``calls``, ``done_before``,
    ``cost_usd``, ``submitted_in_batches``; the budget and the first errors are this
    invocation's only and are not kept)."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True,
                              validate_by_name=True, validate_by_alias=True,
                              serialize_by_alias=True)

    total: int = Field(0, alias="calls")
    """Calls the run plans."""
    already_done: int = Field(0, alias="done_before")
    """Of those, already in the log when this invocation started."""
    completed: int = 0
    """Calls this invocation finished (cached ones included)."""
    cached: int = 0
    """Of those, answered by the response cache."""
    requests: int = 0
    """Requests that reached a model (retries included)."""
    unparseable: int = 0
    """Of those, with a reply fbi could not read."""
    failed: int = 0
    """Of those, with no reply (an error)."""
    prompt_tokens: int = 0
    """Prompt tokens of this invocation's calls."""
    completion_tokens: int = 0
    """Reply tokens of this invocation's calls."""
    reasoning_tokens: int = 0
    """Of those, the tokens reasoning models spent reasoning."""
    cost: float = Field(0.0, alias="cost_usd")
    """USD of this invocation's priced calls."""
    unpriced: int = 0
    """Calls made this time whose price is unknown (not in ``cost``)."""
    stopped_by_budget: bool = False
    """--max-cost stopped the run."""
    interrupted: bool = False
    """A signal (Ctrl-C) stopped the run; it resumes."""
    interrupted_by: int = Field(0, exclude=True)
    """The signal that interrupted the run (SIGINT or SIGTERM)."""
    stopped_by: str | None = None
    """Why the model became unavailable midway."""
    in_batches: int = 0
    """Calls submitted to a provider batch and not yet collected."""
    submitted: int = Field(0, alias="submitted_in_batches")
    """Of ``requests``, those sent in provider batches this time."""
    budget: float | None = Field(None, exclude=True)
    """The --max-cost budget, in USD."""
    errors: list[str] = Field(default_factory=list, exclude=True)
    """The first five errors' messages."""

    @field_serializer("cost")
    def _rounded(self, cost: float) -> float:
        return round(cost, 6)

    def add(self, record: CallRecord) -> None:
        self.completed += 1
        self.cached += record.cached
        self.unparseable += record.status == "unparseable"
        if record.status == "error":
            self.failed += 1
            if len(self.errors) < 5:
                self.errors.append(str(record.reason or ""))
        self.prompt_tokens += record.prompt_tokens
        self.completion_tokens += record.completion_tokens
        self.reasoning_tokens += record.reasoning_tokens
        self.cost += record.cost or 0.0
        self.unpriced += record.cost is None and not record.cached and \
            record.status != "error"

    def merge(self, other: RunTotals) -> RunTotals:
        """Both phases of a stage (e.g. robustness rewrites, then answers) as one."""
        for name in ("total", "already_done", "completed", "cached", "unparseable", "failed",
                     "prompt_tokens", "completion_tokens", "reasoning_tokens", "cost",
                     "unpriced", "requests", "in_batches",
                     "submitted"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.stopped_by_budget |= other.stopped_by_budget
        self.budget = self.budget if self.budget is not None else other.budget
        self.interrupted |= other.interrupted
        self.interrupted_by = self.interrupted_by or other.interrupted_by
        self.stopped_by = self.stopped_by or other.stopped_by
        self.errors = (self.errors + other.errors)[:5]
        return self


class RunHeader(BaseModel):
    """The part of a spec the run harness writes, the same for every stage: which stage,
    which fbi, when, the command line and what the last invocation did."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    schema_version: Literal[1, 2] = RUN_SCHEMA_VERSION
    """2; version 1 files (evaluate only) are read and upgraded."""
    kind: str = Field(default="evaluate", min_length=1)
    """The stage that wrote it (``Stage.kind``; `fbi.runs.stage_kinds` lists them)."""
    fbi_version: str
    """The fbi that wrote it."""
    litellm_version: str = ""
    """The litellm installed then."""
    command: list[str] = Field(default_factory=list)
    """The command line, keys and secret values taken out."""
    created_at: str
    """When the run was first started (UTC, ISO 8601)."""
    updated_at: str
    """When it was last written."""
    totals: RunTotals = Field(default_factory=RunTotals)
    """What the last invocation did."""

    @field_validator("command")
    @classmethod
    def _no_secrets_in_command(cls, value: list[str]) -> list[str]:
        """The command line as typed, with keys, secret model arguments and URL
        credentials taken out."""
        from fbi.redaction import SECRET_PLACEHOLDER, is_secret_arg, redact

        kept = []
        for argument in value:
            if kept and kept[-1] == "--api-key":
                argument = "[redacted]"
            elif argument.startswith("--api-key="):
                argument = "--api-key=[redacted]"
            elif kept and kept[-1] == "--model-arg" and \
                    is_secret_arg(argument.partition("=")[0].strip()):
                argument = f"{argument.partition('=')[0]}={SECRET_PLACEHOLDER}"
            elif argument.startswith("--model-arg=") and \
                    is_secret_arg(argument.removeprefix("--model-arg=").partition("=")[0]):
                argument = f"{argument.partition('=')[0]}=" \
                    f"{argument.removeprefix('--model-arg=').partition('=')[0]}=" \
                    f"{SECRET_PLACEHOLDER}"
            kept.append(redact(argument))
        return kept


class RunIdentity(BaseModel):
    """The part of a spec a stage describes (``Stage.identity``): the model, what it was
    asked and over what. Its identity fields — model, api_base, prompts (per name:
    version, template hash, score range), ``parameters`` (what changes a reply), the
    dataset fingerprint and the ``selection`` — are what a resumed run must share with
    the folder it resumes (with the header's kind); ``settings`` (concurrency, time-outs,
    budget) and ``label`` may change between invocations."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    label: str | None = None
    """The run's name in comparison reports (--label)."""
    model: str
    """The model called (the judge, the perturber, the checker, the model under test)."""
    api_base: str | None = None
    """Its server, without credentials (the first of a pool)."""
    prompts: dict[str, PromptRecord] = Field(default_factory=dict)
    """Each prompt template used, by name."""
    dataset: DatasetRecord = Field(default_factory=DatasetRecord)
    """What was read."""
    selection: Selection = Field(default_factory=Selection)
    """Which part of it was taken."""
    parameters: Parameters = Field(default_factory=Parameters)
    """What changes a reply."""
    settings: RunSettings = Field(default_factory=RunSettings)
    """What does not."""
    record_versions: dict[str, int] = Field(default_factory=dict)
    """The schema versions of the records written (instance, judgment, run)."""
    parser_version: str = ""
    """The verdict parser's version (evaluate)."""

    @field_validator("api_base")
    @classmethod
    def _no_credentials(cls, value: str | None) -> str | None:
        """A run spec never keeps the user:password of an api_base URL."""
        from fbi.redaction import public_url

        return public_url(value)


class RunSpec(RunIdentity, RunHeader):
    """What a run was asked to do: ``run.json`` (or ``QUEUE.run.json`` for perturb,
    ``explanation_checks.run.json`` for explanation checks) — the harness's
    [`RunHeader`][fbi.run_spec.RunHeader] and the stage's
    [`RunIdentity`][fbi.run_spec.RunIdentity] in one file. Never holds an API key, nor a
    secret model argument's value. One schema for every stage, told apart by ``kind``."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    @property
    def judge_name(self) -> str:
        """The label and model as printed ([`judge_name`][fbi.records.judge_name])."""
        return judge_name(self.label, self.model)

    @model_validator(mode="before")
    @classmethod
    def _upgrade_v1(cls, data: Any) -> Any:
        """Schema 1 (evaluate only) named the model ``judge`` and the prompts
        ``strategies``, and kept every parameter in ``parameters``."""
        if isinstance(data, dict) and data.get("schema_version", 1) == 1:
            data = dict(data)
            if "judge" in data:
                data.setdefault("model", data.pop("judge"))
            if "strategies" in data:
                data.setdefault("prompts", data.pop("strategies"))
            parameters = dict(data.get("parameters") or {})
            settings = dict(data.get("settings") or {})
            for name in ("timeout_s", "concurrency", "max_cost"):
                if name in parameters:
                    settings[name] = parameters.pop(name)
            data["parameters"], data["settings"] = parameters, settings
        return data


def identity_of(part: BaseModel) -> dict[str, Any]:
    """A spec part's fields as identity compares them: unset ones (None) left out, so a
    folder written before a field existed still matches."""
    return {key: value for key, value in part.model_dump().items() if value is not None}
