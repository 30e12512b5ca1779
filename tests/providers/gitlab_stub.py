"""A local stand-in for the subset of GitLab's REST API the sync and pipeline providers use:
repository tree (paginated), branches, commits with actions, pipelines and their jobs."""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlparse

from providers.gitlab_sync import blob_id
from tests.providers.engine import free_port

TOKEN = "glpat-stub-token-value-0123456789"


@dataclass
class Repository:
    files: dict[str, str] = field(default_factory=dict)
    commits: list[dict[str, Any]] = field(default_factory=list)
    pipelines: list[dict[str, Any]] = field(default_factory=list)
    jobs: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    page_size: int = 2
    next_status: str = "success"
    """How a pipeline started through the API ends."""
    posts: list[str] = field(default_factory=list)
    """Paths of the pipeline runs asked for."""

    def head(self) -> str:
        return self.commits[-1]["id"] if self.commits else ""


class GitLabStub(http.server.BaseHTTPRequestHandler):
    repository: Repository

    def _reply(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _authorised(self) -> bool:
        if self.headers.get("PRIVATE-TOKEN") != TOKEN:
            self._reply(401, {"message": "401 Unauthorized"})
            return False
        return True

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        if not self._authorised():
            return
        url = urlparse(self.path)
        query = parse_qs(url.query)
        repo = self.repository
        if url.path.endswith("/repository/tree"):
            if not repo.commits:
                self._reply(404, {"message": "404 Tree Not Found"})
                return
            entries = [{"path": path, "type": "blob", "id": blob_id(content)} for path, content in sorted(repo.files.items())]
            page = int(query.get("page", ["1"])[0])
            start = (page - 1) * repo.page_size
            more = start + repo.page_size < len(entries)
            self._reply(200, entries[start : start + repo.page_size], {"X-Next-Page": str(page + 1) if more else ""})
        elif "/repository/branches/" in url.path:
            self._reply(200, {"name": "main", "commit": {"id": repo.head()}})
        elif url.path.endswith("/jobs"):
            pipeline = int(url.path.split("/pipelines/")[1].split("/")[0])
            self._reply(200, repo.jobs.get(pipeline, []))
        elif "/pipelines/" in url.path:
            pipeline = int(url.path.rsplit("/", 1)[1])
            self._reply(200, next(p for p in repo.pipelines if p["id"] == pipeline))
        elif url.path.endswith("/pipelines"):
            sha = query.get("sha", [""])[0]
            self._reply(200, [p for p in reversed(repo.pipelines) if p["sha"] == sha])
        else:
            self._reply(404, {"message": "404 Not Found"})

    def do_POST(self) -> None:  # noqa: N802
        if not self._authorised():
            return
        repo = self.repository
        url = urlparse(self.path)
        if url.path.endswith("/retry") or url.path.endswith("/pipeline"):
            # A new run ends as `next_status` (the stub's stand-in for the jobs running again).
            if url.path.endswith("/retry"):
                old = next(p for p in repo.pipelines if p["id"] == int(url.path.split("/")[-2]))
                run = {**old, "status": repo.next_status}
            else:
                run = {"id": 100 + len(repo.pipelines), "sha": repo.head(), "status": repo.next_status}
                run["web_url"] = f"https://gitlab/p/-/pipelines/{run['id']}"
                repo.pipelines.append(run)
            repo.posts.append(url.path)
            repo.pipelines = [run if p["id"] == run["id"] else p for p in repo.pipelines]
            self._reply(201, run)
            return
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        for action in body["actions"]:
            if action["action"] == "delete":
                repo.files.pop(action["file_path"])
            else:
                repo.files[action["file_path"]] = action["content"]
        sha = hashlib.sha1(json.dumps([len(repo.commits), body], sort_keys=True).encode(), usedforsecurity=False).hexdigest()
        repo.commits.append({"id": sha, "message": body["commit_message"], "actions": body["actions"]})
        self._reply(201, {"id": sha})

    def log_message(self, *_: Any) -> None:
        return


@contextmanager
def gitlab_stub(repository: Repository) -> Iterator[str]:
    handler = type("Stub", (GitLabStub,), {"repository": repository})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
