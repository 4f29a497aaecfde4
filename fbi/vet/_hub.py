"""Publishing a vetted dataset to the Hugging Face Hub.

The folder layout: one config per ability plus ``score-invariant``, one split per
category, Parquet files under ``data/CONFIG/SPLIT.parquet``, and a ``README.md`` dataset
card whose YAML lists the configs, so ``datasets.load_dataset(folder, config)`` and
``fbi datasets show folder`` both read it back. Uploading goes through huggingface_hub;
the token comes from ``HF_TOKEN`` or the saved login and is never written anywhere.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from fbi.datasets import source_name, write_dataset
from fbi.errors import ConfigError, InputError, ModelError
from fbi.outputs import claim_folder, files_written, mark_written, write_atomically
from fbi.records import Instance
from fbi.taxonomy import CATEGORIES, SCORE_INVARIANT, Ability

if TYPE_CHECKING:
    from fbi.metrics import VettingAgreement

COLUMN_DOCS = [
    ("id", "unique id of the instance"),
    ("ability", "factual, instruction-following, long-form or reasoning (for score-invariant "
                "instances: the ability of the prompt)"),
    ("category", "the perturbation category (one of 22, or score-invariant)"),
    ("instruction", "the prompt (of a conversation: its last user turn)"),
    ("context", "a conversation's turns before the instruction, as role and content"),
    ("gold_answer", "the reference answer"),
    ("perturbed_answer", "the answer with the planted error (or the score-invariant rewrite)"),
    ("rationale", "what the error is, as the generator described it"),
    ("label", "the vetting label: valid or score-invariant in a published set"),
    ("source", "the dataset the gold answer came from"),
    ("original_id", "the id in that source"),
    ("generator", "what made the perturbation: rules:CATEGORY, llm:MODEL, or human"),
    ("template_version", "version of the template or rules that made it"),
    ("seed", "random seed of the rule engine, when used"),
    ("gold_model", "the model that wrote the gold answer, when known"),
    ("group", "the best-of-N row a pair was expanded from (empty for a plain pair)"),
    ("chosen_index", "in a best-of-N row, the chosen answer playing gold (0-based)"),
    ("rejected_index", "in a best-of-N row, the rejected answer playing perturbed"),
    ("chosen_count", "in a best-of-N row, how many chosen answers it lists"),
    ("rejected_count", "in a best-of-N row, how many rejected answers it lists"),
    ("changed_step", "an agent's trajectory: the step the planted error changed (from 1)"),
    ("flags", "automatic pre-screen flags the candidate carried"),
    ("schema_version", "version of this record layout"),
]


def split_name(category: str) -> str:
    """Hub split names allow letters, digits and underscores only."""
    return re.sub(r"\W", "_", category)


def config_of(instance: Instance) -> str:
    """The Hub config an instance is published under: its ability, or `score-invariant`."""
    return SCORE_INVARIANT if instance.is_score_invariant else instance.ability.value


def check_repo_id(repo_id: str) -> str:
    """A Hub repo id: ORG/NAME of letters, digits, '-', '_' and '.' (96 characters at
    most, no '--' or '..', not starting or ending with '-' or '.')."""
    ok = re.fullmatch(r"[A-Za-z0-9][\w.-]{0,94}/[A-Za-z0-9][\w.-]{0,94}", repo_id) and \
        len(repo_id) <= 96 and "--" not in repo_id and ".." not in repo_id and \
        not repo_id.endswith(("-", "."))
    if not ok:
        raise InputError(f"{repo_id!r} is not a Hub repo id. Fix: give ORG/NAME, letters, "
                         "digits, '-', '_' and '.' only")
    return repo_id


def check_license(license_id: str) -> str:
    """A licence identifier as the Hub's card metadata takes it (e.g. cc-by-4.0, mit,
    apache-2.0, other): lower-case letters, digits, '.', '-' and '+'."""
    if not re.fullmatch(r"[a-z0-9][a-z0-9.+-]{0,63}", license_id):
        raise InputError(f"{license_id!r} is not a licence identifier. Fix: give one such as "
                         "cc-by-4.0, mit, apache-2.0 or other")
    return license_id


def write_hub_folder(instances: list[Instance], folder: str | Path, repo_id: str,
                     license_id: str = "cc-by-4.0", agreement: VettingAgreement | None = None,
                     vetting: dict | None = None, force: bool = False) -> list[Path]:
    """Write the Parquet files and the dataset card; returns the files written. Every
    check passes before anything is written: a folder holding files fbi did not write is
    refused unless ``force`` (then fbi writes beside them, never over them; see
    `fbi.outputs.claim_folder`). Parquet files of an earlier publish that fbi
    wrote there are removed, so the folder's fbi files are exactly what the card lists
    (and what [`upload`][fbi.vet.upload] sends)."""
    check_repo_id(repo_id)
    check_license(license_id)
    if not instances:
        raise InputError("the dataset is empty: nothing to publish. Fix: export a vetted "
                         "dataset with `fbi annotate export` first")
    folder = Path(folder)
    groups: dict[tuple[str, str], list[Instance]] = {}
    for instance in instances:
        groups.setdefault((config_of(instance), instance.category), []).append(instance)
    paths = {(config, category): f"data/{config}/{split_name(category)}.parquet"
             for config, category in groups}
    theirs = claim_folder(folder, ["README.md", *paths.values()], force)
    before = files_written(folder)
    written = []
    for key, members in sorted(groups.items()):
        written.append(write_dataset(members, folder / paths[key]))
    card = folder / "README.md"
    write_atomically(card, dataset_card(instances, groups, repo_id, license_id, agreement,
                                        vetting))
    now = {*paths.values(), "README.md"}
    for stale in before:  # fbi's own files of an earlier publish, no longer listed
        if stale not in now:
            (folder / stale).unlink(missing_ok=True)
    mark_written(folder, [card, *written], theirs, replace=True)
    return [card, *written]


def _size_category(n: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K")):
        if n < limit:
            return name
    return "100K<n<1M"


def dataset_card(instances: list[Instance], groups: dict[tuple[str, str], list[Instance]],
                 repo_id: str, license_id: str, agreement: VettingAgreement | None,
                 vetting: dict | None) -> str:
    """The dataset card (`README.md`): YAML metadata, the taxonomy and counts, how the set was
    made and vetted, and every column."""
    example_config = min(config for config, _ in groups)  # one the folder holds
    lines = [*_card_metadata(instances, groups, repo_id, license_id), "", f"# {repo_id}", "",
             "Gold answers with one deliberate error each, for finding the blind spots of LLM "
             "judges with the FBI method (Doddapaneni et al., *Finding Blind Spots in "
             "Evaluator LLMs with Interpretable Checklists*, EMNLP 2024), plus "
             "score-invariant rewrites that a fair judge must not penalise. Made with fbi.",
             "", "```python", "from datasets import load_dataset",
             f'ds = load_dataset("{repo_id}", "{example_config}")  # a config per '
             "ability, a split per category", "```", "",
             *_card_taxonomy(instances), "", "## How it was made", "",
             *_card_provenance(instances), "", "## How it was vetted", "",
             vetting_paragraph(Counter(i.label.value for i in instances), vetting),
             *_card_agreement(agreement),
             "", "## Columns", "", "| column | meaning |", "|---|---|",
             *(f"| `{name}` | {meaning} |" for name, meaning in COLUMN_DOCS)]
    return "\n".join(lines) + "\n"


def _card_metadata(instances: list[Instance], groups: dict[tuple[str, str], list[Instance]],
                   repo_id: str, license_id: str) -> list[str]:
    """The card's YAML front matter: licence, tags, size and one config per ability."""
    import yaml

    configs: dict[str, list[dict[str, str]]] = {}
    for config, category in sorted(groups):
        configs.setdefault(config, []).append(
            {"split": split_name(category),
             "path": f"data/{config}/{split_name(category)}.parquet"})
    metadata = {
        "license": license_id,
        "language": ["en"],
        "pretty_name": repo_id.split("/")[-1],
        "task_categories": ["text-generation", "text-classification"],
        "tags": ["llm-as-a-judge", "evaluation", "fbi", "perturbation"],
        "size_categories": [_size_category(len(instances))],
        "configs": [{"config_name": name, "data_files": files}
                    for name, files in configs.items()],
    }
    return ["---", yaml.safe_dump(metadata, sort_keys=False, allow_unicode=True).strip(), "---"]


