"""Agent memory in LangChain (``pip install langchain-core``, import name ``langchain_core``).

    from agentmemory import Client
    from agentmemory.integrations.langchain import AgentMemory

    memory = AgentMemory(Client(), write_agent_memory=True)          # AGENTMEMORY_URL / AGENTMEMORY_KEY
    chain = memory.prompt("You are the shop's assistant.") | model.bind_tools(memory.tools())
    reply = chain.invoke([HumanMessage("How do I refund to a gift card?")])

Written against langchain-core's documented public interface only:
``StructuredTool.from_function(func, coroutine, name, description, args_schema, infer_schema)``
with a JSON Schema dict as ``args_schema``, ``RunnableLambda(func, afunc)`` for the prompt step,
and the messages of ``langchain_core.messages`` (``SystemMessage``; any message with ``type`` and
``content``). langchain-core is imported only when an object of it is built: this module imports
without it. The same tools and prompt step serve LangGraph (a tool node takes BaseTools; the
prompt step maps the state's messages).
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, List, Mapping, Union

from . import Memory, latest_user_text, require

__all__ = ["AgentMemory"]

#: The customer's context: text, or a callable of the prompt step's input returning text.
CustomerContext = Union[None, str, Callable[[Any], str]]


def _messages_of(value: Any) -> List[Any]:
    """The messages of a prompt step's input: a list of messages, a PromptValue
    (``to_messages()``), a mapping with ``messages`` (LangGraph's state) or a string (one human
    message)."""
    if isinstance(value, str):
        core = require("langchain_core.messages", "langchain-core", "langchain")
        return [core.HumanMessage(content=value)]
    if isinstance(value, Mapping):
        return list(value.get("messages") or [])
    if hasattr(value, "to_messages"):
        return list(value.to_messages())
    return list(value or [])


class AgentMemory(Memory):
    """Memory for LangChain and LangGraph. Takes the options of :class:`Memory`: ``client``,
    ``agent_memory`` (default True), ``write_agent_memory``, ``knowledge`` (``off``,
    ``before_call``, ``tool``), ``knowledge_bases``, ``view``, ``task``, ``max_tokens``.

    ``prompt()`` is the step that puts the system message first; ``tools()`` the kit as
    StructuredTools; ``messages()`` the same placement for code that calls the model itself."""

    def messages(self, instructions: str, value: Any, customer_context: CustomerContext = None) -> List[Any]:
        """``[SystemMessage(system prompt), *messages]`` for the messages in ``value`` (see the
        prompt step): the instructions, the notes block, then the context (the knowledge
        evidence for the latest human message with ``before_call``, then the customer's
        context). A leading system message in ``value`` is kept as the instructions' end and
        replaced, so the system prompt stays one message. Raises ImportError without
        langchain-core."""
        core = require("langchain_core.messages", "langchain-core", "langchain")
        msgs = _messages_of(value)
        if msgs and getattr(msgs[0], "type", None) == "system":
            own = str(getattr(msgs[0], "content", "") or "")
            instructions = "\n\n".join(p for p in (instructions, own) if p)
            msgs = msgs[1:]
        customer = customer_context(value) if callable(customer_context) else (customer_context or "")
        text = self.system_prompt(instructions, latest_user_text(msgs), customer)
        return [core.SystemMessage(content=text)] + msgs

    def prompt(self, instructions: str = "", customer_context: CustomerContext = None) -> Any:
        """The prompt step: a ``RunnableLambda`` mapping the chain's input (messages, a
        PromptValue, ``{"messages": [...]}`` or a string) to ``messages(...)``, placed before the
        model (``memory.prompt(...) | model``); its async form runs the HTTP calls in a worker
        thread. One cached context call per model call (no request inside the freshness
        period). Raises ImportError without langchain-core."""
        runnables = require("langchain_core.runnables", "langchain-core", "langchain")

        def step(value: Any) -> List[Any]:
            return self.messages(instructions, value, customer_context)

        async def astep(value: Any) -> List[Any]:
            return await asyncio.to_thread(step, value)

        return runnables.RunnableLambda(step, afunc=astep, name="agentmemory_prompt")

    def tools(self) -> List[Any]:
        """The kit as ``StructuredTool``s: the MCP server's names, descriptions and JSON Schemas
        (as ``args_schema`` dicts), each returning the dispatcher's JSON text; a refusal is such a
        result (``{"error": {"code": ...}}``), never an exception that ends the run. Raises
        ImportError without langchain-core; AgentMemoryError when discovery fails."""
        tools_mod = require("langchain_core.tools", "langchain-core", "langchain")
        out = []
        for d in self.toolkit().definitions:
            run, arun = self._runner(d.name)
            out.append(tools_mod.StructuredTool.from_function(
                func=run, coroutine=arun, name=d.name, description=d.description,
                args_schema=dict(d.parameters), infer_schema=False))
        return out

    def _runner(self, name: str) -> Any:
        def run(**arguments: Any) -> str:
            return self.call_tool(name, arguments)

        async def arun(**arguments: Any) -> str:
            return await asyncio.to_thread(self.call_tool, name, arguments)

        return run, arun
