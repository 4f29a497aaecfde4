"""Issue 39 (one ModelSettings for every stage) and issue 38 (options and secrets): the
settings refuse what no call can use, and a secret model argument is never written."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner
from openai_server import ChatServer

from fbi.cli import main
from fbi.errors import FbiError, InputError
from fbi.settings import ModelSettings, parse_model_arg


@pytest.mark.parametrize("fields, said", [
    ({"model": ""}, "model"),
    ({"temperature": math.nan}, "temperature"),
    ({"temperature": -1}, "temperature"),
    ({"max_tokens": 0}, "max_tokens"),
    ({"concurrency": 10_000}, "concurrency"),
    ({"timeout_s": math.inf}, "timeout_s"),
    ({"max_cost": -0.5}, "max_cost"),
    ({"rpm": 0}, "rpm"),
    ({"model_args": {"top_p": math.nan}}, "top_p=nan: not a finite number"),
    ({"model_args": {"logit_bias": {"50256": -math.inf}}}, "not a finite number"),
    ({"model_args": {"extra": [1.0, math.inf]}}, "not a finite number"),
    ({"model_args": {"temperature": 0.5}}, "'temperature' is set by its own option"),
    ({"model_args": {"callback": object()}}, "is not a JSON value"),
    ({"api_base": "http://a/v1", "api_pool": ("http://b/v1", "http://a/v1")},
     "api_base must be the pool's first server"),
    ({"api_base": "http://a/v1", "api_pool": ("http://a/v1", "http://a/v1")},
     "names a server twice"),
])
def test_settings_refuse_what_no_call_can_use(fields, said):
    """A Python caller gets the CLI's refusals, as an FbiError naming the field."""
    with pytest.raises(InputError) as refused:
        ModelSettings(**{"model": "openai/m", **fields})
    assert isinstance(refused.value, FbiError) and said in str(refused.value)


@pytest.mark.parametrize("item, said", [
    ("top_p=NaN", "NaN is not a finite number"),
    ("top_p=Infinity", "Infinity is not a finite number"),
    ("top_p=-Infinity", "-Infinity is not a finite number"),
    ("top_p=1e999", "inf is not a finite number"),
    ('logit_bias={"1": NaN}', "NaN is not a finite number"),
    ("=3", "is not KEY=VALUE"),
    ("top_p", "is not KEY=VALUE"),
])
def test_model_args_with_non_finite_numbers_are_refused(item, said):
    with pytest.raises(InputError, match="--model-arg") as refused:
        parse_model_arg(item)
    assert said in str(refused.value)


def test_model_args_read_as_json_where_they_parse():
    assert parse_model_arg("top_p=0.9") == ("top_p", 0.9)
    assert parse_model_arg("stop=[\"a\"]") == ("stop", ["a"])
    assert parse_model_arg("reasoning_effort=low") == ("reasoning_effort", "low")
    assert parse_model_arg("api_version=2024-06-01") == ("api_version", "2024-06-01")


def test_secret_arguments_are_recorded_as_secret_and_their_values_kept_out():
    from fbi.redaction import redact

    settings = ModelSettings(model="openai/m", model_args={
        "aws_secret_access_key": "wJalrXUtnFEMIK7MDENG/bPxRfiCY", "top_p": 0.9,
        "extra_headers": {"X-Api-Token": "tok-5f1e2d3c4b5a"},
        "max_completion_tokens": 300})
    assert settings.recorded_model_args() == {
        "aws_secret_access_key": "[secret]", "extra_headers": "[secret]",
        "max_completion_tokens": 300, "top_p": 0.9}
    assert sorted(settings.secret_arg_names) == ["aws_secret_access_key", "extra_headers"]
    # from now on, any text fbi takes in is cleared of them, in any URL encoding too
    assert "wJalrX" not in redact("the key wJalrXUtnFEMIK7MDENG%2FbPxRfiCY was wrong")
    assert "tok-5f1e" not in redact("header X-Api-Token: tok-5f1e2d3c4b5a")


