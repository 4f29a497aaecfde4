"""A small HTTP server on 127.0.0.1 with the Hub endpoints create_repo and upload_folder use,
and the ones snapshot_download reads a dataset revision with.

It records what it receives: created repos, uploaded files (decoded), commit headers,
the Authorization headers, and every request path (unknown ones get a 404). Datasets to
serve are added with :meth:`HubServer.serve` (repo, revision, files).
"""

from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlparse


class HubServer:
    def __init__(self):
        self.repos: list[dict] = []
        self.files: dict[str, bytes] = {}
        self.commits: list[dict] = []
        self.authorization: set[str] = set()
        self.paths: list[str] = []
        self.validated: list[str] = []
        self.pull_requests: list[dict] = []
        # (repo, revision or commit sha) → (commit sha, {path: bytes})
        self.served: dict[tuple[str, str], tuple[str, dict[str, bytes]]] = {}
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _reply(self, status: int, payload: dict) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _send_file(self, data: bytes, sha: str, head: bool) -> None:
                import hashlib

                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("ETag", f'"{hashlib.sha1(data).hexdigest()}"')
                self.send_header("X-Repo-Commit", sha)
                self.end_headers()
                if not head:
                    self.wfile.write(data)

            def _dataset_read(self, head: bool = False) -> bool:
                """The read side of a dataset repo; False when the path is not one."""
                import hashlib

                path = unquote(urlparse(self.path).path)
                parts = path.strip("/").split("/")
                if parts[:2] == ["api", "datasets"] and len(parts) >= 6 and \
                        parts[4] in ("revision", "tree"):
                    repo, revision = "/".join(parts[2:4]), parts[5]
                    if (repo, revision) not in server.served:
                        self._reply(404, {"error": "Revision Not Found"})
                        return True
                    sha, files = server.served[(repo, revision)]
                    if parts[4] == "revision":
                        self._reply(200, {"id": repo, "sha": sha, "private": False,
                                          "siblings": [{"rfilename": f} for f in files]})
                    else:
                        self._reply(200, [{"type": "file", "path": f, "size": len(d),
                                           "oid": hashlib.sha1(d).hexdigest()}
                                          for f, d in sorted(files.items())])
                    return True
                if parts[:1] == ["datasets"] and len(parts) >= 6 and parts[3] == "resolve":
                    repo, revision, name = "/".join(parts[1:3]), parts[4], "/".join(parts[5:])
                    sha, files = server.served.get((repo, revision), ("", {}))
                    if name not in files:
                        self._reply(404, {"error": "Entry Not Found"})
                        return True
                    self._send_file(files[name], sha, head)
                    return True
                return False

            def do_HEAD(self) -> None:
                server.paths.append("HEAD " + unquote(urlparse(self.path).path))
                if not self._dataset_read(head=True):
                    self._reply(404, {"error": "not implemented in the test server"})

            def do_GET(self) -> None:
                path = unquote(urlparse(self.path).path)
                server.paths.append("GET " + path)
                if self._dataset_read():
                    return
                parts = path.strip("/").split("/")
                if len(parts) == 6 and parts[4] == "discussions" and server.pull_requests:
                    title = server.pull_requests[int(parts[5]) - 1]["title"]
                    return self._reply(200, {
                        "title": title, "num": int(parts[5]), "author": {"name": "tester"},
                        "createdAt": "2026-11-22T00:00:00.000Z", "status": "draft",
                        "repo": {"name": "/".join(parts[2:4]), "type": "dataset"},
                        "isPullRequest": True, "events": [], "filesWithConflicts": [],
                        "changes": {"base": "refs/heads/main"}, "diff": ""})
                self._reply(404, {"error": "not implemented in the test server"})

            def do_POST(self) -> None:
                url = urlparse(self.path)
                path = unquote(url.path)
                server.paths.append("POST " + path)
                server.authorization.add(self.headers.get("Authorization", ""))
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                parts = path.strip("/").split("/")
                if path == "/api/repos/create":
                    request = json.loads(body)
                    server.repos.append(request)
                    repo = f"{request.get('organization')}/{request['name']}"
                    return self._reply(200, {"url": f"{server.url}/datasets/{repo}",
                                             "name": repo})
                if path == "/api/validate-yaml":  # the card's metadata must be valid YAML
                    import yaml

                    content = json.loads(body)["content"]
                    try:
                        yaml.safe_load(content.split("---")[1])
                    except (IndexError, yaml.YAMLError) as error:
                        return self._reply(400, {"errors": [{"message": str(error)}]})
                    server.validated.append(content)
                    return self._reply(200, {"errors": [], "warnings": []})
                if len(parts) == 5 and parts[4] == "discussions":  # a pull request
                    server.pull_requests.append(json.loads(body))
                    return self._reply(200, {"num": len(server.pull_requests)})
                if len(parts) >= 6 and parts[:2] == ["api", "datasets"] and \
                        parts[4] == "preupload":
                    files = json.loads(body)["files"]
                    return self._reply(200, {"files": [
                        {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                        for f in files], "commitOid": "0" * 40})
                if len(parts) >= 6 and parts[:2] == ["api", "datasets"] and \
                        parts[4] == "commit":
                    header = {}
                    for line in body.decode().splitlines():
                        item = json.loads(line)
                        if item["key"] == "header":
                            header = item["value"]
                        elif item["key"] == "file":
                            value = item["value"]
                            server.files[value["path"]] = base64.b64decode(value["content"])
                    revision = "/".join(parts[5:])
                    create_pr = parse_qs(url.query).get("create_pr") == ["1"]
                    server.commits.append({"header": header, "revision": revision,
                                           "create_pr": create_pr})
                    repo = "/".join(parts[2:4])
                    reply = {"commitUrl": f"{server.url}/datasets/{repo}/commit/{'a' * 40}",
                             "commitOid": "a" * 40}
                    if create_pr:
                        reply["pullRequestUrl"] = f"{server.url}/datasets/{repo}/discussions/1"
                    return self._reply(200, reply)
                return self._reply(404, {"error": "not implemented in the test server"})

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 128

        self._httpd = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def serve(self, repo: str, revision: str, files: dict[str, bytes]) -> str:
        """Serve ``files`` as ``repo`` at ``revision`` (and at its commit sha, returned)."""
        import hashlib

        sha = hashlib.sha1(f"{repo}@{revision}".encode()).hexdigest()
        self.served[(repo, revision)] = self.served[(repo, sha)] = (sha, files)
        return sha

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> HubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
