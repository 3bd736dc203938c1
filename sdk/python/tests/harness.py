"""Starts the real agentmemory binary for the tests (the conformance harness, sdk/conformance/README.md).

The binary is $AGENTMEMORY_BIN, else built once with ``go build`` from the repository root; the
Temporal CLI is $AGENTMEMORY_TEMPORAL_CLI, else <repo>/bin/temporal. Nothing here is part of
the installed package.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Dict, List, NamedTuple, Optional

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
CONFORMANCE = REPO / "sdk" / "conformance"

_built: Optional[str] = None


def binary() -> str:
    """Returns the path of the agentmemory binary, building it once when $AGENTMEMORY_BIN is unset."""
    global _built
    env_bin = os.environ.get("AGENTMEMORY_BIN")
    if env_bin:
        return env_bin
    if _built is None:
        out = Path(tempfile.mkdtemp(prefix="agentmemory-bin-")) / "agentmemory"
        subprocess.run(["go", "build", "-o", str(out), "./cmd/agentmemory"], cwd=str(REPO), check=True)
        _built = str(out)
    return _built


def temporal_cli() -> str:
    return os.environ.get("AGENTMEMORY_TEMPORAL_CLI") or str(REPO / "bin" / "temporal")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_json(method: str, url: str, key: str, body: Any = None, headers: Optional[Dict[str, str]] = None) -> Any:
    """One JSON request without the SDK (setup only); raises on a non-2xx answer."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Authorization", "Bearer " + key)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    with urllib.request.urlopen(req, timeout=30) as resp:
        raw = resp.read()
        return json.loads(raw) if raw else None


class DevServer:
    """``agentmemory dev`` on a fresh data dir and a free port; stop() and start() restart it.
    With ``fake_model`` it runs with ``--fake-model`` (the stand-in embedder for knowledge)."""

    def __init__(self, fake_model: bool = False) -> None:
        self.fake_model = fake_model
        self.dir = tempfile.mkdtemp(prefix="agentmemory-dev-")
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.proc: Optional[subprocess.Popen] = None
        self.log = open(os.path.join(self.dir, "dev.log"), "ab")
        self.admin_key = ""

    def _env(self) -> Dict[str, str]:
        env = dict(os.environ)
        env["AGENTMEMORY_TEMPORAL_CLI"] = temporal_cli()
        env.setdefault("OLLAMA_HOST", "http://127.0.0.1:1")
        return env

    def start(self) -> None:
        if self.proc is not None:
            return
        args = [binary(), "dev", "--addr", "127.0.0.1:%d" % self.port, "--data-dir", self.dir, "--temporal-ui-port", "0"]
        if self.fake_model:
            args.append("--fake-model")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=self.log, env=self._env())
        deadline = time.time() + 90
        while time.time() < deadline:
            if self.proc.poll() is not None:
                path = os.path.join(self.dir, "dev.log")
                with open(path, encoding="utf-8", errors="replace") as f:
                    tail = "".join(f.readlines()[-40:])
                raise RuntimeError("agentmemory dev exited (%s); the end of %s:\n%s" % (self.proc.returncode, path, tail))
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=2) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("agentmemory dev did not serve /healthz in 90 s")

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def close(self) -> None:
        self.stop()
        self.log.close()
        if not os.environ.get("AGENTMEMORY_KEEP_DATA"):
            shutil.rmtree(self.dir, ignore_errors=True)

    def create_space(self, name: str) -> str:
        out = subprocess.run([binary(), "space", "create", name, "--direct-put", "--data-dir", self.dir],
                             env=self._env(), check=True, capture_output=True, text=True).stdout
        self.admin_key = json.loads(out.strip().splitlines()[-1])["admin_key"]
        return self.admin_key

    def new_space(self, name: str) -> Dict[str, str]:
        """Creates another space (direct PUT on) without changing admin_key; returns its
        space_id and admin_key."""
        out = subprocess.run([binary(), "space", "create", name, "--direct-put", "--data-dir", self.dir],
                             env=self._env(), check=True, capture_output=True, text=True).stdout
        return json.loads(out.strip().splitlines()[-1])

    def open_bridge(self, source: Dict[str, str], reader: Dict[str, str], agents: List[str], boards: List[Dict[str, str]],
                    knowledge_bases: Optional[List[str]] = None) -> str:
        """Opens a bridge from space source to space reader (docs/boards.md "Bridges"): on each
        side a security person proposes it and a second one approves; returns its id. The
        bridge lists boards and, when given, knowledge_bases (base names of source)."""
        terms: Dict[str, Any] = {"from": source["space_id"], "to": reader["space_id"], "agents": agents}
        if boards:
            terms["boards"] = boards
        if knowledge_bases:
            terms["knowledge_bases"] = knowledge_bases
        for n, side in enumerate((source, reader)):
            keys = [http_json("POST", self.url + "/v1/keys", side["admin_key"],
                              {"kind": "person", "name": "security-%d-%d" % (n, i), "roles": ["security"]})["key"] for i in range(2)]
            prop = http_json("POST", self.url + "/v1/bridges", keys[0], terms)
            http_json("POST", self.url + "/v1/documents/bridges/changes/" + prop["change_id"] + "/approve", keys[1])
            terms["id"] = prop["bridge"]["id"]
        return terms["id"]

    def put_document(self, name: str, body: Any) -> None:
        http_json("PUT", self.url + "/v1/documents/" + name, self.admin_key, body)

    def mint_key(self, spec: Dict[str, Any]) -> str:
        return http_json("POST", self.url + "/v1/keys", self.admin_key, spec)["key"]


