"""Boards through the Python SDK against the real binary (issue 31): a stale put merged by the
fields' rules names the rule of each field; a lease in a with block keeps the other handler out
and is released on exit; a released lease's renewal is lease_lost."""

from __future__ import annotations

import unittest

import agentmemory
import harness


class BoardsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.server = harness.DevServer()
        cls.server.start()
        cls.server.create_space("boards")
        cls.server.put_document("object-types", {"types": [{
            "type": "findings", "ownership": "shared",
            "fields": {"hits": {"type": "integer", "conflict": {"rule": "sum"}},
                       "tags": {"type": "array", "conflict": {"rule": "union"}}}}]})
        harness.http_json("POST", cls.server.url + "/v1/boards/findings/grants", cls.server.admin_key,
                          {"vendor": "py", "access": "read_write"})
        cls.a = agentmemory.Client(cls.server.url, cls.server.mint_key({"kind": "agent", "agent": "a", "vendor": "py", "scopes": []}))
        cls.b = agentmemory.Client(cls.server.url, cls.server.mint_key({"kind": "agent", "agent": "b", "vendor": "py", "scopes": []}))

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.close()

    def test_stale_put_is_merged_and_lease_fences(self) -> None:
        a, b = self.a.board("findings", "inc-1"), self.b.board("findings", "inc-1")
        self.assertTrue(a.put({"hits": 1, "tags": ["a"]}, if_version=0).stored)
        res = b.put({"hits": 1, "tags": ["b"]}, if_version=0)
        self.assertEqual(res.version, 2)
        self.assertEqual(res.settled, [agentmemory.Settled("hits", "sum"), agentmemory.Settled("tags", "union")])
        got = a.get()
        self.assertEqual((got.body, got.version), ({"hits": 2, "tags": ["a", "b"]}, 2))

        with a.lease(ttl=30) as lease:
            with self.assertRaises(agentmemory.AgentMemoryError) as held:
                b.put({"hits": 3}, if_version=2)
            self.assertEqual(held.exception.code, "lease_held")
            self.assertTrue(lease.put({"hits": 3}, if_version=2).stored)
        with self.assertRaises(agentmemory.AgentMemoryError) as lost:
            lease.renew(ttl=30)
        self.assertEqual(lost.exception.code, "lease_lost")
        self.assertTrue(b.put({"hits": 4}, if_version=3).stored, "released on leaving the with block")

    def test_state_lease_fences_the_other_run(self) -> None:
        self.server.put_document("features", {"agent_state": {"enabled": True}})
        self.server.put_document("object-types", {"types": [
            {"type": "findings", "ownership": "shared",
             "fields": {"hits": {"type": "integer", "conflict": {"rule": "sum"}},
                        "tags": {"type": "array", "conflict": {"rule": "union"}}}},
            {"type": "planner", "ownership": "agent", "fields": {"plan": {"type": "string"}},
             "agent_state": {"scope": "agent"}}]})
        runs = [agentmemory.Client(self.server.url, self.server.mint_key(
            {"kind": "agent", "agent": "planner", "vendor": "py", "scopes": ["agent_state"]})) for _ in range(2)]
        one, two = (r.agent_state(agentmemory.Scope("agent", "planner-1")) for r in runs)
        with one.lease(ttl=30) as lease:
            self.assertEqual(lease.token, 1)
            with self.assertRaises(agentmemory.AgentMemoryError) as held:
                two.put({"plan": "two"})
            self.assertEqual(held.exception.code, "lease_held")
            self.assertTrue(lease.put({"plan": "one"}).stored)
        with self.assertRaises(agentmemory.AgentMemoryError) as lost:
            lease.put({"plan": "late"})
        self.assertEqual(lost.exception.code, "lease_lost")
        self.assertTrue(two.put({"plan": "two"}).stored, "released on leaving the with block")
        self.assertEqual(two.get().body, {"plan": "two"})
        self.assertEqual(two.lease(ttl=30).token, 2)


    def test_bridged_board_reads_only_through_an_approved_bridge(self) -> None:
        source = self.server.new_space("bridge-source")
        harness.http_json("PUT", self.server.url + "/v1/documents/object-types", source["admin_key"], {"types": [{
            "type": "findings", "ownership": "shared", "fields": {"title": {"type": "string"}}}]})
        harness.http_json("POST", self.server.url + "/v1/boards/findings/grants", source["admin_key"], {"agent": "w", "access": "read_write"})
        writer = harness.http_json("POST", self.server.url + "/v1/keys", source["admin_key"],
                                   {"kind": "agent", "agent": "w", "vendor": "py", "scopes": []})["key"]
        agentmemory.Client(self.server.url, writer).board("findings", "inc-7").put({"title": "disk full"}, if_version=0)
        reader = agentmemory.Client(self.server.url, self.server.mint_key({"kind": "agent", "agent": "reader", "vendor": "py", "scopes": []}))
        mine = harness.http_json("GET", self.server.url + "/v1/keys/self", self.server.admin_key)
        board = reader.bridged_board(source["space_id"], "findings", "inc-7")
        with self.assertRaises(agentmemory.AgentMemoryError) as before:
            board.get()
        self.assertEqual((before.exception.status, before.exception.code), (404, "board_not_found"))
        self.server.open_bridge(source, {"space_id": mine["space_id"], "admin_key": self.server.admin_key}, ["reader"], [{"type": "findings", "ids": "inc-*"}])
        got = board.get()
        self.assertEqual((got.body, got.version), ({"title": "disk full"}, 1))


if __name__ == "__main__":
    unittest.main()