def _card_taxonomy(instances: list[Instance]) -> list[str]:
    counts = Counter(i.category for i in instances)
    lines = ["## Taxonomy and counts", "",
             "| config | category | description | instances |", "|---|---|---|---|"]
    for category in CATEGORIES:
        if counts[category.name]:
            config = SCORE_INVARIANT if category.name == SCORE_INVARIANT else (
                category.ability.value if category.ability else "")
            lines.append(f"| {config} | {category.display_name} | {category.description} | "
                         f"{counts[category.name]} |")
    return [*lines, f"| | **total** | | **{len(instances)}** |", "",
            "Evaluation axes: " + "; ".join(f"{a.value} → {a.axis}" for a in Ability) + "."]


def _card_provenance(instances: list[Instance]) -> list[str]:
    generators = Counter(i.provenance.generator or "unknown" for i in instances)
    sources = Counter(source_name(i.provenance.source) if i.provenance.source else "unknown"
                      for i in instances)
    return ["- Perturbations by: " + ", ".join(f"`{g}` ({n})"
                                              for g, n in generators.most_common()),
            "- Gold answers from: " + ", ".join(f"`{s}` ({n})"
                                               for s, n in sources.most_common()),
            "- Rule-made perturbations are deterministic for their seed; LLM-made ones were "
            "asked to change only what their category names. Every candidate was "
            "pre-screened automatically (flags kept in the `flags` column)."]