def load_setup() -> Dict[str, Any]:
    return json.loads((CONFORMANCE / "setup.json").read_text())


def load_cases() -> List[Dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((CONFORMANCE / "cases").glob("*.json"))]


def setup_space(server: DevServer, knowledge: bool = False) -> Dict[str, Any]:
    """Creates the space of setup.json and PUTs its documents; with ``knowledge`` (the server
    needs ``fake_model`` to embed) also creates its knowledge bases with their documents
    ingested, and ``setup["bases"]`` maps each base's name to its id. Returns setup.json."""
    setup = load_setup()
    server.create_space(setup["space_name"])
    for doc in setup["documents"]:
        server.put_document(doc["name"], doc["body"])
    setup["bases"] = {}
    for kb in setup.get("knowledge", []) if knowledge else []:
        setup["bases"][kb["name"]] = knowledge_base(server, server.admin_key, kb)
    return setup


def knowledge_base(server: DevServer, admin_key: str, kb: Dict[str, Any]) -> str:
    """Creates base kb ({"name", "settings", "documents"}) in the space of admin_key (its
    knowledge on), submits its documents and waits (60 s at most) until each is ready; returns
    the base's id."""
    base = http_json("POST", server.url + "/v1/knowledge", admin_key, {"name": kb["name"], "settings": kb["settings"]})
    for d in kb["documents"]:
        sub = http_json("POST", server.url + "/v1/knowledge/%s/documents" % base["id"], admin_key, d)
        deadline = time.time() + 60
        while True:
            got = http_json("GET", server.url + "/v1/knowledge/%s/documents/%s" % (base["id"], sub["document_id"]), admin_key)
            if got["status"] == "ready":
                break
            if got["status"] != "pending" or time.time() > deadline:
                raise RuntimeError("knowledge document of %s: status %s, want ready" % (kb["name"], got["status"]))
            time.sleep(0.1)
    return base["id"]


class Seen(NamedTuple):
    """One request the proxy forwarded: method, path (with its query), the If-None-Match it
    carried ("" when none) and the status the binary answered."""

    method: str
    path: str
    if_none_match: str
    status: int


class CountingProxy:
    """A reverse proxy in front of the binary that records every request it forwards, so a test
    can count what a client sent (CTX-4: no request inside the freshness period). ``url`` is
    where clients point; ``seen`` lists the requests; ``count(path_prefix)`` counts them."""

    def __init__(self, upstream: str) -> None:
        self.seen: List[Seen] = []
        self._lock = threading.Lock()
        host, port = upstream.split("//", 1)[1].split(":")
        proxy = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _forward(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                conn = http.client.HTTPConnection(host, int(port), timeout=30)
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                    with proxy._lock:
                        proxy.seen.append(Seen(self.command, self.path, self.headers.get("If-None-Match") or "", resp.status))
                    self.send_response(resp.status)
                    for k, v in resp.getheaders():
                        if k.lower() not in ("content-length", "connection", "transfer-encoding", "date", "server"):
                            self.send_header(k, v)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                finally:
                    conn.close()

            do_GET = do_POST = do_PUT = do_DELETE = _forward

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = "http://127.0.0.1:%d" % self._httpd.server_address[1]
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def count(self, path_prefix: str) -> int:
        """How many forwarded requests have a path starting with path_prefix."""
        with self._lock:
            return sum(1 for r in self.seen if r.path.startswith(path_prefix))

    def since(self, mark: int, path_prefix: str) -> List[Seen]:
        """The requests with that path prefix forwarded after the first ``mark`` requests."""
        with self._lock:
            return [r for r in self.seen[mark:] if r.path.startswith(path_prefix)]

    def mark(self) -> int:
        with self._lock:
            return len(self.seen)

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


class FakeClock:
    """A monotonic clock a test moves by hand (Client(clock=...)): no sleeping."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
