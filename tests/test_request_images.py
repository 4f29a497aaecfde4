"""Issue 67, item 4: images in model requests — each protocol's request shape as its
loopback server receives it (fbi's own transport to an OpenAI-protocol server; litellm's
Anthropic and Gemini providers pointed at servers speaking theirs), the batch services'
native bodies, the cache key, the providers' limits and judges that cannot see."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import json

import pytest

pytest.importorskip("PIL", reason="Pillow is the images extra")
from anthropic_server import AnthropicServer
from gemini_server import GeminiServer
from openai_server import ChatServer, hashed_verdict_script
from PIL import Image

from fbi.errors import ConfigError, FbiWarning, InputError
from fbi.providers import ModelClient, ModelRequest
from fbi.providers._images import (
    IMAGE_MARK,
    LIMITS,
    ImageLimits,
    RequestImage,
    fitted,
)


def image(colour: str, size: tuple[int, int] = (8, 6)) -> RequestImage:
    out = io.BytesIO()
    Image.new("RGB", size, colour).save(out, format="PNG")
    data = out.getvalue()
    return RequestImage(hashlib.sha256(data).hexdigest(), *size, data)


RED, BLUE = image("red"), image("blue")
ASKED = (("system", "Grade the answer."),
         ("user", f"Question: what colour?{IMAGE_MARK}\nAnswer A:{IMAGE_MARK} end"))


def request(model: str, api_base: str, images=(RED, BLUE)) -> ModelRequest:
    return ModelRequest(model=model, messages=ASKED, api_base=api_base, max_tokens=50,
                        images=images)


def sent_png(data: str) -> bytes:
    return base64.b64decode(data)


def test_fbi_s_transport_sends_openai_content_parts_in_the_marks_places(tmp_path):
    seen = []

    def script(body: dict) -> str:
        seen.append(body)
        return hashed_verdict_script(body)

    with ChatServer(script) as server:
        client = ModelClient(api_key="sk-test")
        reply = asyncio.run(client.complete(request("openai/vision", server.url)))
    assert reply.text
    (body,) = seen
    assert body["messages"][0] == {"role": "system", "content": "Grade the answer."}
    parts = body["messages"][1]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url", "text", "image_url", "text"]
    assert parts[0]["text"] == "Question: what colour?" and parts[4]["text"] == " end"
    for part, expected in ((parts[1], RED), (parts[3], BLUE)):
        head, data = part["image_url"]["url"].split(",", 1)
        assert head == "data:image/png;base64" and sent_png(data) == expected.data


def live_request(monkeypatch, server_class, model: str, key: tuple[str, str]) -> dict:
    """What a loopback server speaking the provider's protocol received of one live
    call made through litellm."""
    monkeypatch.setenv(*key)
    with server_class() as server:
        asyncio.run(ModelClient().complete(request(model, server.url)))
        (received,) = server.live_requests
    return received


def test_litellm_s_anthropic_provider_gets_image_blocks(monkeypatch):
    params = live_request(monkeypatch, AnthropicServer, "anthropic/claude-haiku-4-5",
                          ("ANTHROPIC_API_KEY", "sk-ant-test"))
    content = params["messages"][0]["content"]
    kinds = [block["type"] for block in content]
    assert kinds.count("image") == 2 and kinds.count("text") >= 2
    images = [block for block in content if block["type"] == "image"]
    assert [sent_png(b["source"]["data"]) for b in images] == [RED.data, BLUE.data]
    assert all(b["source"]["type"] == "base64" and b["source"]["media_type"] == "image/png"
               for b in images)


def test_litellm_s_gemini_provider_gets_inline_data(monkeypatch):
    sent = live_request(monkeypatch, GeminiServer, "gemini/gemini-2.5-flash",
                        ("GEMINI_API_KEY", "test-key"))
    parts = [p for content in sent["contents"] for p in content["parts"]]
    inline = [p.get("inline_data") or p.get("inlineData") for p in parts
              if "inline_data" in p or "inlineData" in p]
    assert [sent_png(d["data"]) for d in inline] == [RED.data, BLUE.data]
    assert all((d.get("mime_type") or d.get("mimeType")) == "image/png" for d in inline)


def test_the_batch_services_carry_images_in_their_native_bodies():
    """Each SDK submits the line to its loopback server, which holds what it got."""
    pytest.importorskip("anthropic", reason="the anthropic extra")
    pytest.importorskip("google.genai", reason="the gemini extra")
    from fbi.providers._batch_services import AnthropicBatches, GeminiBatches

    client = ModelClient(api_key="sk-test")
    body = client.batch_body(request("anthropic/claude-haiku-4-5", None), "claude")
    with AnthropicServer() as server:
        service = AnthropicBatches("anthropic/claude-haiku-4-5", "claude-haiku-4-5",
                                   server.url, "sk-ant-test", 30)
        service.tag = "t"
        service.submit([service.line("c1", body)], b"", {"fbi_run": "r"})
        ((sent,),) = [b["requests"] for b in server.batches.values()]
    params = sent["params"]
    assert params["system"] == "Grade the answer."
    blocks = params["messages"][0]["content"]
    assert [b["type"] for b in blocks] == ["text", "image", "text", "image", "text"]
    assert sent_png(blocks[1]["source"]["data"]) == RED.data
    with GeminiServer() as server:
        service = GeminiBatches("gemini/gemini-2.5-flash", "gemini-2.5-flash", server.url,
                                "test-key", 30)
        service.submit([service.line("c1", body)], b"", {"fbi_run": "r"})
        ((sent,),) = [b["requests"] for b in server.batches.values()]
    parts = sent["request"]["contents"][0]["parts"] if "request" in sent else \
        sent["contents"][0]["parts"]
    inline = [p.get("inlineData") or p.get("inline_data") for p in parts
              if "inlineData" in p or "inline_data" in p]
    assert [sent_png(d["data"]) for d in inline] == [RED.data, BLUE.data]
    assert [("text" in p) for p in parts] == [True, False, True, False, True]


def test_the_cache_key_and_prompt_hash_name_the_images_bytes():
    a = request("openai/vision", "http://x")
    same = ModelRequest(model="openai/vision", messages=ASKED, api_base="http://x",
                        max_tokens=50, images=(image("red"), image("blue")))
    swapped = request("openai/vision", "http://x", images=(BLUE, RED))
    assert a.cache_key() == same.cache_key() and a.prompt_hash() == same.prompt_hash()
    assert a.cache_key() != swapped.cache_key() and a.prompt_hash() != swapped.prompt_hash()
    # the key is json.dumps of its fields, the images' hashes among them
    fields = {"model": "openai/vision", "messages": [list(m) for m in ASKED],
              "temperature": 0.0, "max_tokens": 50, "response_schema": None,
              "api_base": "http://x", "images": [RED.sha256, BLUE.sha256]}
    canonical = json.dumps(fields, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert a.cache_key() == hashlib.sha256(canonical.encode()).hexdigest()
    with pytest.raises(ValueError, match="2 image marks for 1 images"):
        ModelRequest(model="openai/x", messages=ASKED, images=(RED,))
    with pytest.raises(ValueError, match="1 image marks for 0 images"):
        ModelRequest(model="openai/x", messages=(("user", f"a{IMAGE_MARK}"),))


def test_a_judge_that_cannot_see_is_refused_before_any_call():
    client = ModelClient(api_key="sk-test")
    with pytest.raises(ConfigError, match="local/smollm2-135m cannot see images"):
        client._arguments(request("local/smollm2-135m", None))
    with pytest.raises(ConfigError, match="cannot see images"):
        client._arguments(request("reward/skywork", "http://x"))


def test_an_image_over_a_side_limit_is_scaled_down_and_said():
    big = image("green", (9000, 30))
    with pytest.warns(FbiWarning, match="1 image\\(s\\) scaled down to 8000 px"):
        (out,) = fitted("anthropic/claude-haiku-4-5", (big,))
    assert (out.width, out.height) == (8000, 27)  # aspect kept: 30 · 8000/9000 = 26.7
    assert Image.open(io.BytesIO(out.data)).size == (8000, 27)
    assert out.sha256 == hashlib.sha256(out.data).hexdigest()
    assert fitted("openai/gpt-4o", (big,)) == (big,)  # OpenAI scales it itself
    # past 20 images in one request, Anthropic's side limit is 2,000 px
    crowd = (image("red", (2500, 10)),) + (RED,) * 20
    with pytest.warns(FbiWarning, match="scaled down to 2000 px"):
        assert fitted("anthropic/claude-haiku-4-5", crowd)[0].width == 2000


def test_too_many_images_or_bytes_are_refused(monkeypatch):
    with pytest.raises(InputError, match="101 images; its provider takes 100"):
        fitted("claude-sonnet-4", (RED,) * 101)
    monkeypatch.setitem(LIMITS, "gemini", ImageLimits(max_bytes=len(RED.data) + 10,
                                                      max_count=10, per_request=True))
    assert fitted("gemini/gemini-2.5-flash", (RED,))
    with pytest.raises(InputError, match="together; its provider takes"):
        fitted("gemini/gemini-2.5-flash", (RED, BLUE))
