"""Options from a file (`--config FILE.yaml`) or from a run folder (`--resume RUN`).

Both fill click's ``default_map``: a flag on the command line still wins. A config file
uses the flags' own names (``strategy: [vanilla, pairwise]``, ``max-tokens: 200``; dashes
or underscores); an unknown key is an error with the closest valid one. ``--resume``
rebuilds the options a run folder's ``run.json`` records.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import click

from fbi.files import read_text


def _multiple(command: click.Command) -> set[str]:
    """Parameter names of the options that may be given several times."""
    return {p.name for p in command.params if getattr(p, "multiple", False) and p.name}


def _keys(command: click.Command) -> dict[str, str]:
    """Every flag name (without dashes, dashes as underscores) → its parameter name."""
    keys = {}
    for param in command.params:
        for opt in getattr(param, "opts", []):
            if opt.startswith("--"):
                keys[opt[2:].replace("-", "_")] = param.name
    return keys


_SCALARS = (str, int, float, bool)


def _defaults(ctx: click.Context, options: dict[str, Any], where: str) -> None:
    keys = _keys(ctx.command)
    params = {p.name: p for p in ctx.command.params}
    mapped = {}
    for key, value in options.items():
        name = keys.get(str(key).replace("-", "_"))
        if name is None or name in ("config", "resume"):
            close = difflib.get_close_matches(str(key).replace("-", "_"), keys, n=1)
            hint = f" Did you mean {close[0].replace('_', '-')!r}?" if close else ""
            raise click.BadParameter(f"{where}: unknown option {key!r}.{hint}")
        # one value for a repeatable option (api-base: URL) is a list of one
        if name in _multiple(ctx.command) and isinstance(value, _SCALARS):
            value = [value]
        mapped[name] = _checked(ctx, params[name], key, value, where)
    ctx.default_map = {**(ctx.default_map or {}), **mapped}


def _checked(ctx: click.Context, param: click.Parameter, key: Any, value: Any,
             where: str) -> Any:
    """``value`` for ``param``, of the shape and type the option takes: one value (a list
    for a repeatable option, of single values), converted as the flag would be. A config
    file is input like a flag: a list where a number goes is one message, not a
    traceback."""
    repeatable = getattr(param, "multiple", False)
    values = value if repeatable and isinstance(value, list) else [value]
    if value is None or not all(isinstance(v, _SCALARS) for v in values) or \
            (isinstance(value, list) and not repeatable):
        shape = "a list of single values" if repeatable else "a single value"
        raise click.BadParameter(f"{where}: {key}: {value!r} is not {shape}. Fix: write "
                                 f"{key}: VALUE" + (" or a list of them" if repeatable
                                                    else ""))
    for single in values:
        wanted = _wanted_type(param)
        if isinstance(single, bool) != (wanted == "true or false") or not isinstance(
                single, _PYTHON_TYPES[wanted]):
            raise click.BadParameter(f"{where}: {key}: {single!r} is not {wanted}. Fix: "
                                     f"write {key}: {_EXAMPLES[wanted]}")
    try:
        param.type_cast_value(ctx, value)
    except click.BadParameter as error:
        raise click.BadParameter(f"{where}: {key}: {error.message}") from None
    except (TypeError, ValueError) as error:
        raise click.BadParameter(f"{where}: {key}: {value!r} ({error})") from None
    return value


#: What a config file's value must already be for each kind of option: a config file is
#: read exactly, as a dataset is (8.0 is no count, "0.5" no number, true no label).
_PYTHON_TYPES: dict[str, type | tuple[type, ...]] = {
    "true or false": bool, "a whole number": int, "a number": (int, float), "text": str}
_EXAMPLES = {"true or false": "true", "a whole number": "8", "a number": "0.5",
             "text": "'TEXT' (in quotes when it looks like a number or true/false)"}


def _wanted_type(param: click.Parameter) -> str:
    kind = param.type
    if getattr(param, "is_flag", False) or isinstance(kind, click.types.BoolParamType):
        return "true or false"
    if isinstance(kind, click.types.IntParamType):
        return "a whole number"
    if isinstance(kind, click.types.FloatParamType):
        return "a number"
    return "text"


def load_config(ctx: click.Context, param: click.Parameter, value: Path | None) -> None:
    """--config FILE.yaml: every option from a file."""
    if value is None:
        return
    from fbi.errors import InputError
    from fbi.user_yaml import load_user_yaml

    try:
        options = load_user_yaml(read_text(value), str(value)) or {}
    except (OSError, UnicodeDecodeError) as error:
        raise click.BadParameter(f"{value}: not a readable YAML file ({error})") from None
    except InputError as error:
        raise click.BadParameter(str(error)) from None
    if not isinstance(options, dict):
        raise click.BadParameter(f"{value}: give a mapping of option: value")
    _defaults(ctx, options, str(value))


def resume_run(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """--resume RUN: the options RUN/run.json records, into RUN unless --output says
    otherwise."""
    if value is None:
        return None
    from fbi.runs import read_spec

    spec = read_spec(value / "run.json")
    if spec is None or spec.kind != "evaluate":
        raise click.BadParameter(f"{value}: no evaluate run here (no run.json)")
    _defaults(ctx, options_of(spec, value), str(value / "run.json"))
    return value


def options_of(spec, folder: Path) -> dict[str, Any]:
    """The `fbi evaluate` options that remake the run a spec describes (click's
    default_map: flag names to values). A secret model argument's value is not in
    run.json: the command asks for it (fbi.cli.evaluate.check_resumable)."""
    from fbi.judge import recorded_explanation_chars
    from fbi.redaction import SECRET_PLACEHOLDER

    selection, parameters, settings = spec.selection, spec.parameters, spec.settings
    origins = {p.origin for p in spec.prompts.values()} - {"built-in", None}
    options: dict[str, Any] = {
        "judge": spec.model, "dataset": spec.dataset.spec,
        "strategy": list(spec.prompts), "ability": selection.abilities or [],
        "category": selection.categories or [],
        "include_extra": bool(selection.include_extra),
        "limit": selection.limit, "temperature": parameters.temperature,
        "max_tokens": parameters.max_tokens, "seed": parameters.seed,
        "explanation_chars": recorded_explanation_chars(parameters),
        "samples": parameters.samples, "protocol": parameters.protocol,
        "logprobs": True if parameters.logprobs else None,
        "model_arg": [f"{k}={_json(v)}" for k, v in (parameters.model_args or {}).items()
                      if v != SECRET_PLACEHOLDER],
        "api_base": settings.api_pool or ([spec.api_base] if spec.api_base else None),
        "timeout": settings.timeout_s, "retries": settings.retries,
        "concurrency": settings.concurrency, "repair": settings.repair,
        "max_cost": settings.max_cost, "label": spec.label, "output": str(folder),
        "prompts": origins.pop() if len(origins) == 1 else None,
    }
    if settings.score_range:
        low, high = settings.score_range
        options["score_range"] = f"{low}-{high}"
    if selection.columns:
        options["columns"] = ",".join(f"{k}={v}" for k, v in selection.columns.items())
    if selection.sample is not None:
        options.update(sample=selection.sample, sample_seed=selection.sample_seed,
                       sample_by=selection.sample_by)
    return {key: value for key, value in options.items() if value is not None}


def _json(value: Any) -> str:
    import json

    return value if isinstance(value, str) else json.dumps(value)