def _card_agreement(agreement: VettingAgreement | None) -> list[str]:
    if agreement is None:
        return []
    overall = agreement.overall

    def fmt(value) -> str:
        return "n/a" if value is None else f"{value:.3f}"

    return ["", "| agreement | value |", "|---|---|",
            f"| items labelled by two or more annotators | {overall.items} |",
            f"| percent agreement | {fmt(overall.percent_agreement)} |",
            f"| Fleiss' κ | {fmt(overall.fleiss_kappa)} |",
            f"| Krippendorff's α (nominal) | {fmt(overall.krippendorff_alpha)} |",
            *(f"| Cohen's κ {p.a} × {p.b} | {fmt(p.cohen_kappa)} |" for p in agreement.pairs)]


def vetting_paragraph(labels: Counter, vetting: dict | None) -> str:
    """What the card may say about vetting: only what the labels and the queue show.

    Without the queue, the labels are listed and nothing is claimed about how they were
    reached. With it, each way a candidate was settled is counted, and candidates whose
    annotators disagreed and were never adjudicated are said to be so."""
    listed = ", ".join(f"{name} {count}" for name, count in sorted(labels.items()))
    text = f"Labels in this set: {listed}."
    if not vetting:
        return text + (" The vetting queue was not given to `fbi publish`, so how these "
                       "labels were reached is not recorded here.")
    ways = {"unanimous": "labelled alike by every annotator who saw them",
            "single": "labelled by one annotator",
            "adjudicated": "settled by adjudication after a disagreement",
            "disagreement": "with annotators who disagreed and no adjudication",
            "unlabelled": "never labelled"}
    counted = [f"{vetting[how]} {what}" for how, what in ways.items() if vetting.get(how)]
    text = (f"Candidates were labelled by people in fbi's vetting tool (valid, invalid, "
            f"score-invariant, not relevant, not sure): {vetting.get('candidates', 0)} in "
            f"the queue, {'; '.join(counted) or 'none labelled'}. " + text)
    if vetting.get("disagreement") or vetting.get("unlabelled"):
        text += (" Candidates without a settled label are not in this set unless they "
                 "were published from a file that gave them one.")
    return text


def upload(folder: str | Path, repo_id: str, private: bool = False,
           create_pr: bool = False) -> str:
    """Create the dataset repo if needed and upload the files fbi wrote in the folder
    (its marker's list: nothing else there, a ``.env`` or a user's notes, is sent);
    returns the commit URL."""
    from huggingface_hub import HfApi, get_token

    check_repo_id(repo_id)
    if get_token() is None:
        raise ConfigError("no Hugging Face token: set HF_TOKEN or run `hf auth login`; "
                          "use --dry-run to write the folder without uploading")
    files = files_written(folder)
    if not files:
        raise InputError(f"{folder}: holds no files that fbi wrote for publishing. Fix: "
                         "run `fbi publish` without --output, or into a new folder")
    api = HfApi()
    try:
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        commit = api.upload_folder(folder_path=str(folder), repo_id=repo_id,
                                   repo_type="dataset", create_pr=create_pr,
                                   allow_patterns=files,
                                   commit_message="Publish an FBI dataset with fbi")
    except Exception as error:  # network, auth, permissions: one clear message
        raise ModelError(f"upload to the Hub failed ({type(error).__name__}: "
                         f"{str(error).splitlines()[0][:200]}); the folder {folder} is "
                         "complete and can be uploaded again") from None
    return commit.pr_url or commit.commit_url
