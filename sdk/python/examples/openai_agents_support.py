"""Memory in an OpenAI Agents SDK agent in 5 lines (the lines in build and main).

Run it against `make run` (agentmemory dev on 127.0.0.1:8080) with an agent key holding
agent_memory and agent_memory:write (README "Agent keys"), and the OpenAI Agents SDK with a model:

    pip install openai-agents
    cd sdk/python && AGENTMEMORY_URL=http://127.0.0.1:8080 AGENTMEMORY_KEY=am_... OPENAI_API_KEY=sk-... \
        python examples/openai_agents_support.py

The notes block lands after the instructions (before the customer's context); the model may call
search_agent_memory and remember. tests/test_integrations.py runs build() against the real binary.
"""

from agentmemory import Client
from agentmemory.integrations.openai_agents import AgentMemory


def build(client: Client):  # type: ignore[no-untyped-def]
    memory = AgentMemory(client, write_agent_memory=True)
    agent = memory.agent(name="Support", instructions="You are the shop's assistant. When you learn how a "
                         "tool or a process works, remember the general lesson (never customer data).")
    return memory, agent


def main() -> None:
    from agents import Runner
    memory, agent = build(Client())  # AGENTMEMORY_URL, AGENTMEMORY_KEY
    result = Runner.run_sync(agent, "How do I refund an order to a gift card?", run_config=memory.run_config())
    print(result.final_output)


if __name__ == "__main__":
    main()
