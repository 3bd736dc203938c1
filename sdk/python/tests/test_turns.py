"""Reading a conversation's masked turns through the Python SDK against the real binary (issue
33): read_turns pages them oldest first without a gap or repeat, masked; a bad cursor is a 400
invalid_member; the async client gives the same pages."""

from __future__ import annotations

import asyncio
import unittest

import agentmemory
import harness


class TurnsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.server = harness.DevServer()
        cls.server.start()
        cls.server.create_space("turns")
        cls.key = cls.server.mint_key({"kind": "agent", "agent": "reader", "vendor": "py", "scopes": ["context"]})
        turns = [{"conversation_id": "py-conv-1", "speaker": "customer", "text": "turn %d: mail me at bia%d@example.com" % (i, i)}
                 for i in range(5)]
        harness.http_json("POST", cls.server.url + "/v1/turns", cls.key, {"turns": turns})
        cls.client = agentmemory.Client(cls.server.url, cls.key)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.close()

    def test_pages_masked_turns_oldest_first(self) -> None:
        got, after = [], ""
        for _ in range(10):
            page = self.client.read_turns("py-conv-1", after=after, limit=2)
            self.assertLessEqual(len(page.turns), 2)
            got.extend(page.turns)
            if not page.next_after:
                break
            after = page.next_after
        self.assertEqual([t.text.split(":")[0] for t in got], ["turn %d" % i for i in range(5)])
        for t in got:
            self.assertNotIn("@example.com", t.text)
            self.assertIn("<email>", t.text)
            self.assertEqual(t.conversation_id, "py-conv-1")
        whole = self.client.read_turns("py-conv-1")
        self.assertEqual(whole.turns, got)
        self.assertEqual(whole.next_after, "")
        self.assertEqual(self.client.read_turns("py-never").turns, [])

        async def read() -> agentmemory.TurnsPage:
            return await agentmemory.AsyncClient(self.server.url, self.key).read_turns("py-conv-1")
        self.assertEqual(asyncio.run(read()), whole)

    def test_bad_cursor_is_invalid_member(self) -> None:
        with self.assertRaises(agentmemory.AgentMemoryError) as cm:
            self.client.read_turns("py-conv-1", after="nonsense")
        self.assertEqual((cm.exception.status, cm.exception.code), (400, "invalid_member"))
