"""Stand-ins of the two frameworks' documented call contracts, for the integration tests only.

No Python package index is reachable here, so neither ``openai-agents`` nor ``langchain-core``
can be installed; these small modules follow the parts of their documented public interfaces the
integrations use, and a test installs them into ``sys.modules`` under the frameworks' import
names (``agents``, ``langchain_core.*``) with :func:`installed`, removing them afterwards. They
are not part of the package.

OpenAI Agents SDK (openai.github.io/openai-agents-python): ``Agent(name, instructions, tools,
model)`` with ``instructions`` a string or a callable ``(RunContextWrapper, Agent) -> str`` (sync
or async); ``FunctionTool(name, description, params_json_schema, on_invoke_tool,
strict_json_schema)`` whose ``on_invoke_tool(ToolContext, args_json)`` is awaited and returns
text; ``RunConfig(call_model_input_filter=...)`` called before each model call with
``CallModelData(model_data=ModelInputData(input, instructions), agent, context)`` and returning
the ModelInputData to send; ``Runner.run`` / ``Runner.run_sync(agent, input, context=...,
run_config=...)`` returning a result with ``final_output``. The model here is a scripted
callable ``model(instructions, input_items, tools) -> ScriptedTurn``.

langchain-core (reference.langchain.com/python/langchain-core): messages with ``type`` and
``content`` (``SystemMessage``, ``HumanMessage``, ``AIMessage(tool_calls=[{name, args, id}])``,
``ToolMessage(content, tool_call_id)``); ``RunnableLambda(func, afunc=None, name=None)`` with
``invoke``/``ainvoke`` and ``|``; ``StructuredTool.from_function(func, coroutine, name,
description, args_schema, infer_schema)`` whose ``invoke(dict)`` calls ``func(**args)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import sys
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional


# The OpenAI Agents SDK ------------------------------------------------------------------------

@dataclass
class RunContextWrapper:
    context: Any = None


@dataclass
class ToolContext(RunContextWrapper):
    tool_name: str = ""
    tool_call_id: str = ""


@dataclass
class FunctionTool:
    name: str
    description: str
    params_json_schema: Dict[str, Any]
    on_invoke_tool: Callable[[ToolContext, str], Any]
    strict_json_schema: bool = True


@dataclass
class Agent:
    name: str
    instructions: Any = None
    tools: List[Any] = field(default_factory=list)
    model: Any = None


@dataclass
class ModelInputData:
    input: List[Any]
    instructions: Optional[str]


@dataclass
class CallModelData:
    model_data: ModelInputData
    agent: Agent
    context: Any


@dataclass
class RunConfig:
    model: Any = None
    call_model_input_filter: Optional[Callable[[CallModelData], Any]] = None
    workflow_name: str = "Agent workflow"


@dataclass
class ScriptedTurn:
    """What the scripted model answers: tool calls ``[(name, args_json)]`` or a final output."""

    tool_calls: List[Any] = field(default_factory=list)
    output: str = ""


@dataclass
class RunResult:
    final_output: Any
    new_items: List[Any]


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class Runner:
    @staticmethod
    async def run(agent: Agent, input: Any, *, context: Any = None, run_config: Optional[RunConfig] = None,
                  max_turns: int = 10) -> RunResult:
        wrapper = RunContextWrapper(context=context)
        items: List[Any] = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        start = len(items)
        model = (run_config.model if run_config and run_config.model else None) or agent.model
        for _ in range(max_turns):
            instructions = agent.instructions
            if callable(instructions):
                instructions = await _maybe_await(instructions(wrapper, agent))
            data = ModelInputData(input=list(items), instructions=instructions)
            if run_config is not None and run_config.call_model_input_filter is not None:
                data = await _maybe_await(run_config.call_model_input_filter(CallModelData(data, agent, context)))
            turn: ScriptedTurn = model(data.instructions, data.input, agent.tools)
            if not turn.tool_calls:
                return RunResult(final_output=turn.output, new_items=items[start:])
            for i, (name, args_json) in enumerate(turn.tool_calls):
                call_id = "call_%d_%d" % (len(items), i)
                items.append({"type": "function_call", "call_id": call_id, "name": name, "arguments": args_json})
                tool = next(t for t in agent.tools if t.name == name)
                out = await tool.on_invoke_tool(ToolContext(context=context, tool_name=name, tool_call_id=call_id),
                                                args_json)
                items.append({"type": "function_call_output", "call_id": call_id, "output": str(out)})
        raise RuntimeError("max turns exceeded")

    @staticmethod
    def run_sync(agent: Agent, input: Any, **kw: Any) -> RunResult:
        return asyncio.run(Runner.run(agent, input, **kw))


def _openai_agents_modules() -> Dict[str, types.ModuleType]:
    agents = types.ModuleType("agents")
    run = types.ModuleType("agents.run")
    for name in ("Agent", "FunctionTool", "RunContextWrapper", "ToolContext", "RunConfig", "Runner", "RunResult"):
        setattr(agents, name, globals()[name])
    for name in ("RunConfig", "ModelInputData", "CallModelData"):
        setattr(run, name, globals()[name])
    agents.run = run  # type: ignore[attr-defined]
    return {"agents": agents, "agents.run": run}


# langchain-core ------------------------------------------------------------------------------

@dataclass
class BaseMessage:
    content: Any
    type: str = ""


@dataclass
class SystemMessage(BaseMessage):
    type: str = "system"


@dataclass
class HumanMessage(BaseMessage):
    type: str = "human"


@dataclass
class AIMessage(BaseMessage):
    type: str = "ai"
    tool_calls: List[Dict[str, Any]] = field(default_factory=list)


@dataclass
class ToolMessage(BaseMessage):
    tool_call_id: str = ""
    type: str = "tool"


class Runnable:
    def invoke(self, value: Any) -> Any:
        raise NotImplementedError

    async def ainvoke(self, value: Any) -> Any:
        return await asyncio.to_thread(self.invoke, value)

    def __or__(self, other: Any) -> "Runnable":
        return RunnableSequence(self, other if isinstance(other, Runnable) else RunnableLambda(other))


class RunnableSequence(Runnable):
    def __init__(self, first: Runnable, second: Runnable) -> None:
        self.first, self.second = first, second

    def invoke(self, value: Any) -> Any:
        return self.second.invoke(self.first.invoke(value))

    async def ainvoke(self, value: Any) -> Any:
        return await self.second.ainvoke(await self.first.ainvoke(value))


class RunnableLambda(Runnable):
    def __init__(self, func: Callable[[Any], Any], afunc: Optional[Callable[[Any], Any]] = None,
                 name: Optional[str] = None) -> None:
        self.func, self.afunc, self.name = func, afunc, name

    def invoke(self, value: Any) -> Any:
        return self.func(value)

    async def ainvoke(self, value: Any) -> Any:
        if self.afunc is not None:
            return await self.afunc(value)
        return await super().ainvoke(value)


class StructuredTool(Runnable):
    def __init__(self, name: str, description: str, args_schema: Any, func: Optional[Callable[..., Any]],
                 coroutine: Optional[Callable[..., Any]]) -> None:
        self.name, self.description, self.args_schema = name, description, args_schema
        self.func, self.coroutine = func, coroutine

    @classmethod
    def from_function(cls, func: Optional[Callable[..., Any]] = None, coroutine: Optional[Callable[..., Any]] = None,
                      name: Optional[str] = None, description: Optional[str] = None, return_direct: bool = False,
                      args_schema: Any = None, infer_schema: bool = True, **kwargs: Any) -> "StructuredTool":
        if not isinstance(args_schema, dict) and not infer_schema:
            raise ValueError("args_schema must be given when infer_schema is False")
        return cls(name or "", description or "", args_schema, func, coroutine)

    def invoke(self, value: Any) -> Any:
        assert self.func is not None
        return self.func(**dict(value))

    async def ainvoke(self, value: Any) -> Any:
        if self.coroutine is not None:
            return await self.coroutine(**dict(value))
        return await super().ainvoke(value)


def _langchain_modules() -> Dict[str, types.ModuleType]:
    root = types.ModuleType("langchain_core")
    mods = {"messages": ("BaseMessage", "SystemMessage", "HumanMessage", "AIMessage", "ToolMessage"),
            "runnables": ("Runnable", "RunnableLambda", "RunnableSequence"),
            "tools": ("StructuredTool",)}
    out = {"langchain_core": root}
    for sub, names in mods.items():
        m = types.ModuleType("langchain_core." + sub)
        for n in names:
            setattr(m, n, globals()[n])
        setattr(root, sub, m)
        out["langchain_core." + sub] = m
    return out


@contextlib.contextmanager
def installed(framework: str) -> Iterator[None]:
    """Puts the stand-in of ``framework`` (``openai_agents`` or ``langchain``) into sys.modules
    for the block's duration, restoring whatever was there."""
    mods = _openai_agents_modules() if framework == "openai_agents" else _langchain_modules()
    saved = {name: sys.modules.get(name) for name in mods}
    sys.modules.update(mods)
    try:
        yield
    finally:
        for name, old in saved.items():
            if old is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = old


@contextlib.contextmanager
def absent(*names: str) -> Iterator[None]:
    """Makes ``import name`` fail for the block's duration (the framework is not installed)."""
    saved = {n: sys.modules.get(n) for n in names}
    for n in names:
        sys.modules[n] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        for n, old in saved.items():
            if old is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = old

