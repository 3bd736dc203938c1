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


if __name__ == "__main__":
    unittest.main()
