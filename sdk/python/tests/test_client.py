"""SDK behaviour a real server cannot show on demand, against a fake server (standard library):
the read-your-writes floor, a state answered as gone, retries, errors and logs without secrets,
the queue file, the DELETE sentinel, replay mode, bounded answers, the block cache."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import stat
import tempfile
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional, Tuple

import agentmemory

KEY = "am_secretkey_0123456789"
SCOPE_ID = "call-5511987654321"

Answer = Tuple[int, Dict[str, str], Any]


class Fake:
    """A fake agentmemory: ``handler(method, path, headers, body)`` returns (status, headers, json)."""

    def __init__(self, handler: Callable[[str, str, Dict[str, str], Any], Answer]) -> None:
        self.requests: List[Tuple[str, str, Dict[str, str], Any]] = []
        fake = self

        class H(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                body = json.loads(raw) if raw else None
                headers = {k.lower(): v for k, v in self.headers.items()}
                fake.requests.append((self.command, self.path, headers, body))
                status, hdrs, out = handler(self.command, self.path, headers, body)
                data = b"" if out is None else (out if isinstance(out, bytes) else json.dumps(out).encode())
                self.send_response(status)
                for k, v in hdrs.items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = _serve

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return "http://127.0.0.1:%d" % s.getsockname()[1]


class FakeTest(unittest.TestCase):
    def fake(self, handler: Callable[[str, str, Dict[str, str], Any], Answer]) -> Fake:
        f = Fake(handler)
        self.addCleanup(f.close)
        return f


class ReadYourWritesTest(FakeTest):
    def test_lagging_read_serves_the_newer_state_held(self) -> None:
        answers = [{"body": {"step": "b"}, "version": 3}, {"body": {"step": "a"}, "version": 2}]
        f = self.fake(lambda m, p, h, b: (200, {}, answers.pop(0) if answers else {"body": {}, "version": 2}))
        c = agentmemory.Client(f.url, KEY)
        st = c.conversation(SCOPE_ID).agent_state
        self.assertEqual(st.get().version, 3)
        again = st.get()  # the replica lags: version 2
        self.assertEqual((again.version, again.body), (3, {"step": "b"}))

    def test_write_floor_is_kept_while_the_replica_catches_up(self) -> None:
        reads = [{"body": {}, "version": 4}, {"body": {"step": "x"}, "version": 5}]

        def h(m: str, p: str, hd: Dict[str, str], b: Any) -> Answer:
            if m == "PUT":
                return 200, {}, {"stored": True, "version": 5, "reason": None}
            return 200, {}, reads.pop(0)
        f = self.fake(h)
        st = agentmemory.Client(f.url, KEY).conversation("c-1").agent_state
        self.assertTrue(st.put({"step": "x"}).stored)
        got = st.get()  # first answer 4 (lagging), retried: 5
        self.assertEqual((got.version, got.body), (5, {"step": "x"}))

    def test_a_state_answered_as_gone_is_dropped(self) -> None:
        answers = [{"body": {"step": "b"}, "version": 3}]
        f = self.fake(lambda m, p, h, b: (200, {}, answers.pop(0) if answers else {"body": {}, "version": 0}))
        st = agentmemory.Client(f.url, KEY).conversation("c-1").agent_state
        self.assertEqual(st.get().version, 3)
        gone = st.get()
        self.assertEqual((gone.version, gone.body), (0, {}))
        self.assertEqual(len(f.requests), 1 + 1 + agentmemory.client.MAX_READ_RETRIES)
        answers.append({"body": {"step": "new"}, "version": 1})
        self.assertEqual(st.get().version, 1)  # a fresh start is accepted: the floor was dropped


class RetryTest(FakeTest):
    def test_5xx_is_retried_with_backoff(self) -> None:
        n = [0]

        def h(m: str, p: str, hd: Dict[str, str], b: Any) -> Answer:
            n[0] += 1
            if n[0] <= 2:
                return 500, {}, {"error": {"code": "internal", "message": "internal error"}}
            return 200, {}, {"body": {}, "version": 0}
        f = self.fake(h)
        c = agentmemory.Client(f.url, KEY, backoff=0.01)
        self.assertEqual(c.conversation("c-1").agent_state.get().version, 0)
        self.assertEqual(n[0], 3)

    def test_retry_after_is_honoured(self) -> None:
        n = [0]

        def h(m: str, p: str, hd: Dict[str, str], b: Any) -> Answer:
            n[0] += 1
            if n[0] == 1:
                return 429, {"Retry-After": "1"}, {"error": {"code": "rate_limited", "message": "slow down"}}
            return 200, {}, {"body": {}, "version": 0}
        f = self.fake(h)
        start = time.monotonic()
        agentmemory.Client(f.url, KEY).conversation("c-1").agent_state.get()
        self.assertGreaterEqual(time.monotonic() - start, 0.9)
        self.assertEqual(n[0], 2)

    def test_a_long_retry_after_is_returned_at_once(self) -> None:
        f = self.fake(lambda m, p, h, b: (429, {"Retry-After": "3600"},
                                          {"error": {"code": "note_rate_limited", "message": "20 notes an hour"}}))
        c = agentmemory.Client(f.url, KEY)
        saved = c.remember("procedure", "Sizes", "Offer the size chart first.")
        self.assertEqual((saved.status, saved.error, saved.retry_after, saved.http_status),
                         ("error", "note_rate_limited", 3600.0, 429))
        with self.assertRaises(agentmemory.RateLimitedError) as cm:
            saved.raise_for_error()
        self.assertEqual(cm.exception.retry_after, 3600.0)
        self.assertEqual(len(f.requests), 1)

    def test_retries_are_bounded_and_4xx_is_not_retried(self) -> None:
        f = self.fake(lambda m, p, h, b: (502, {}, None))
        c = agentmemory.Client(f.url, KEY, max_retries=2, backoff=0.001)
        with self.assertRaises(agentmemory.UnavailableError):
            c.conversation("c-1").agent_state.get()
        self.assertEqual(len(f.requests), 3)
        g = self.fake(lambda m, p, h, b: (400, {}, {"error": {"code": "invalid_member", "message": "member: scope"}}))
        with self.assertRaises(agentmemory.AgentMemoryError) as cm:
            agentmemory.Client(g.url, KEY).conversation("c-1").agent_state.get()
        self.assertEqual((cm.exception.status, cm.exception.code), (400, "invalid_member"))
        self.assertEqual(len(g.requests), 1)


class SecretsTest(FakeTest):
    def test_no_key_nor_scope_id_in_errors_reprs_or_logs(self) -> None:
        f = self.fake(lambda m, p, h, b: (503, {"Retry-After": "0"}, {"error": {"code": "unavailable", "message": "try later"}}))
        queue = os.path.join(tempfile.mkdtemp(), "q.json")
        c = agentmemory.Client(f.url, KEY, queue_file=queue, max_retries=1)
        conv = c.conversation(SCOPE_ID, subject="phone:+55 11 98765-4321")
        with self.assertLogs("agentmemory", level="DEBUG") as logs:
            res = conv.agent_state.put({"cart_note": "call ana@example.com"})
            with self.assertRaises(agentmemory.AgentMemoryError) as cm:
                conv.agent_state.get()
        self.assertTrue(res.queued)
        texts = [str(cm.exception), repr(cm.exception), repr(c), repr(conv), repr(conv.agent_state),
                 repr(agentmemory.Scope("conversation", SCOPE_ID)), repr(res)] + logs.output
        unreachable = agentmemory.Client(closed_port_url(), KEY).conversation(SCOPE_ID)
        with self.assertRaises(agentmemory.UnreachableError) as cm2:
            unreachable.agent_state.get()
        texts.append(str(cm2.exception))
        for t in texts:
            for secret in (KEY, SCOPE_ID, "98765", "ana@example.com"):
                self.assertNotIn(secret, t)
        self.assertEqual(cm2.exception.code, "unreachable")

    def test_key_is_sent_only_as_bearer_and_redirects_are_not_followed(self) -> None:
        f = self.fake(lambda m, p, h, b: (302, {"Location": "http://127.0.0.1:1/elsewhere"}, None))
        with self.assertRaises(agentmemory.AgentMemoryError) as cm:
            agentmemory.Client(f.url, KEY).block()
        self.assertEqual(cm.exception.status, 302)
        self.assertEqual(f.requests[0][2]["authorization"], "Bearer " + KEY)


class QueueTest(FakeTest):
    def test_queue_file_has_the_go_sdks_format_and_is_private(self) -> None:
        queue = os.path.join(tempfile.mkdtemp(), "q.json")
        c = agentmemory.Client(closed_port_url(), KEY, queue_file=queue)
        res = c.conversation("c-1").agent_state.put({"step": "x", "offer": agentmemory.DELETE}, mode="merge_by_key", if_version=4)
        self.assertEqual((res.queued, res.stored, res.version), (True, False, 4))
        with open(queue) as fh:
            items = json.load(fh)
        self.assertEqual(items, [{"request": {"scope": {"kind": "conversation", "id": "c-1"}, "mode": "merge_by_key",
                                              "body": {"step": "x", "offer": {"$delete": True}}, "if_version": 4}}])
        self.assertEqual(stat.S_IMODE(os.stat(queue).st_mode), 0o600)
        self.assertEqual(agentmemory.Client(closed_port_url(), KEY, queue_file=queue).pending, 1)

    def test_an_unreadable_queue_file_is_refused_without_its_content(self) -> None:
        queue = os.path.join(tempfile.mkdtemp(), "q.json")
        with open(queue, "w") as fh:
            fh.write('{"secret": "ana@example.com"')
        with self.assertRaises(ValueError) as cm:
            agentmemory.Client("http://127.0.0.1:1", KEY, queue_file=queue)
        self.assertNotIn("ana@example.com", str(cm.exception))

    def test_delete_sentinel_and_literal_are_sent_the_same(self) -> None:
        f = self.fake(lambda m, p, h, b: (200, {}, {"stored": True, "version": 1, "reason": None}))
        st = agentmemory.Client(f.url, KEY).conversation("c-1").agent_state
        st.put({"offer": agentmemory.DELETE})
        st.put({"offer": {"$delete": True}})
        self.assertEqual(f.requests[0][3]["body"], {"offer": {"$delete": True}})
        self.assertEqual(f.requests[1][3]["body"], {"offer": {"$delete": True}})
        self.assertEqual(f.requests[0][3]["mode"], "merge_by_key")


class ReplayAndAnswersTest(FakeTest):
    def test_replay_sends_nothing(self) -> None:
        c = agentmemory.Client(replay=True)
        st = c.conversation("c-1").agent_state
        self.assertEqual(st.get().version, 0)
        self.assertTrue(st.put({"step": "a", "offer": "x"}).stored)
        self.assertEqual(st.put({"step": "b"}, mode="cas", if_version=0).reason, "conflict")
        self.assertTrue(st.put({"step": "b"}, mode="cas", if_version=1).stored)
        self.assertEqual(st.get().body, {"step": "b"})

    def test_deep_answer_is_refused_before_parsing(self) -> None:
        f = self.fake(lambda m, p, h, b: (200, {}, b'{"body":' + b"[" * 200000))
        with self.assertRaises(agentmemory.AnswerError) as cm:
            agentmemory.Client(f.url, KEY).conversation("c-1").agent_state.get()
        self.assertIn("json_too_deep", str(cm.exception))

    def test_block_is_revalidated_with_if_none_match(self) -> None:
        def h(m: str, p: str, hd: Dict[str, str], b: Any) -> Answer:
            if hd.get("if-none-match") == '"e1"':
                return 304, {"ETag": '"e1"'}, None
            return 200, {"ETag": '"e1"'}, {"text": "<agent_notes>x</agent_notes>", "enabled": True, "note_ids": ["n1"], "tokens": 9}
        f = self.fake(h)
        conv = agentmemory.Client(f.url, KEY).conversation("c-1")
        b1 = conv.agent_memory(max_tokens=300, tags=["scheduling"])
        b2 = conv.agent_memory(max_tokens=300, tags=["scheduling"])
        b3 = conv.agent_memory(max_tokens=200, tags=["scheduling"])
        self.assertEqual((b1.not_modified, b2.not_modified, b3.not_modified), (False, True, False))
        self.assertEqual((b2.text, b2.etag, b2.note_ids), (b1.text, '"e1"', ["n1"]))
        self.assertNotIn("if-none-match", f.requests[0][2])
        self.assertEqual(f.requests[1][2]["if-none-match"], '"e1"')
        self.assertIn("max_tokens=300", f.requests[0][1])
        self.assertIn("tags=scheduling", f.requests[0][1])

    def test_cache_keeps_a_bounded_number_of_call_shapes(self) -> None:
        f = self.fake(lambda m, p, h, b: (200, {"ETag": '"e"', "Cache-Control": "private, max-age=60"},
                                         {"system_block": "", "context": "", "tokens": {}, "enabled": True}))
        now = [0.0]
        c = agentmemory.Client(f.url, KEY, clock=lambda: now[0])
        for i in range(agentmemory.client.MAX_CACHED_ANSWERS + 1):
            c.context(max_tokens=100 + i)
        self.assertEqual(len(f.requests), agentmemory.client.MAX_CACHED_ANSWERS + 1)
        c.context(max_tokens=100 + agentmemory.client.MAX_CACHED_ANSWERS)  # the newest: still cached
        self.assertEqual(len(f.requests), agentmemory.client.MAX_CACHED_ANSWERS + 1)
        c.context(max_tokens=100)  # the oldest was dropped: asked again, unconditionally
        self.assertEqual(len(f.requests), agentmemory.client.MAX_CACHED_ANSWERS + 2)
        self.assertNotIn("if-none-match", f.requests[-1][2])
        self.assertEqual(f.requests[-1][3], {"max_tokens": 100})

    def test_remember_sends_evidence_and_an_idempotency_key(self) -> None:
        f = self.fake(lambda m, p, h, b: (422, {}, {"error": {"code": "personal_data_in_agent_memory",
                                                              "message": "personal data", "kinds": ["phone"]}}))
        conv = agentmemory.Client(f.url, KEY).conversation("call-1")
        saved = conv.remember("pitfall", "Call back", "ligar para (11) 91234-5678", tags=["phone"])
        self.assertEqual((saved.error, saved.kinds, saved.status), ("personal_data_in_agent_memory", ["phone"], "error"))
        _, path, headers, body = f.requests[0]
        self.assertEqual(path, "/v1/agent-memory/notes")
        self.assertEqual(body["evidence"], {"conversation_id": "call-1"})
        self.assertTrue(headers["idempotency-key"].startswith("py-"))
        conv.remember("pitfall", "Call back", "x")
        self.assertNotEqual(f.requests[1][2]["idempotency-key"], headers["idempotency-key"])

    def test_retrieve_sends_filters_as_given_and_decodes_provenance(self) -> None:
        answer = {"mode": "hybrid", "context": "<knowledge_context>x</knowledge_context>", "context_tokens": 42, "chunks": [
            {"chunk_id": "kc_1", "document_id": "kd_1", "kb_id": "kb_1", "source_uri": "kb://refunds", "title": "Refunds",
             "version": "v2", "start_byte": 0, "end_byte": 57, "score": 0.032787, "vector_score": 0.81, "vector_rank": 1,
             "lexical_rank": None, "text": "Refunds go to store credit.", "in_context": True}]}
        f = self.fake(lambda m, p, h, b: (200, {}, answer))
        c = agentmemory.Client(f.url, KEY)
        filters = {"source_uri": ["kb://refunds"], "tags": {"any": ["orders"]}}
        got = c.retrieve("refund to card?", ["kb_1"], top_k=3, max_tokens=500, min_score=0.2, filters=filters)
        c.retrieve("refund", ("kb_1",))
        c.retrieve("refund", ["refunds"], space="sp_other")  # across a bridge: the other space's base by name
        self.assertEqual([(m, p, b) for m, p, _, b in f.requests], [
            ("POST", "/v1/knowledge/retrieve", {"query": "refund to card?", "kbs": ["kb_1"], "top_k": 3, "max_tokens": 500,
                                                "min_score": 0.2, "filters": filters}),
            ("POST", "/v1/knowledge/retrieve", {"query": "refund", "kbs": ["kb_1"]}),
            ("POST", "/v1/knowledge/retrieve", {"query": "refund", "kbs": ["refunds"], "space": "sp_other"})])
        self.assertEqual((got.mode, got.context_tokens, got.context), ("hybrid", 42, "<knowledge_context>x</knowledge_context>"))
        ch = got.chunks[0]
        self.assertEqual((ch.document_id, ch.source_uri, ch.version, ch.start_byte, ch.end_byte, ch.in_context),
                         ("kd_1", "kb://refunds", "v2", 0, 57, True))
        self.assertEqual((ch.vector_score, ch.vector_rank, ch.lexical_rank), (0.81, 1, None))
        self.assertNotIn("store credit", repr(ch), "chunk text stays out of reprs")

    def test_retrieve_raises_the_services_refusals(self) -> None:
        answers = {"scope": (403, {"error": {"code": "scope_required", "message": "this key lacks scope knowledge:read"}}),
                   "embedder": (503, {"error": {"code": "embedder_unavailable", "message": "retry later"}})}
        f = self.fake(lambda m, p, h, b: (answers[b["query"]][0], {}, answers[b["query"]][1]))
        c = agentmemory.Client(f.url, KEY, max_retries=0)
        with self.assertRaises(agentmemory.AgentMemoryError) as cm:
            c.retrieve("scope", ["kb_1"])
        self.assertEqual((cm.exception.status, cm.exception.code), (403, "scope_required"))
        with self.assertRaises(agentmemory.UnavailableError) as cm2:
            c.retrieve("embedder", ["kb_1"])
        self.assertEqual(cm2.exception.code, "embedder_unavailable")

    def test_environment_and_system_prompt(self) -> None:
        os.environ["AGENTMEMORY_URL"], os.environ["AGENTMEMORY_KEY"] = "http://127.0.0.1:9", KEY
        try:
            self.assertEqual(agentmemory.Client()._http.base_url, "http://127.0.0.1:9")
        finally:
            del os.environ["AGENTMEMORY_URL"], os.environ["AGENTMEMORY_KEY"]
        with self.assertRaises(ValueError):
            agentmemory.Client()
        block = agentmemory.Block(text="<agent_notes>n</agent_notes>", enabled=True)
        self.assertEqual(agentmemory.system_prompt("Be brief.", block, "Customer: gold tier"),
                         "Be brief.\n\n<agent_notes>n</agent_notes>\n\nCustomer: gold tier")
        self.assertEqual(agentmemory.system_prompt("Be brief.", agentmemory.Block(), None), "Be brief.")

    def test_async_client_has_the_same_surface(self) -> None:
        f = self.fake(lambda m, p, h, b: (200, {}, {"stored": True, "version": 1, "reason": None} if m == "PUT"
                                          else {"body": {"step": "a"}, "version": 1}))

        async def main() -> Tuple[int, int]:
            c = agentmemory.AsyncClient(f.url, KEY)
            conv = c.conversation("c-1")
            w = await conv.agent_state.put({"step": "a"})
            st = await conv.agent_state.get()
            return w.version, st.version
        self.assertEqual(asyncio.run(main()), (1, 1))
        self.assertTrue(asyncio.iscoroutinefunction(agentmemory.AsyncClient.retrieve))


if __name__ == "__main__":
    logging.basicConfig(level=logging.CRITICAL)
    unittest.main()
