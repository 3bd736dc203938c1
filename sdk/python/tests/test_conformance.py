"""Runs every case of sdk/conformance/cases through the Python SDK against the real binary
(format: sdk/conformance/README.md)."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import unittest
from typing import Any, Dict, List, Optional

import harness

import agentmemory

CAPABILITIES = {"tools"}


def _body(body: Dict[str, Any]) -> Dict[str, Any]:
    return {k: (agentmemory.DELETE if v == {"$delete": True} else v) for k, v in body.items()}


class Runner:
    """Runs one case: its clients, its steps, its expectations."""

    def __init__(self, test: unittest.TestCase, server: harness.DevServer, setup: Dict[str, Any], case: Dict[str, Any]) -> None:
        self.t = test
        self.server = server
        self.case = case
        self.bases: Dict[str, str] = setup.get("bases", {})
        self.dir = tempfile.mkdtemp(prefix="conf-")
        test.addCleanup(shutil.rmtree, self.dir, True)
        agent = "%s-%s" % (setup["agent_key"]["agent"], case["name"].replace("_", "-"))
        self.key_spec = dict(setup["agent_key"], agent=agent)
        self.key = server.mint_key(self.key_spec)
        self.specs: Dict[str, Dict[str, Any]] = case.get("clients") or {"a": {}}
        self.keys: Dict[str, str] = {}
        self.clients: Dict[str, agentmemory.Client] = {}
        for name in self.specs:
            self.clients[name] = self._client(name)
        self.saved: Dict[str, Any] = {}
        self.leases: Dict[str, Any] = {}

    def _client(self, name: str) -> agentmemory.Client:
        spec = self.specs[name]
        if name not in self.keys:
            self.keys[name] = self.server.mint_key(dict(self.key_spec, scopes=spec["scopes"])) if "scopes" in spec else self.key
        queue = os.path.join(self.dir, name + "-queue.json") if spec.get("queue") == "file" else None
        return agentmemory.Client(self.server.url, self.keys[name], queue_file=queue, replay=bool(spec.get("replay")),
                                  max_retries=1, backoff=0.05)

    def run(self) -> None:
        try:
            for i, step in enumerate(self.case["steps"]):
                self.where = "%s step %d (%s)" % (self.case["name"], i, step["op"])
                self.step(step)
        finally:
            self.server.start()

    def step(self, s: Dict[str, Any]) -> None:
        op = s["op"]
        if op == "server.stop":
            return self.server.stop()
        if op == "server.start":
            return self.server.start()
        name = s.get("client", "a")
        if op == "client.restart":
            self.clients[name] = self._client(name)
            return
        c = self.clients[name]
        try:
            out = self.do(c, op, s)
        except agentmemory.AgentMemoryError as err:
            out = {"error": err.code}
        if "as" in s:
            self.saved[s["as"]] = out
        self.check(out, s.get("expect", {}))

    def do(self, c: agentmemory.Client, op: str, s: Dict[str, Any]) -> Dict[str, Any]:
        scope = agentmemory.Scope(s["scope"]["kind"], s["scope"]["id"]) if "scope" in s else None
        if op == "state.get":
            st = c.agent_state(scope).get()
            return {"version": st.version, "body": st.body}
        if op == "state.put":
            r = c.agent_state(scope).put(_body(s["body"]), mode=s.get("mode", "merge_by_key"), if_version=s.get("if_version"))
            return {"stored": r.stored, "version": r.version, "reason": r.reason, "fields": r.fields, "queued": r.queued}
        if op == "state.pending":
            return {"pending": c.pending}
        if op == "state.conflicts":
            return {"conflicts": [{"scope": {"kind": x.scope.kind, "id": x.scope.id}, "if_version": x.if_version,
                                   "current_version": x.current_version, "body": x.body}
                                  for x in c.agent_state(scope).conflicts]}
        if op == "memory.block":
            b = c.block(max_tokens=s.get("max_tokens"), tags=s.get("tags"), view=s.get("view", ""))
            return {"enabled": b.enabled, "not_modified": b.not_modified, "text": b.text, "etag": b.etag}
        if op == "memory.remember":
            r = c.remember(s["kind"], s["title"], s["body"], s.get("tags"), conversation_id=s.get("conversation", ""),
                           idempotency_key=s.get("idempotency_key"))
            return {"status": r.status, "error": r.error, "kinds": r.kinds, "replayed": r.replayed, "note_id": r.note_id}
        if op == "memory.search":
            notes = c.search(s["query"], s.get("tags"), s.get("limit"))
            return {"count": len(notes), "titles": [n.title for n in notes]}
        if op == "knowledge.retrieve":
            kw = {k: s[k] for k in ("top_k", "max_tokens", "min_score", "filters") if k in s}
            r = c.retrieve(s["query"], [self.bases.get(k, k) for k in s["kbs"]], **kw)
            return {"mode": r.mode, "count": len(r.chunks), "titles": [x.title for x in r.chunks],
                    "sources": [x.source_uri for x in r.chunks], "versions": [x.version for x in r.chunks],
                    "in_context": sum(1 for x in r.chunks if x.in_context), "context": r.context}
        if op.startswith("board."):
            return self.board(c, op, s)
        if op == "tools.list":
            return {"names": c.tools(agent_memory=True, write_agent_memory=True).names}
        if op == "tools.call":
            res = c.tools(agent_memory=True, write_agent_memory=True).dispatch(s["name"], s["arguments"])
            out: Dict[str, Any] = {"status": res.get("status")}
            if "error" in res:
                out.update(error=res["error"]["code"], kinds=res["error"].get("kinds", []))
            if "notes" in res:
                out.update(count=len(res["notes"]), titles=[n["title"] for n in res["notes"]])
            return out
        raise AssertionError("unknown op " + op)

    def board(self, c: agentmemory.Client, op: str, s: Dict[str, Any]) -> Dict[str, Any]:
        """The board ops (issue 31): get, put (with a saved lease when the step names one),
        lease (saved under the step's lease name) and lease_release."""
        b = c.board(s["board"]["type"], s["board"]["id"]) if "board" in s else None
        if op == "board.get":
            st = b.get()
            return {"version": st.version, "body": st.body}
        if op == "board.lease":
            lease = b.lease(ttl=s["ttl_seconds"])
            self.leases[s["lease"]] = lease
            return {"token": lease.token}
        if op == "board.lease_release":
            self.leases[s["lease"]].release()
            return {}
        if op == "board.put":
            target = self.leases[s["lease"]] if "lease" in s else b
            r = target.put(s["body"], if_version=s["if_version"])
            return {"stored": r.stored, "version": r.version, "settled": [{"field": x.field, "rule": x.rule} for x in r.settled]}
        raise AssertionError("unknown op " + op)

    def check(self, out: Dict[str, Any], expect: Dict[str, Any]) -> None:
        for k, want in expect.items():
            msg = "%s: %s" % (self.where, k)
            if k in ("text_contains", "context_contains"):
                for part in want:
                    self.t.assertIn(part, out.get(k[:-len("_contains")], ""), msg)
            elif k == "text_equals":
                self.t.assertEqual(out.get("text"), self.saved[want]["text"], msg)
            elif k == "etag_equals":
                self.t.assertEqual(out.get("etag"), self.saved[want]["etag"], msg)
            elif k == "etag_differs":
                self.t.assertNotEqual(out.get("etag"), self.saved[want]["etag"], msg)
            elif k == "note_id_equals":
                self.t.assertEqual(out.get("note_id"), self.saved[want]["note_id"], msg)
            elif k == "conflicts":
                got = out.get("conflicts")
                self.t.assertEqual(len(got), len(want), msg)
                for g, w in zip(got, want):
                    self.t.assertEqual({m: g.get(m) for m in w}, w, msg)
            elif k == "queued":
                self.t.assertEqual(bool(out.get("queued")), want, msg)
            else:
                self.t.assertIn(k, out, msg + " (%r)" % out)
                self.t.assertEqual(out[k], want, msg + " (%r)" % out)


class ConformanceTest(unittest.TestCase):
    server: Optional[harness.DevServer] = None

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = harness.DevServer(fake_model=True)
        cls.server.start()
        cls.setup = harness.setup_space(cls.server, knowledge=True)

    @classmethod
    def tearDownClass(cls) -> None:
        if cls.server is not None:
            cls.server.close()


def _skip_capability(test: unittest.TestCase, reason: str) -> None:
    """Record a capability skip in $AGENTMEMORY_SKIP_LOG (one "test<TAB>reason" line, summed up
    at the end of make test), then skip the test."""
    path = os.environ.get("AGENTMEMORY_SKIP_LOG")
    if path:
        line = "\t".join(" ".join(x.split()) for x in ("python:" + test.id(), reason))
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")
    test.skipTest(reason)


def _make(case: Dict[str, Any]):
    def test(self: ConformanceTest) -> None:
        missing = set(case.get("requires", [])) - CAPABILITIES
        if missing:
            _skip_capability(self, "requires " + ", ".join(sorted(missing)))
        Runner(self, self.server, self.setup, case).run()
    test.__doc__ = case.get("description")
    return test


for _case in harness.load_cases():
    setattr(ConformanceTest, "test_" + re.sub(r"\W", "_", _case["name"]), _make(_case))

if __name__ == "__main__":
    unittest.main()
