"""Reading the continuous export feed through the Python SDK against the real binary (issue
33): export_feed pages a table with strictly increasing cursors and finds a note just written
as an upsert with its row; an empty page keeps the cursor; an unknown table is a 400
invalid_query; a key without scope export is refused; the async client gives the same page."""

from __future__ import annotations

import asyncio
import json
import time
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

    def test_agent_memory_export_file(self) -> None:
        source = harness.http_json("GET", self.server.url + "/v1/agent-memory/notes/" + self.note, self.key)["source_id"]
        with self.assertRaises(agentmemory.AgentMemoryError) as cm:
            self.client.request_agent_memory_export(source)
        self.assertEqual(cm.exception.status, 403)
        admin = agentmemory.Client(self.server.url, self.server.admin_key)
        export_id = admin.request_agent_memory_export(source)
        deadline = time.monotonic() + 60
        st = admin.agent_memory_export(export_id)
        while st["status"] == "running" and time.monotonic() < deadline:
            time.sleep(0.05)
            st = admin.agent_memory_export(export_id)
        self.assertEqual(st["status"], "completed", st)
        self.assertEqual(st["counts"]["notes"], 1)
        f = admin.agent_memory_export_file(export_id)
        self.assertEqual(f["source_id"], source)
        self.assertIn(self.note, json.dumps(f))


if __name__ == "__main__":
    unittest.main()
