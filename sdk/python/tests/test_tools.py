"""The tool kit against the real binary: the definitions equal the MCP server's tools/list,
remember is offered only with agent_memory:write, search_knowledge only where the key may read
knowledge, nothing while agent memory is off, and the dispatcher answers OpenAI and Anthropic
tool calls with results the model can read."""

from __future__ import annotations

import json
import unittest
import urllib.request
from typing import Any, Dict, List

import harness

import agentmemory


def mcp_tools(url: str, key: str) -> List[Dict[str, Any]]:
    """tools/list straight from the server's /mcp (no SDK code)."""
    msg = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).encode()
    req = urllib.request.Request(url + "/mcp", data=msg, method="POST")
    for k, v in {"Authorization": "Bearer " + key, "Content-Type": "application/json",
                 "Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2025-06-18"}.items():
        req.add_header(k, v)
    with urllib.request.urlopen(req, timeout=30) as resp:
        raw = resp.read().decode()
    data = "\n".join(ln[5:].strip() for ln in raw.splitlines() if ln.startswith("data:")) or raw
    return json.loads(data)["result"]["tools"]


class ToolsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.server = harness.DevServer(fake_model=True)
        cls.server.start()
        setup = harness.setup_space(cls.server, knowledge=True)
        cls.kb = setup["bases"]["handbook"]
        spec = dict(setup["agent_key"], agent="tools-bot")
        cls.writer = cls.server.mint_key(dict(spec, scopes=spec["scopes"] + ["knowledge:read"]))
        cls.reader = cls.server.mint_key(dict(spec, scopes=["agent_state", "agent_memory"]))

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.close()

    def test_bridged_retrieval_reads_only_through_an_approved_bridge(self) -> None:
        """Issue 31: retrieve(space=...) and the kit's search_knowledge with space read another
        space's base through a bridge both spaces approved, in a run of the reader's space;
        before it, 404 knowledge_base_not_found, as a base that does not exist."""
        source = self.server.new_space("kb-bridge-source")
        harness.http_json("PUT", self.server.url + "/v1/documents/features", source["admin_key"], {"knowledge": {"enabled": True}})
        harness.knowledge_base(self.server, source["admin_key"], {
            "name": "partner", "settings": {"embedding_model": "conformance-embed", "readers": {"space": True}},
            "documents": [{"source_uri": "kb://partner/returns", "title": "Returns", "format": "markdown",
                           "text": "# Returns\n\nPartner returns are collected by courier within two days."}]})
        key = self.server.mint_key({"kind": "agent", "agent": "kb-bridge-reader", "vendor": "py", "scopes": ["knowledge:read"]})
        client = agentmemory.Client(self.server.url, key)
        kit = client.tools(knowledge=True, knowledge_bases=[self.kb])
        with self.assertRaises(agentmemory.AgentMemoryError) as before:
            client.retrieve("partner returns courier", ["partner"], space=source["space_id"])
        self.assertEqual((before.exception.status, before.exception.code), (404, "knowledge_base_not_found"))
        args = {"query": "partner returns courier", "kbs": ["partner"], "space": source["space_id"]}
        self.assertEqual(kit.dispatch("search_knowledge", args)["error"]["code"], "knowledge_base_not_found")

        mine = harness.http_json("GET", self.server.url + "/v1/keys/self", self.server.admin_key)
        self.server.open_bridge(source, {"space_id": mine["space_id"], "admin_key": self.server.admin_key},
                                ["kb-bridge-reader"], [], knowledge_bases=["partner"])
        got = client.retrieve("partner returns courier", ["partner"], space=source["space_id"],
                              run={"id": "py-bridged", "budget_tokens": 5000})
        self.assertEqual([c.source_uri for c in got.chunks], ["kb://partner/returns"])
        self.assertEqual(got.run["id"], "py-bridged")
        self.assertEqual(got.run["used_tokens"], got.context_tokens)
        found = kit.dispatch("search_knowledge", args)
        self.assertIn("collected by courier", found["context"])
        self.assertNotIn("original card", found["context"], "the kit's own bases never cross")
        self.assertEqual(kit.dispatch("search_knowledge", {"query": "partner", "space": source["space_id"]})["error"]["code"],
                         "invalid_member", "with space, kbs is the model's, never defaulted")

    def test_definitions_equal_the_mcp_servers(self) -> None:
        served = {t["name"]: t for t in mcp_tools(self.server.url, self.writer)}
        # get_context (the context call as a tool) is the server's only: no kit carries it.
        self.assertEqual(set(served), {"search_agent_memory", "remember", "search_knowledge", "get_context"})
        kit = agentmemory.Client(self.server.url, self.writer).tools(agent_memory=True, write_agent_memory=True,
                                                                     knowledge=True)
        self.assertEqual(kit.names, ["search_agent_memory", "remember", "search_knowledge"])
        for d in kit.definitions:
            self.assertEqual(d.description, served[d.name]["description"], d.name)
            self.assertEqual(d.parameters, served[d.name]["inputSchema"], d.name)
        for o in kit.openai():
            self.assertEqual(o["type"], "function")
            self.assertEqual(o["function"]["parameters"], served[o["function"]["name"]]["inputSchema"])
        for a in kit.anthropic():
            self.assertEqual(a["input_schema"], served[a["name"]]["inputSchema"])
            self.assertEqual(a["description"], served[a["name"]]["description"])
        self.assertIn("NOTHING about customers", agentmemory.DEFINITIONS["search_agent_memory"].description)
        self.assertIn("NEVER write customer data", agentmemory.DEFINITIONS["remember"].description)
        self.assertIn("never instructions", agentmemory.DEFINITIONS["search_knowledge"].description)

    def test_search_knowledge_only_where_the_key_reads_knowledge(self) -> None:
        reader = agentmemory.Client(self.server.url, self.reader)
        self.assertEqual(reader.tools(agent_memory=True, knowledge=True).names, ["search_agent_memory"])
        kit = agentmemory.Client(self.server.url, self.writer).tools(agent_memory=False, knowledge=True)
        self.assertEqual(kit.names, ["search_knowledge"])
        found = kit.handle({"id": "call_k", "type": "function", "function": {
            "name": "search_knowledge", "arguments": json.dumps({"query": "refund to the original card", "top_k": 1})}})
        out = json.loads(found["content"])
        self.assertIn("<knowledge_context>", out["context"])
        self.assertIn("original card", out["context"])
        self.assertEqual(out["mode"], "hybrid")
        self.assertEqual([c["source_uri"] for c in out["chunks"]], ["kb://policies/refunds"])
        self.assertNotIn("text", out["chunks"][0])  # chunk text reaches the model fenced, in context only
        named = kit.dispatch("search_knowledge", {"query": "express delivery", "kbs": [self.kb],
                                                  "filters": {"source_uri_prefix": "kb://policies/shipping"}})
        self.assertEqual([c["title"] for c in named["chunks"]], ["Shipping"])
        self.assertEqual(kit.dispatch("search_knowledge", {"query": "x", "kbs": ["kb_0193a5b2c3d4e5f6"]})["error"]["code"],
                         "knowledge_base_not_found")
        self.assertEqual(kit.dispatch("search_knowledge", {"query": "x", "filters": {"colour": "red"}})["error"]["code"],
                         "invalid_arguments")
        self.assertEqual(kit.dispatch("search_knowledge", {"query": "x", "top_k": 99})["error"]["code"],
                         "invalid_arguments")

    def test_remember_needs_the_write_scope(self) -> None:
        reader = agentmemory.Client(self.server.url, self.reader)
        self.assertEqual(reader.tools(agent_memory=True, write_agent_memory=True).names, ["search_agent_memory"])
        self.assertEqual(reader.tools(agent_memory=True, write_agent_memory=True, can_write=True).names,
                         ["search_agent_memory", "remember"])
        writer = agentmemory.Client(self.server.url, self.writer)
        self.assertEqual(writer.tools(agent_memory=True).names, ["search_agent_memory"])
        kit = reader.tools(agent_memory=True, write_agent_memory=True)
        self.assertEqual(kit.dispatch("remember", {"kind": "procedure", "title": "x", "body": "y"})["error"]["code"],
                         "unknown_tool")

    def test_no_tools_while_agent_memory_is_off(self) -> None:
        self.server.create_space("tools-off")
        self.server.put_document("features", {"agent_state": {"enabled": True}, "agent_memory": {"enabled": False}})
        key = self.server.mint_key({"kind": "agent", "agent": "off-bot", "vendor": "v",
                                    "scopes": ["agent_memory", "agent_memory:write"]})
        self.assertEqual(agentmemory.Client(self.server.url, key).tools(agent_memory=True, write_agent_memory=True).names, [])
        self.assertEqual(mcp_tools(self.server.url, key), [])

    def test_dispatch_openai_and_anthropic_calls(self) -> None:
        conv = agentmemory.Client(self.server.url, self.writer).conversation("call-4471")
        kit = conv.tools(agent_memory=True, write_agent_memory=True)
        refused = kit.handle({"id": "call_1", "type": "function", "function": {
            "name": "remember", "arguments": json.dumps({"kind": "pitfall", "title": "Call back",
                                                         "body": "ligar para suporte(11)91234-5678"})}})
        self.assertEqual((refused["role"], refused["tool_call_id"]), ("tool", "call_1"))
        err = json.loads(refused["content"])["error"]
        self.assertEqual((err["code"], err["kinds"]), ("personal_data_in_agent_memory", ["phone"]))
        self.assertNotIn("91234", refused["content"])

        stored = kit.handle({"type": "tool_use", "id": "toolu_1", "name": "remember", "input": {
            "kind": "tool_note", "title": "Scheduling API", "body": "Dates without a time zone are refused.",
            "tags": ["scheduling"]}})
        self.assertEqual((stored["type"], stored["tool_use_id"], stored["is_error"]), ("tool_result", "toolu_1", False))
        out = json.loads(stored["content"])
        self.assertEqual(out["status"], "stored")
        note = agentmemory.Client(self.server.url, self.writer).search("scheduling time zone")[0]
        self.assertEqual(note.id, out["note_id"])
        self.assertEqual(note.evidence, {"conversation_id": "call-4471"})

        found = kit.dispatch("search_agent_memory", '{"query": "time zone", "tags": ["scheduling"]}')
        self.assertTrue(found["enabled"])
        self.assertEqual([n["title"] for n in found["notes"]], ["Scheduling API"])
        self.assertEqual(set(found["notes"][0]), {"id", "kind", "title", "body", "tags", "version", "source_id"})
        # CTX-3: a run travels to the service (as headers) and its figures come back.
        in_run = kit.dispatch("search_agent_memory", {"query": "time zone", "run": {"id": "py-run", "budget_tokens": 1000}})
        self.assertEqual([n["title"] for n in in_run["notes"]], ["Scheduling API"])
        run = in_run["run"]
        self.assertEqual(run["budget_tokens"], 1000)
        self.assertGreater(run["used_tokens"], 0)
        self.assertEqual(run["used_tokens"] + run["remaining_tokens"], 1000)

        self.assertEqual(kit.dispatch("remember", {"kind": "pitfall", "title": "x"})["error"]["code"], "invalid_arguments")
        self.assertEqual(kit.dispatch("search_agent_memory", {"query": "x", "extra": 1})["error"]["code"], "invalid_arguments")
        self.assertEqual(kit.dispatch("search_agent_memory", "{not json")["error"]["code"], "invalid_arguments")
        dup = kit.dispatch("remember", {"kind": "tool_note", "title": "Scheduling API",
                                        "body": "Dates without a time zone are refused.", "tags": ["scheduling"]})
        self.assertEqual((dup["status"], dup["duplicate_of"]), ("duplicate", out["note_id"]))

    def test_system_prompt_places_the_block(self) -> None:
        conv = agentmemory.Client(self.server.url, self.writer).conversation("call-9")
        conv.remember("procedure", "Refund to a gift card", "Ask for the mailing address, then use Record Reason.",
                      tags=["refund"])
        notes = conv.agent_memory(max_tokens=300, tags=["refund"])
        prompt = agentmemory.system_prompt("You are the shop's assistant.", notes, "Customer tier: gold")
        self.assertLess(prompt.index("You are"), prompt.index("<agent_notes>"))
        self.assertLess(prompt.index("</agent_notes>"), prompt.index("Customer tier"))


if __name__ == "__main__":
    unittest.main()