def test_no_secret_passed_with_model_arg_reaches_a_file_or_the_console(tmp_path):
    """Issue 38: a header, an AWS key and a token given with --model-arg are sent (the
    server sees them) but never written: not in run.json (its parameters or its command
    line), the judgments, the cache, nor printed; --resume asks for them again."""
    secrets = {"aws_secret_access_key": "wJalrXUtnFEMI/K7MDENG+bPxRfiCY",
               "azure_ad_token": "eyJhbGciOiJIUzI1NiJ9.secret.part",
               "header": "hdr-9d8c7b6a5f4e3d2c"}
    seen: list[dict] = []

    def judge(request: dict) -> str:
        seen.append(request)
        return '{"explanation": "ok", "score": 5}'

    with ChatServer(script=judge) as server:
        args = ["evaluate", "--judge", "openai/judge", "--api-base", server.url, "--category",
                "entity", "--output", str(tmp_path / "run"),
                "--cache", str(tmp_path / "cache.sqlite"),
                "--model-arg", f"aws_secret_access_key={secrets['aws_secret_access_key']}",
                "--model-arg", f"azure_ad_token={secrets['azure_ad_token']}",
                "--model-arg", 'extra_headers={"X-Org-Key": "' + secrets["header"] + '"}',
                "--model-arg", "top_p=0.5"]
        result = CliRunner().invoke(main, args, env={"OPENAI_API_KEY": "sk-x"})
        assert result.exit_code == 0, result.output
        resumed = CliRunner().invoke(main, ["evaluate", "--resume", str(tmp_path / "run")],
                                     env={"OPENAI_API_KEY": "sk-x"})
    # sent: the secret body fields, and the header as a header (the server echoes none)
    judged = [r for r in seen if "Reply with OK" not in json.dumps(r)]
    assert judged and all(r["aws_secret_access_key"] == secrets["aws_secret_access_key"]
                          and r["top_p"] == 0.5 for r in judged)
    spec = json.loads((tmp_path / "run" / "run.json").read_text())
    assert spec["parameters"]["model_args"] == {
        "aws_secret_access_key": "[secret]", "azure_ad_token": "[secret]",
        "extra_headers": "[secret]", "top_p": 0.5}
    for path in tmp_path.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for value in secrets.values():
                assert value.encode() not in data, (path, value)
    for value in secrets.values():
        assert value not in result.output and value not in resumed.output
    assert resumed.exit_code == 2, resumed.output
    said = " ".join(resumed.output.split())
    assert "secret model arguments" in said and "aws_secret_access_key" in said


def test_a_password_in_a_model_argument_s_url_is_never_written(tmp_path):
    """Issue 63: a proxy URL with its password, given as a model argument's value and
    echoed back by the server in every reply: the argument is a secret one (run.json
    keeps "[secret]", --resume asks for it again), the password is redacted from the
    replies, and no file — run.json, the judgments, the response cache, an Inspect
    export, the view's pages — holds it."""
    password = "hunter2-proxy-pass-77"
    proxy = f"http://bob:{password}@proxy.example:3128"

    def judge(request: dict) -> str:
        return json.dumps({"explanation": f"via {request.get('proxy')}", "score": 5})

    with ChatServer(script=judge) as server:
        result = CliRunner().invoke(main, [
            "evaluate", "--judge", "openai/judge", "--api-base", server.url, "--category",
            "entity", "--output", str(tmp_path / "run"), "--cache",
            str(tmp_path / "cache.sqlite"), "--model-arg", f"proxy={proxy}"],
            env={"OPENAI_API_KEY": "sk-x"})
        assert result.exit_code == 0, result.output
        resumed = CliRunner().invoke(main, ["evaluate", "--resume", str(tmp_path / "run")],
                                     env={"OPENAI_API_KEY": "sk-x"})
    assert resumed.exit_code == 2 and "proxy" in resumed.output
    spec = json.loads((tmp_path / "run" / "run.json").read_text())
    assert spec["parameters"]["model_args"] == {"proxy": "[secret]"}
    judgments = (tmp_path / "run" / "judgments.jsonl").read_text()
    assert "[redacted]" in judgments
    exported = CliRunner().invoke(main, ["export", "inspect", str(tmp_path / "run"),
                                         "--output", str(tmp_path / "inspect")])
    from fbi.view import Viewer

    viewer = Viewer([tmp_path / "run"])
    (key,) = viewer.judge_keys([])
    pages = repr(viewer.runs_page()) + repr(viewer.grid_page([key], []))
    assert password not in pages
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert password.encode() not in path.read_bytes(), path
    assert password not in result.output + resumed.output + exported.output
