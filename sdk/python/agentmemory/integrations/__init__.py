"""Agent memory inside agent frameworks: the machinery every integration shares.

Each integration (``agentmemory.integrations.openai_agents``, ``agentmemory.integrations.langchain``)
takes the same options and builds its framework's objects on top of :class:`Memory`:

- ``agent_memory`` (default True): fetch the notes block (through the context call, cached for
  the server's freshness period, CTX-4) and place it after the agent's instructions, before the
  customer's context (AM-4);
- ``write_agent_memory`` (default False): offer the ``remember`` tool, only when the key holds
  ``agent_memory:write`` (the service's MCP tool list says so);
- ``knowledge``: ``"off"`` (default), ``"before_call"`` (a context call with
  ``knowledge: {kbs, query: <the latest user message>}`` before each model call, its context
  placed after the block) or ``"tool"`` (offer ``search_knowledge``);
- ``knowledge_bases``, ``view``, ``task``, ``max_tokens``: passed through to the context call
  (and ``knowledge_bases`` to search_knowledge).

The frameworks are imported only inside the functions that build their objects, so this package
imports without them. A refused tool call (``remember`` with personal data...) goes back to the
model as a tool result carrying the error code, never as an exception that ends the run.
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..client import Client, Session, system_prompt
from ..errors import AgentMemoryError, UnavailableError, UnreachableError
from ..tools import Toolkit

__all__ = ["Memory", "KNOWLEDGE_MODES", "latest_user_text", "require"]

log = logging.getLogger("agentmemory")

#: The knowledge modes an integration takes.
KNOWLEDGE_MODES = ("off", "before_call", "tool")

#: A knowledge query is at most this many characters (POST /v1/knowledge/retrieve's limit).
MAX_QUERY_CHARS = 1000

#: How many composed prompts a Memory remembers the parts of (see Memory.parts_of).
_MAX_COMPOSED = 64


def require(module: str, pip_name: str, integration: str) -> Any:
    """Imports ``module`` or raises ImportError naming the pip package to install."""
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError("agentmemory.integrations.%s needs the %r package (import name %r): pip install %s"
                          % (integration, pip_name, module.split(".")[0], pip_name)) from err


def _text_of(content: Any) -> str:
    """The text of a message's content: a string, or a list of parts whose text parts are joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                texts.append(part["text"])
        return "\n".join(texts)
    return ""


def latest_user_text(items: Any) -> str:
    """The text of the latest user message in ``items``: a string (itself), or a sequence of
    messages as frameworks hold them: mappings ``{"role": "user", "content": ...}`` (OpenAI's
    input items) or objects with ``type == "human"`` or ``role == "user"`` (LangChain's
    messages). "" when there is none."""
    if isinstance(items, str):
        return items
    for item in reversed(list(items or [])):
        if isinstance(item, Mapping):
            role, content = item.get("role"), item.get("content")
        else:
            role = getattr(item, "role", None) or getattr(item, "type", None)
            content = getattr(item, "content", None)
        if role in ("user", "human"):
            return _text_of(content)
    return ""


