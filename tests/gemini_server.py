"""A real HTTP server on 127.0.0.1 speaking the Gemini API's ``generateContent`` and its
batch mode (``batchGenerateContent`` with inline requests; ``batches/N`` get, list and
cancel), for the official ``google-genai`` SDK and litellm's Gemini provider pointed at it.

A batch's state goes PENDING → SUCCEEDED after ``steps`` gets; its responses come inline,
each with its request's ``metadata``. Faults: ``forge_next`` (a forged response for the
first request, before its real one), ``corrupt_next`` (responses without candidates),
``error_next`` (requests that failed).
"""

from __future__ import annotations

import threading
from urllib.parse import urlparse

from json_http import JSONHandler, LoopbackServer
from openai_server import hashed_verdict_script


def reply_text(request: dict) -> str:
    """The OpenAI-protocol judge script on the same texts (system first)."""
    messages = []
    system = request.get("systemInstruction") or request.get("system_instruction")
    if system:
        messages.append({"role": "system", "content": "".join(
            p.get("text", "") for p in system.get("parts", []))})
    for content in request.get("contents", []):
        messages.append({"role": "user", "content": "".join(
            p.get("text", "") for p in content.get("parts", []))})
    return hashed_verdict_script({"messages": messages})


def generated(request: dict, text: str | None = None, model: str = "gemini-test") -> dict:
    text = reply_text(request) if text is None else text
    prompt = sum(len(p.get("text", "").split()) for c in request.get("contents", [])
                 for p in c.get("parts", []))
    return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": prompt,
                              "candidatesTokenCount": len(text.split()),
                              "totalTokenCount": prompt + len(text.split())},
            "modelVersion": model}


class GeminiServer:
    def __init__(self, steps: int = 2):
        self.steps = steps
        self.batches: dict[str, dict] = {}
        self.live_requests: list[dict] = []
        self.forge_next: str | None = None
        self.corrupt_next = 0
        self.error_next = 0
        #: the model the next batch's results name (a real server names the one asked)
        self.served_as_next: str | None = None
        #: the prompt token count of the next batch's first result (a lie: "many")
        self.usage_next: object = None
        self.lock = threading.Lock()
        server = self

        class Handler(JSONHandler):
            def do_POST(self) -> None:
                path = urlparse(self.path).path
                if path.endswith(":generateContent"):
                    request = self.json_body()
                    server.live_requests.append(request)
                    model = path.split("/")[-1].split(":")[0]
                    return self.send_json(200, generated(request, model=model))
                if path.endswith(":batchGenerateContent"):
                    body = self.json_body()["batch"]
                    return self.send_json(200, server.create(path.split("/")[-1].split(":")[0],
                                                         body))
                if path.endswith(":cancel"):
                    name = path.split("/")[-1].removesuffix(":cancel")
                    with server.lock:
                        if name in server.batches:
                            server.batches[name]["cancel"] = True
                    return self.send_json(200, {})
                return self.send_json(404, {"error": {"code": 404, "message": path}})

            def do_GET(self) -> None:
                path = urlparse(self.path).path.rstrip("/")
                if path.endswith("/batches"):
                    return self.send_json(200, {"operations": [
                        server.public(n) for n in reversed(list(server.batches))]})
                name = path.split("/")[-1]
                if name in server.batches:
                    return self.send_json(200, server.get(name))
                return self.send_json(404, {"error": {"code": 404, "message": path}})

        self._httpd = LoopbackServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_port}"

    def create(self, model: str, batch: dict) -> dict:
        with self.lock:
            name = str(len(self.batches) + 1)
            self.batches[name] = {"model": model, "display": batch.get("displayName", ""),
                                  "requests": batch["inputConfig"]["requests"]["requests"],
                                  "gets": 0, "state": "BATCH_STATE_PENDING", "cancel": False}
        return self.public(name)

    def get(self, name: str) -> dict:
        with self.lock:
            batch = self.batches[name]
            batch["gets"] += 1
            if batch["state"] == "BATCH_STATE_PENDING" and (
                    batch["gets"] >= self.steps or batch["cancel"]):
                batch["state"] = "BATCH_STATE_CANCELLED" if batch["cancel"] \
                    else "BATCH_STATE_SUCCEEDED"
                batch["output"] = self._answer(batch)
        return self.public(name)

    def _answer(self, batch: dict) -> list[dict]:
        if batch["cancel"]:
            return []
        forge, self.forge_next = self.forge_next, None
        errors, self.error_next = self.error_next, 0
        corrupt, self.corrupt_next = self.corrupt_next, 0
        model, self.served_as_next = self.served_as_next or batch["model"], None
        usage, self.usage_next = self.usage_next, None
        out = []
        for number, item in enumerate(batch["requests"]):
            metadata = item.get("metadata", {})
            if forge and number == 0:
                out.append({"response": generated(item["request"], forge, model),
                            "metadata": metadata})
            if number < errors:
                out.append({"error": {"code": 400, "message": "bad request"},
                            "metadata": metadata})
            elif number < errors + corrupt:
                out.append({"response": {"usageMetadata": {}}, "metadata": metadata})
            else:
                out.append({"response": generated(item["request"], model=model),
                            "metadata": metadata})
                if usage is not None and number == 0:
                    out[-1]["response"]["usageMetadata"]["promptTokenCount"] = usage
        return out

    def public(self, name: str) -> dict:
        batch = self.batches[name]
        metadata = {"@type": "type.googleapis.com/google.ai.generativelanguage.v1main."
                             "GenerateContentBatch",
                    "displayName": batch["display"], "state": batch["state"],
                    "model": f"models/{batch['model']}", "name": f"batches/{name}",
                    "createTime": "2026-11-26T00:00:00Z"}
        if "output" in batch:
            metadata["output"] = {"inlinedResponses": {"inlinedResponses": batch["output"]}}
        return {"name": f"batches/{name}", "metadata": metadata,
                "done": batch["state"] != "BATCH_STATE_PENDING"}

    def __enter__(self) -> GeminiServer:
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
