"""Agent memory in the OpenAI Agents SDK (``pip install openai-agents``, import name ``agents``).

    from agents import Runner
    from agentmemory import Client
    from agentmemory.integrations.openai_agents import AgentMemory

    memory = AgentMemory(Client(), write_agent_memory=True)          # AGENTMEMORY_URL / AGENTMEMORY_KEY
    agent = memory.agent(name="Support", instructions="You are the shop's assistant.")
    result = Runner.run_sync(agent, "How do I refund to a gift card?", run_config=memory.run_config())

Written against the SDK's documented public interface only: ``Agent(name, instructions, tools,
...)`` whose ``instructions`` is a callable ``(run_context, agent) -> str`` (here async),
``FunctionTool(name, description, params_json_schema, on_invoke_tool, strict_json_schema)`` whose
``on_invoke_tool(tool_context, args_json)`` returns the result as text, and
``RunConfig(call_model_input_filter=...)``, called before each model call with
``CallModelData(model_data=ModelInputData(input, instructions), agent, context)``. The SDK is
imported only when an object of it is built: this module imports without it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from typing import Any, Callable, List, Optional, Union

from . import Memory, latest_user_text, require

__all__ = ["AgentMemory"]

#: The instructions an agent is given: text, or the SDK's callable (run_context, agent) -> str
#: (sync or async).
Instructions = Union[str, Callable[[Any, Any], Any]]

#: The customer's context: text, or a callable (run_context) -> str (sync or async).
CustomerContext = Union[None, str, Callable[[Any], Any]]


def _agents() -> Any:
    return require("agents", "openai-agents", "openai_agents")


async def _resolve(value: Any, *args: Any) -> str:
    """value itself (text), or what the callable returns for args (awaited when a coroutine)."""
    if value is None:
        return ""
    if callable(value):
        value = value(*args)
        if inspect.isawaitable(value):
            value = await value
    return str(value or "")


class AgentMemory(Memory):
    """Memory for OpenAI Agents SDK agents. Takes the options of :class:`Memory`: ``client``,
    ``agent_memory`` (default True), ``write_agent_memory``, ``knowledge`` (``off``,
    ``before_call``, ``tool``), ``knowledge_bases``, ``view``, ``task``, ``max_tokens``.

    ``agent()`` builds the Agent; ``tools()`` and ``instructions()`` give its parts for an Agent
    built by hand; ``run_config()`` is needed for ``knowledge="before_call"`` only (the SDK hands
    the latest user message to its ``call_model_input_filter``, not to ``instructions``) and is
    harmless otherwise."""

    def agent(self, *, name: str, instructions: Instructions = "", customer_context: CustomerContext = None,
              tools: Optional[List[Any]] = None, **agent_kwargs: Any) -> Any:
        """An ``agents.Agent`` whose instructions place the notes block after ``instructions``
        and before the customer's context (``customer_context``: text, or a callable of the run
        context), and whose tools are the kit's FunctionTools followed by ``tools``. Other
        keyword arguments go to Agent as given (``model``, ``handoffs``...). Raises ImportError
        without openai-agents; AgentMemoryError when tool discovery fails."""
        agents = _agents()
        return agents.Agent(name=name, instructions=self.instructions(instructions, customer_context),
                            tools=self.tools() + list(tools or []), **agent_kwargs)

    def instructions(self, instructions: Instructions = "", customer_context: CustomerContext = None) -> Callable[[Any, Any], Any]:
        """The Agent's dynamic instructions: an async callable ``(run_context, agent) -> str``
        returning the instructions, the notes block (one cached context call: no request inside
        the freshness period) and the customer's context. With ``before_call`` the knowledge
        evidence is added by ``run_config()``'s filter, between the block and the customer's
        context."""

        async def build(run_context: Any, agent: Any) -> str:
            text = await _resolve(instructions, run_context, agent)
            customer = await _resolve(customer_context, run_context)
            block = ""
            if self.agent_memory:
                block, _ = await asyncio.to_thread(self.block_and_knowledge, "")
            return self.compose(text, block, customer)

        return build

    def run_config(self, **run_config_kwargs: Any) -> Any:
        """An ``agents.RunConfig`` (``run_config_kwargs`` passed through) whose
        ``call_model_input_filter`` adds, with ``knowledge="before_call"``, the knowledge
        evidence for the latest user message to instructions this memory built (a context call
        with ``knowledge: {kbs, query}`` before each model call). Other instructions pass
        unchanged. Raises ImportError without openai-agents."""
        agents = _agents()
        if self.knowledge != "before_call":
            return agents.RunConfig(**run_config_kwargs)
        return agents.RunConfig(call_model_input_filter=self._filter, **run_config_kwargs)

    async def _filter(self, data: Any) -> Any:
        """call_model_input_filter: ModelInputData with the knowledge placed after the block."""
        model_data = data.model_data
        parts = self.parts_of(model_data.instructions)
        if parts is None:
            return model_data
        instructions, block, customer = parts
        query = latest_user_text(model_data.input)
        found_block, knowledge = await asyncio.to_thread(self.block_and_knowledge, query)
        if not knowledge:
            return model_data
        text = self.compose(instructions, found_block or block, "\n\n".join(p for p in (customer, knowledge) if p))
        return dataclasses.replace(model_data, instructions=text)

    def tools(self) -> List[Any]:
        """The kit as ``agents.FunctionTool``s: the MCP server's names, descriptions and JSON
        Schemas (``strict_json_schema`` False: the schemas have optional members), each
        ``on_invoke_tool`` returning the dispatcher's JSON text; a refusal is such a result
        (``{"error": {"code": ...}}``), never an exception that ends the run. Raises ImportError
        without openai-agents; AgentMemoryError when discovery fails."""
        agents = _agents()
        out = []
        for d in self.toolkit().definitions:
            out.append(agents.FunctionTool(name=d.name, description=d.description,
                                           params_json_schema=dict(d.parameters),
                                           on_invoke_tool=self._invoker(d.name), strict_json_schema=False))
        return out

    def _invoker(self, name: str) -> Callable[[Any, str], Any]:
        async def on_invoke_tool(tool_context: Any, args_json: str) -> str:
            return await asyncio.to_thread(self.call_tool, name, args_json)

        return on_invoke_tool
