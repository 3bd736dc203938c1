"""The block and context caches against the real binary (CTX-4), counted by a reverse proxy in
front of it and timed by a hand-moved clock (no sleeping): inside the answer's freshness period
no request at all; after it one conditional request answered 304 that renews the period; a note
written meanwhile shows up after the period; ``no-cache`` revalidates every call."""

from __future__ import annotations

import copy
import unittest

import harness

import agentmemory

BLOCK = "/v1/agent-memory/block"
CONTEXT = "/v1/context"


class CacheTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.server = harness.DevServer(fake_model=True)
        cls.server.start()
        setup = harness.setup_space(cls.server, knowledge=True)
        features = copy.deepcopy(next(d["body"] for d in setup["documents"] if d["name"] == "features"))
        features["agent_memory"]["cache_seconds"] = 60
        cls.server.put_document("features", features)
        cls.kb = setup["bases"]["handbook"]
        cls.key = cls.server.mint_key(dict(setup["agent_key"], agent="cache-bot",
                                           scopes=["agent_memory", "agent_memory:write", "knowledge:read"]))
        # A second space whose answers say no-cache (cache_seconds 0).
        cls.server.create_space("no-cache")
        features["agent_memory"]["cache_seconds"] = 0
        features["knowledge"] = {"enabled": False}
        cls.server.put_document("features", features)
        cls.no_cache_key = cls.server.mint_key({"kind": "agent", "agent": "nc-bot", "vendor": "v",
                                                "scopes": ["agent_memory", "agent_memory:write"]})
        cls.proxy = harness.CountingProxy(cls.server.url)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.proxy.close()
        cls.server.close()

    def writer(self, key: str) -> agentmemory.Client:
        """A client straight to the binary (not counted), for writing notes meanwhile."""
        return agentmemory.Client(self.server.url, key, agent="")

    def test_block_is_fresh_then_revalidated(self) -> None:
        clock = harness.FakeClock()
        c = agentmemory.Client(self.proxy.url, self.key, clock=clock)
        self.writer(self.key).remember("procedure", "Refund to a gift card",
                                       "Ask for the mailing address, then use Record Reason.", tags=["refund"])
        mark = self.proxy.mark()
        first = c.block(max_tokens=300, tags=["refund"])
        again = [c.block(max_tokens=300, tags=["refund"]) for _ in range(5)]
        self.assertEqual([(r.if_none_match, r.status) for r in self.proxy.since(mark, BLOCK)], [("", 200)])
        self.assertIn("Refund to a gift card", first.text)
        self.assertFalse(first.not_modified or first.fresh)
        for b in again:
            self.assertEqual((b.text, b.etag, b.note_ids), (first.text, first.etag, first.note_ids))
            self.assertTrue(b.fresh and b.not_modified)

        clock.advance(61)
        revalidated = c.block(max_tokens=300, tags=["refund"])
        self.assertEqual([(r.if_none_match, r.status) for r in self.proxy.since(mark, BLOCK)][1:],
                         [(first.etag, 304)])
        self.assertTrue(revalidated.not_modified)
        self.assertFalse(revalidated.fresh)

        # The 304 renewed the period: a note written now stays unseen until it ends.
        self.writer(self.key).remember("pitfall", "Gift card balance", "The balance shows only after the nightly sync.",
                                       tags=["refund"])
        clock.advance(59)
        stale = c.block(max_tokens=300, tags=["refund"])
        self.assertEqual(len(self.proxy.since(mark, BLOCK)), 2)
        self.assertNotIn("Gift card balance", stale.text)
        clock.advance(2)
        fresh = c.block(max_tokens=300, tags=["refund"])
        self.assertEqual([(r.if_none_match, r.status) for r in self.proxy.since(mark, BLOCK)][2:], [(first.etag, 200)])
        self.assertIn("Gift card balance", fresh.text)
        self.assertNotEqual(fresh.etag, first.etag)
        self.assertFalse(fresh.not_modified)

        # Another call shape is its own entry.
        c.block(max_tokens=200, tags=["refund"])
        self.assertEqual(self.proxy.since(mark, BLOCK)[3].if_none_match, "")

    def test_context_is_cached_per_request_body(self) -> None:
        clock = harness.FakeClock()
        c = agentmemory.Client(self.proxy.url, self.key, clock=clock)
        self.writer(self.key).remember("process_note", "Card refunds", "Card refunds take five business days to show.",
                                       tags=["cards"])
        ask = {"view": "", "max_tokens": 1500, "task": {"id": "task-7", "object_types": ["cards"]},
               "knowledge": {"kbs": [self.kb], "query": "refund to the original card"}}
        mark = self.proxy.mark()
        first = c.context(**ask)
        for _ in range(4):
            got = c.context(**copy.deepcopy(ask))
            self.assertTrue(got.fresh)
            self.assertEqual((got.system_block, got.context, got.etag), (first.system_block, first.context, first.etag))
        self.assertEqual(len(self.proxy.since(mark, CONTEXT)), 1)
        self.assertIn("Card refunds", first.system_block)
        self.assertIn("original card", first.context)
        self.assertTrue(first.chunk_ids)
        self.assertEqual(first.knowledge_mode, "hybrid")
        self.assertEqual(first.tokens.total, first.tokens.system_block + first.tokens.knowledge + first.tokens.task_notes)
        prompt = agentmemory.system_prompt("You are the shop's assistant.", first)
        self.assertLess(prompt.index("You are"), prompt.index("Card refunds"))
        self.assertLess(prompt.index("Card refunds"), prompt.index("original card"))

        other = c.context(**dict(ask, knowledge={"kbs": [self.kb], "query": "express delivery"}))
        self.assertEqual([r.if_none_match for r in self.proxy.since(mark, CONTEXT)], ["", ""])
        self.assertIn("next day", other.context)

        clock.advance(60)
        again = c.context(**ask)
        self.assertEqual([(r.if_none_match, r.status) for r in self.proxy.since(mark, CONTEXT)][2:], [(first.etag, 304)])
        self.assertTrue(again.not_modified and not again.fresh)
        self.assertEqual(again.context, first.context)

    def test_no_cache_revalidates_every_call(self) -> None:
        clock = harness.FakeClock()
        c = agentmemory.Client(self.proxy.url, self.no_cache_key, clock=clock)
        self.writer(self.no_cache_key).remember("procedure", "Reset a password", "Send the reset link, never a code.",
                                                tags=["account"])
        mark = self.proxy.mark()
        for _ in range(3):
            c.block(tags=["account"])
            c.context(max_tokens=500)
        self.assertEqual([(r.if_none_match != "", r.status) for r in self.proxy.since(mark, BLOCK)],
                         [(False, 200), (True, 304), (True, 304)])
        self.assertEqual([(r.if_none_match != "", r.status) for r in self.proxy.since(mark, CONTEXT)],
                         [(False, 200), (True, 304), (True, 304)])
        self.writer(self.no_cache_key).remember("pitfall", "Locked accounts", "Unlock only after the second factor.",
                                                tags=["account"])
        self.assertIn("Locked accounts", c.block(tags=["account"]).text)

    def test_async_client_shares_the_cache(self) -> None:
        import asyncio
        clock = harness.FakeClock()
        ac = agentmemory.AsyncClient(self.proxy.url, self.key, clock=clock)
        mark = self.proxy.mark()

        async def twice() -> list:
            return [await ac.context(max_tokens=400, task={"id": "t-async", "object_types": ["refund"]})
                    for _ in range(2)]

        first, second = asyncio.run(twice())
        self.assertEqual(len(self.proxy.since(mark, CONTEXT)), 1)
        self.assertTrue(second.fresh)
        self.assertEqual(second.system_block, first.system_block)
        self.assertEqual(ac.sync.context(max_tokens=400, task={"object_types": ["refund"], "id": "t-async"}).etag,
                         first.etag)
        self.assertEqual(len(self.proxy.since(mark, CONTEXT)), 1)  # the same body in another key order

    def test_max_age_parsing(self) -> None:
        self.assertEqual(agentmemory.max_age("private, max-age=60"), 60)
        self.assertEqual(agentmemory.max_age("private, no-cache"), 0)
        self.assertEqual(agentmemory.max_age(""), 0)
        self.assertEqual(agentmemory.max_age("max-age=soon"), 0)
        self.assertEqual(agentmemory.max_age("no-store, max-age=60"), 0)


if __name__ == "__main__":
    unittest.main()
