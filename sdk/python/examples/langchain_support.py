"""Memory in a LangChain chat model in 5 lines (the lines in build, and the chain in main).

Run it against `make run` (agentmemory dev on 127.0.0.1:8080) with an agent key holding
agent_memory and agent_memory:write (README "Agent keys"), langchain-core and a chat model:

    pip install langchain-core langchain-openai
    cd sdk/python && AGENTMEMORY_URL=http://127.0.0.1:8080 AGENTMEMORY_KEY=am_... OPENAI_API_KEY=sk-... \
        python examples/langchain_support.py

The prompt step puts one system message first (instructions, then the notes block); the tools
are search_agent_memory and remember. tests/test_integrations.py runs build() and answer()
against the real binary.
"""

from typing import Any, List

from agentmemory import Client
from agentmemory.integrations.langchain import AgentMemory


def build(client: Client):  # type: ignore[no-untyped-def]
    memory = AgentMemory(client, write_agent_memory=True)
    return memory.prompt("You are the shop's assistant. When you learn how a tool or a process works, "
                         "remember the general lesson (never customer data)."), memory.tools()


def answer(chain: Any, tools: List[Any], messages: List[Any]) -> Any:
    """The tool loop: call the model, run the tools it asks for, until it answers."""
    from langchain_core.messages import ToolMessage
    by_name = {t.name: t for t in tools}
    while True:
        reply = chain.invoke(messages)
        if not reply.tool_calls:
            return reply
        messages.append(reply)
        for call in reply.tool_calls:
            messages.append(ToolMessage(by_name[call["name"]].invoke(call["args"]), tool_call_id=call["id"]))


def main() -> None:
    from langchain_core.messages import HumanMessage
    from langchain_openai import ChatOpenAI
    prompt, tools = build(Client())  # AGENTMEMORY_URL, AGENTMEMORY_KEY
    chain = prompt | ChatOpenAI(model="gpt-4o-mini").bind_tools(tools)
    print(answer(chain, tools, [HumanMessage("How do I refund an order to a gift card?")]).content)


if __name__ == "__main__":
    main()