class Memory:
    """What an integration needs from agentmemory: the system prompt (instructions, notes
    block, context) and the tool kit, with the options described in the module's docstring.

    Args:
        client: an agentmemory Client (or a Session: its view and evidence are used).
        agent_memory, write_agent_memory, knowledge, knowledge_bases, view, task, max_tokens:
            see the module's docstring. ``task`` is ``{"id", "object_types"}``.

    Raises:
        ValueError: for a knowledge mode other than off, before_call, tool.
    """

    def __init__(self, client: Any, *, agent_memory: bool = True, write_agent_memory: bool = False,
                 knowledge: str = "off", knowledge_bases: Optional[Sequence[str]] = None, view: str = "",
                 task: Optional[Mapping[str, Any]] = None, max_tokens: Optional[int] = None) -> None:
        if knowledge not in KNOWLEDGE_MODES:
            raise ValueError("agentmemory: knowledge must be one of %s" % ", ".join(KNOWLEDGE_MODES))
        self.session: Optional[Session] = client if isinstance(client, Session) else None
        self.client: Client = client.client if isinstance(client, Session) else client
        self.agent_memory = agent_memory
        self.write_agent_memory = write_agent_memory
        self.knowledge = knowledge
        self.knowledge_bases = list(knowledge_bases or [])
        self.view = view or (self.session.view if self.session is not None else "")
        self.task = dict(task) if task else None
        self.max_tokens = max_tokens
        self._kit: Optional[Toolkit] = None
        self._bases: Optional[List[str]] = None
        self._composed: "OrderedDict[str, Tuple[str, str, str]]" = OrderedDict()

    def __repr__(self) -> str:
        return "Memory(agent_memory=%r, write_agent_memory=%r, knowledge=%r)" % (
            self.agent_memory, self.write_agent_memory, self.knowledge)

    # The prompt ---------------------------------------------------------------------------------

    def bases(self) -> List[str]:
        """The knowledge bases searched before a call: ``knowledge_bases``, else (asked once)
        every base the key may read, at most 10."""
        if self.knowledge_bases:
            return list(self.knowledge_bases)
        if self._bases is None:
            self._bases = self.client.knowledge_base_ids(10)
        return list(self._bases)

    def block_and_knowledge(self, latest_user_message: str = "") -> Tuple[str, str]:
        """The notes block and the knowledge context for one model call: one context call (the
        block with ``agent_memory``; the knowledge when ``knowledge`` is ``before_call`` and there
        is a user message), or a retrieval when only knowledge is wanted. An unreachable or
        unavailable service leaves both empty (logged, the run goes on); other refusals raise
        AgentMemoryError (a key or a setting to fix)."""
        query = (latest_user_message or "").strip()[:MAX_QUERY_CHARS]
        want_knowledge = self.knowledge == "before_call" and bool(query)
        if not self.agent_memory and not want_knowledge:
            return "", ""
        try:
            kbs = self.bases() if want_knowledge else []
            if not self.agent_memory:
                return "", self.client.retrieve(query, kbs).context if kbs else ""
            ctx = self.client.context(view=self.view, task=self.task, max_tokens=self.max_tokens,
                                      knowledge={"kbs": kbs, "query": query} if kbs else None)
            return ctx.system_block, ctx.context
        except (UnreachableError, UnavailableError) as err:
            log.warning("agentmemory: memory left out of this call: %s", err.code or type(err).__name__)
            return "", ""

    def system_prompt(self, instructions: str, latest_user_message: str = "", customer_context: str = "") -> str:
        """The system prompt of one model call (AM-4's order): the instructions, the notes block,
        then the context: ``customer_context``, then the knowledge evidence (before_call), the
        most volatile part last so that a provider's prompt cache keeps the rest (the same order
        as the TypeScript and Go SDKs)."""
        block, knowledge = self.block_and_knowledge(latest_user_message)
        return self.compose(instructions, block, "\n\n".join(p for p in (customer_context, knowledge) if p))

    def compose(self, instructions: str, block: str, context: str) -> str:
        """system_prompt(instructions, block, context), remembering the parts of the text it
        returns (see parts_of)."""
        text = system_prompt(instructions, block, context)
        self._composed[text] = (instructions, block, context)
        self._composed.move_to_end(text)
        while len(self._composed) > _MAX_COMPOSED:
            self._composed.popitem(last=False)
        return text

    def parts_of(self, text: Optional[str]) -> Optional[Tuple[str, str, str]]:
        """The (instructions, block, context) a recent compose returned ``text`` for, or None
        (text this Memory did not build, or built too long ago)."""
        return self._composed.get(text or "")

    # Tools -------------------------------------------------------------------------------------

    def toolkit(self) -> Toolkit:
        """The tool kit for these options, discovered once from the service's MCP tool list:
        search_agent_memory (agent_memory), remember (write_agent_memory and the key's
        agent_memory:write), search_knowledge (knowledge ``tool`` where the key reads knowledge).
        Raises AgentMemoryError when discovery fails."""
        if self._kit is None:
            kit = self.client.tools(self.agent_memory, self.write_agent_memory, knowledge=self.knowledge == "tool",
                                    knowledge_bases=self.knowledge_bases or None)
            kit.session = self.session
            self._kit = kit
        return self._kit

    def call_tool(self, name: str, arguments: Any) -> str:
        """Runs one tool call and returns its result as JSON text for the model. Never raises:
        a refusal is ``{"error": {"code", ...}}`` (e.g. ``personal_data_in_agent_memory`` with
        ``kinds``), and so is an unreachable service (code ``unreachable``)."""
        try:
            result: Dict[str, Any] = self.toolkit().dispatch(name, arguments)
        except AgentMemoryError as err:
            result = {"error": {"code": err.code or "unreachable",
                                "message": err.message if err.status else "agentmemory could not be reached"}}
        return json.dumps(result, ensure_ascii=False)
