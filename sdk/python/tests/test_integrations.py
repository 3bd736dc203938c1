"""The OpenAI Agents SDK and LangChain integrations, and the examples that use them, against the
real binary. The frameworks cannot be installed here (no Python package index): the tests put
small stand-ins of their documented call contracts (tests/standins.py) into sys.modules, and a
scripted model records what it received (instructions, then the notes block, then the customer's
context, then the knowledge evidence) and issues tool calls whose effect is read back from the
server."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import sys
import unittest
from pathlib import Path
from typing import Any, Callable, List, Tuple

import harness
import standins

import agentmemory

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

LESSON = {"kind": "tool_note", "title": "Gift card refunds",
          "body": "The refund screen shows the gift card option only after the order is marked returned.",
          "tags": ["refund"]}
PERSONAL = {"kind": "pitfall", "title": "Call back", "body": "ligar para suporte (11) 91234-5678"}


def load_example(name: str) -> Any:
    """Imports sdk/python/examples/<name>.py (with whatever stand-in is installed)."""
    spec = importlib.util.spec_from_file_location("example_" + name, EXAMPLES / (name + ".py"))
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def before(text: str, *parts: str) -> bool:
    """Whether every part is in text, each after the one before it."""
    at = -1
    for p in parts:
        i = text.find(p)
        if i <= at:
            return False
        at = i
    return True


class Scripted:
    """A scripted model: each turn is a function of what the model received, returning its
    answer; ``seen`` keeps everything it received, in order."""

    def __init__(self, *turns: Callable[..., Any]) -> None:
        self.turns = list(turns)
        self.seen: List[Tuple[Any, ...]] = []

    def __call__(self, *received: Any) -> Any:
        self.seen.append(received)
        return self.turns[len(self.seen) - 1](*received)


class ChatModel(standins.Runnable):
    """A scripted LangChain chat model: ``bind_tools`` records the tools; ``invoke(messages)``
    answers with the next turn."""

    def __init__(self, script: Scripted) -> None:
        self.script = script
        self.bound: List[Any] = []

    def bind_tools(self, tools: List[Any]) -> "ChatModel":
        self.bound = list(tools)
        return self

    def invoke(self, value: Any) -> Any:
        return self.script(list(value))


def outputs(items: List[Any]) -> List[Any]:
    """The decoded function_call_output items of an OpenAI Agents input list."""
    return [json.loads(i["output"]) for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]


class IntegrationTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.server = harness.DevServer(fake_model=True)
        cls.server.start()
        setup = harness.setup_space(cls.server, knowledge=True)
        cls.kb = setup["bases"]["handbook"]
        spec = dict(setup["agent_key"], agent="frame-bot")
        cls.writer = cls.server.mint_key(dict(spec, scopes=["agent_memory", "agent_memory:write", "knowledge:read"]))
        cls.reader = cls.server.mint_key(dict(spec, scopes=["agent_memory", "knowledge:read"]))
        agentmemory.Client(cls.server.url, cls.writer).remember(
            "procedure", "Refund to a gift card", "Ask for the mailing address, then use Record Reason.", tags=["refund"])

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.close()

    def client(self, key: str = "") -> agentmemory.Client:
        return agentmemory.Client(self.server.url, key or self.writer)

    def stored(self, title: str) -> List[agentmemory.Note]:
        return [n for n in self.client().search(title) if n.title == title]

    # The OpenAI Agents SDK -----------------------------------------------------------------------

    def test_openai_agents_example_places_the_block_and_remembers(self) -> None:
        from standins import Runner, ScriptedTurn
        script = Scripted(lambda instr, items, tools: ScriptedTurn(tool_calls=[("remember", json.dumps(LESSON))]),
                          lambda instr, items, tools: ScriptedTurn(output="Mark the order returned first."))
        with standins.installed("openai_agents"):
            memory, agent = load_example("openai_agents_support").build(self.client())
            agent.model = script
            result = Runner.run_sync(agent, "How do I refund an order to a gift card?", run_config=memory.run_config())
        instructions, _, tools = script.seen[0]
        self.assertTrue(before(instructions, "You are the shop's assistant.", "<agent_notes>", "Refund to a gift card",
                               "</agent_notes>"), instructions)
        self.assertEqual([t.name for t in tools], ["search_agent_memory", "remember"])
        self.assertEqual({t.description for t in tools},
                         {agentmemory.DEFINITIONS[n].description for n in ("search_agent_memory", "remember")})
        self.assertFalse(tools[1].strict_json_schema)
        self.assertEqual(tools[1].params_json_schema, agentmemory.REMEMBER_SCHEMA)
        [out] = outputs(script.seen[1][1])
        self.assertEqual(out["status"], "stored")
        self.assertEqual([n.id for n in self.stored("Gift card refunds")], [out["note_id"]])
        self.assertEqual(result.final_output, "Mark the order returned first.")
        self.assertIn("Gift card refunds", script.seen[1][0])  # the next model call sees the new note

    def test_openai_agents_before_call_knowledge_sits_between_block_and_customer(self) -> None:
        from standins import Runner, ScriptedTurn
        script = Scripted(lambda instr, items, tools: ScriptedTurn(output="Yes, to the original card."))
        with standins.installed("openai_agents"):
            from agentmemory.integrations.openai_agents import AgentMemory
            memory = AgentMemory(self.client(), knowledge="before_call", knowledge_bases=[self.kb])
            agent = memory.agent(name="Support", instructions=lambda ctx, agent: "You are %s." % agent.name,
                                 customer_context=lambda ctx: "Customer tier: " + ctx.context["tier"])
            agent.model = script
            Runner.run_sync(agent, "Can I get a refund to my original card?", context={"tier": "gold"},
                            run_config=memory.run_config())
            without_filter = Scripted(lambda instr, items, tools: ScriptedTurn(output="ok"))
            agent.model = without_filter
            Runner.run_sync(agent, "Can I get a refund to my original card?", context={"tier": "gold"})
        instructions, _, tools = script.seen[0]
        self.assertTrue(before(instructions, "You are Support.", "<agent_notes>", "Refund to a gift card",
                               "Customer tier: gold", "<knowledge_context>", "original card", "</knowledge_context>"),
                        instructions)
        self.assertEqual([t.name for t in tools], ["search_agent_memory"])
        # Without run_config the block is still placed; only the evidence needs the filter.
        self.assertTrue(before(without_filter.seen[0][0], "You are Support.", "<agent_notes>", "Customer tier: gold"))
        self.assertNotIn("<knowledge_context>", without_filter.seen[0][0])

    def test_openai_agents_refused_remember_goes_back_to_the_model(self) -> None:
        from standins import Runner, ScriptedTurn
        script = Scripted(lambda instr, items, tools: ScriptedTurn(tool_calls=[("remember", json.dumps(PERSONAL))]),
                          lambda instr, items, tools: ScriptedTurn(output="I will not keep that."))
        with standins.installed("openai_agents"):
            from agentmemory.integrations.openai_agents import AgentMemory
            memory = AgentMemory(self.client(), write_agent_memory=True)
            agent = memory.agent(name="Support", instructions="You are the shop's assistant.")
            agent.model = script
            result = Runner.run_sync(agent, "Call me back", run_config=memory.run_config())
        [out] = outputs(script.seen[1][1])
        self.assertEqual((out["error"]["code"], out["error"]["kinds"]), ("personal_data_in_agent_memory", ["phone"]))
        self.assertNotIn("91234", json.dumps(out))
        self.assertEqual(result.final_output, "I will not keep that.")
        self.assertEqual(self.stored("Call back"), [])

    def test_openai_agents_knowledge_tool_and_no_remember_without_the_write_scope(self) -> None:
        from standins import Runner, ScriptedTurn
        script = Scripted(lambda instr, items, tools: ScriptedTurn(
            tool_calls=[("search_knowledge", json.dumps({"query": "express delivery"}))]),
            lambda instr, items, tools: ScriptedTurn(output="Next day."))
        with standins.installed("openai_agents"):
            from agentmemory.integrations.openai_agents import AgentMemory
            memory = AgentMemory(self.client(self.reader), write_agent_memory=True, knowledge="tool")
            agent = memory.agent(name="Support", instructions="You are the shop's assistant.")
            agent.model = script
            Runner.run_sync(agent, "When does express delivery arrive?")
        self.assertEqual([t.name for t in script.seen[0][2]], ["search_agent_memory", "search_knowledge"])
        [out] = outputs(script.seen[1][1])
        self.assertIn("<knowledge_context>", out["context"])
        self.assertIn("next day", out["context"])

    # LangChain ----------------------------------------------------------------------------------

    def test_langchain_example_places_the_block_and_remembers(self) -> None:
        from standins import AIMessage, HumanMessage
        lesson = dict(LESSON, title="Returned orders", body="A returned order unlocks the refund screen's card option.")
        script = Scripted(lambda msgs: AIMessage("", tool_calls=[{"name": "remember", "args": lesson, "id": "t1"}]),
                          lambda msgs: AIMessage("Mark the order returned first."))
        model = ChatModel(script)
        with standins.installed("langchain"):
            example = load_example("langchain_support")
            prompt, tools = example.build(self.client())
            reply = example.answer(prompt | model.bind_tools(tools), tools,
                                   [HumanMessage("How do I refund an order to a gift card?")])
        first = script.seen[0][0]
        self.assertEqual([m.type for m in first], ["system", "human"])
        self.assertTrue(before(first[0].content, "You are the shop's assistant.", "<agent_notes>",
                               "Refund to a gift card", "</agent_notes>"), first[0].content)
        self.assertEqual([t.name for t in model.bound], ["search_agent_memory", "remember"])
        self.assertEqual(model.bound[1].args_schema, agentmemory.REMEMBER_SCHEMA)
        second = script.seen[1][0]
        self.assertEqual([m.type for m in second], ["system", "human", "ai", "tool"])
        out = json.loads(second[3].content)
        self.assertEqual((out["status"], second[3].tool_call_id), ("stored", "t1"))
        self.assertEqual([n.id for n in self.stored("Returned orders")], [out["note_id"]])
        self.assertEqual(reply.content, "Mark the order returned first.")

    def test_langchain_before_call_order_and_a_refusal(self) -> None:
        from standins import AIMessage, HumanMessage, SystemMessage
        script = Scripted(lambda msgs: AIMessage("", tool_calls=[{"name": "remember", "args": PERSONAL, "id": "t9"}]),
                          lambda msgs: AIMessage("Yes, to the original card."))
        model = ChatModel(script)
        with standins.installed("langchain"):
            from agentmemory.integrations.langchain import AgentMemory
            memory = AgentMemory(self.client(), write_agent_memory=True, knowledge="before_call",
                                 knowledge_bases=[self.kb])
            tools = memory.tools()
            chain = memory.prompt("You are the shop's assistant.", customer_context="Customer tier: gold") | \
                model.bind_tools(tools)
            messages: List[Any] = [SystemMessage("Answer in English."),
                                   HumanMessage("Can I get a refund to my original card?")]
            ai = asyncio.run(chain.ainvoke(messages))
            messages.append(ai)
            from standins import ToolMessage
            result = asyncio.run(tools[1].ainvoke(ai.tool_calls[0]["args"]))
            messages.append(ToolMessage(result, tool_call_id="t9"))
            final = chain.invoke({"messages": messages})
        system = script.seen[0][0][0]
        self.assertEqual([m.type for m in script.seen[0][0]], ["system", "human"])
        self.assertTrue(before(system.content, "You are the shop's assistant.", "Answer in English.", "<agent_notes>",
                               "Customer tier: gold", "<knowledge_context>", "original card"), system.content)
        err = json.loads(result)["error"]
        self.assertEqual((err["code"], err["kinds"]), ("personal_data_in_agent_memory", ["phone"]))
        self.assertEqual([m.type for m in script.seen[1][0]], ["system", "human", "ai", "tool"])
        self.assertEqual(final.content, "Yes, to the original card.")
        self.assertEqual(self.stored("Call back"), [])

    # Without the frameworks ------------------------------------------------------------------------

    def test_import_without_the_frameworks_and_name_the_package(self) -> None:
        cases = [("openai_agents", ("agents", "agents.run"), "openai-agents"),
                 ("langchain", ("langchain_core", "langchain_core.tools", "langchain_core.messages",
                                "langchain_core.runnables"), "langchain-core")]
        for module, names, pip_name in cases:
            with self.subTest(module=module), standins.absent(*names):
                sys.modules.pop("agentmemory.integrations." + module, None)
                mod = importlib.import_module("agentmemory.integrations." + module)
                memory = mod.AgentMemory(self.client())
                with self.assertRaises(ImportError) as cm:
                    memory.tools()
                self.assertIn("pip install " + pip_name, str(cm.exception))
                prompt = memory.system_prompt("Be brief.")  # the prompt needs no framework
                self.assertTrue(before(prompt, "Be brief.", "<agent_notes>", "Refund to a gift card"), prompt)
        with self.assertRaises(ValueError):
            agentmemory.integrations.Memory(self.client(), knowledge="sometimes")


if __name__ == "__main__":
    unittest.main()
