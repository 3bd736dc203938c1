"""Reading the continuous export feed through the Python SDK against the real binary (issue
33): export_feed pages a table with strictly increasing cursors and finds a note just written
as an upsert with its row; an empty page keeps the cursor; an unknown table is a 400
invalid_query; a key without scope export is refused; the async client gives the same page."""

from __future__ import annotations

import asyncio
import unittest

import agentmemory
import harness


class ExportFeedTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.server = harness.DevServer()
        cls.server.start()
        cls.server.create_space("feed")
        cls.key = cls.server.mint_key({"kind": "agent", "agent": "feeder", "vendor": "py",
                                       "scopes": ["export", "agent_memory", "agent_memory:write"]})
        cls.server.put_document("features", {"agent_memory": {"enabled": True, "writes": "agents"}})
        cls.note = harness.http_json("POST", cls.server.url + "/v1/agent-memory/notes", cls.key,
                                     {"kind": "procedure", "title": "Feed note", "body": "Exported by the feed."})["id"]
        cls.client = agentmemory.Client(cls.server.url, cls.key)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.close()

    def test_pages_the_notes_table(self) -> None:
        after, found = 0, None
        for _ in range(100):
            page = self.client.export_feed(["notes"], after=after, limit=2)
            if not page.records:
                self.assertEqual(page.next_after, after)
                break
            for r in page.records:
                self.assertGreater(r.cursor, after)
                self.assertEqual(r.table, "notes")
                if r.key == self.note:
                    found = r
                after = r.cursor
            self.assertEqual(page.next_after, after)
        self.assertIsNotNone(found)
        assert found is not None
        self.assertEqual(found.op, "upsert")
        self.assertIsInstance(found.row, dict)
        self.assertTrue(found.changed_at)

        async def read() -> agentmemory.FeedPage:
            return await agentmemory.AsyncClient(self.server.url, self.key).export_feed(["notes"], limit=1)
        self.assertEqual(asyncio.run(read()), self.client.export_feed(["notes"], limit=1))

    def test_bad_table_and_scope(self) -> None:
        with self.assertRaises(agentmemory.AgentMemoryError) as cm:
            self.client.export_feed(["nope"])
        self.assertEqual((cm.exception.status, cm.exception.code), (400, "invalid_query"))
        other = self.server.mint_key({"kind": "agent", "agent": "nofeed", "vendor": "py", "scopes": ["context"]})
        with self.assertRaises(agentmemory.AgentMemoryError) as cm:
            agentmemory.Client(self.server.url, other).export_feed()
        self.assertEqual(cm.exception.status, 403)


if __name__ == "__main__":
    unittest.main()
