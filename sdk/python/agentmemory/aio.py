"""AsyncClient: the same surface as Client for asyncio code. Every call runs the synchronous
client in a worker thread (asyncio.to_thread), so the event loop never blocks on HTTP."""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List, Mapping, Optional, Sequence

from .client import Block, Client, Conflict, Context, FeedPage, Note, Retrieval, Saved, Scope, Session, State, TurnsPage, WriteResult
from .tools import Toolkit


class AsyncAgentState:
    """The async handle of one state; see AgentState for the semantics."""

    def __init__(self, sync: Any) -> None:
        self._sync = sync
        self.scope: Scope = sync.scope

    async def get(self) -> State:
        """See AgentState.get."""
        return await asyncio.to_thread(self._sync.get)

    async def put(self, body: Mapping[str, Any], mode: str = "merge_by_key", if_version: Optional[int] = None) -> WriteResult:
        """See AgentState.put."""
        return await asyncio.to_thread(self._sync.put, body, mode, if_version)

    @property
    def conflicts(self) -> List[Conflict]:
        """See AgentState.conflicts."""
        conflicts: List[Conflict] = self._sync.conflicts
        return conflicts


class AsyncToolkit:
    """The async tool kit; see Toolkit."""

    def __init__(self, sync: Toolkit) -> None:
        self._sync = sync
        self.names = sync.names

    def openai(self) -> List[Dict[str, Any]]:
        return self._sync.openai()

    def anthropic(self) -> List[Dict[str, Any]]:
        return self._sync.anthropic()

    async def dispatch(self, name: str, arguments: Any) -> Dict[str, Any]:
        """See Toolkit.dispatch."""
        return await asyncio.to_thread(self._sync.dispatch, name, arguments)

    async def handle(self, call: Any) -> Dict[str, Any]:
        """See Toolkit.handle."""
        return await asyncio.to_thread(self._sync.handle, call)


class AsyncSession:
    """The async session of a conversation, task, object or customer; see Session."""

    def __init__(self, sync: Session) -> None:
        self._sync = sync
        self.scope = sync.scope
        self.agent_state = AsyncAgentState(sync.agent_state)

    async def agent_memory(self, max_tokens: Optional[int] = None, tags: Optional[Sequence[str]] = None,
                           view: Optional[str] = None) -> Block:
        """See Session.agent_memory."""
        return await asyncio.to_thread(self._sync.agent_memory, max_tokens, tags, view)

    async def context(self, **kw: Any) -> Context:
        """See Session.context."""
        return await asyncio.to_thread(lambda: self._sync.context(**kw))

    async def remember(self, kind: str, title: str, body: str, tags: Optional[Sequence[str]] = None, **kw: Any) -> Saved:
        """See Session.remember."""
        return await asyncio.to_thread(lambda: self._sync.remember(kind, title, body, tags, **kw))

    async def tools(self, agent_memory: bool = True, write_agent_memory: bool = False, **kw: Any) -> AsyncToolkit:
        """See Session.tools."""
        return AsyncToolkit(await asyncio.to_thread(lambda: self._sync.tools(agent_memory, write_agent_memory, **kw)))


class AsyncClient:
    """Client for asyncio: the same arguments and surface, every call awaitable."""

    def __init__(self, base_url: Optional[str] = None, key: Optional[str] = None, **kw: Any) -> None:
        self.sync = Client(base_url, key, **kw)

    def __repr__(self) -> str:
        return "agentmemory.AsyncClient(%r)" % self.sync._http.base_url

    def conversation(self, conversation_id: str, **kw: Any) -> AsyncSession:
        return AsyncSession(self.sync.conversation(conversation_id, **kw))

    def task(self, task_id: str, **kw: Any) -> AsyncSession:
        return AsyncSession(self.sync.task(task_id, **kw))

    def object(self, type: str, namespace: str, id: str, **kw: Any) -> AsyncSession:
        return AsyncSession(self.sync.object(type, namespace, id, **kw))

    def subject(self, handle: str, **kw: Any) -> AsyncSession:
        return AsyncSession(self.sync.subject(handle, **kw))

    @property
    def pending(self) -> int:
        return self.sync.pending

    @property
    def conflicts(self) -> List[Conflict]:
        return self.sync.conflicts

    async def flush(self) -> None:
        await asyncio.to_thread(self.sync.flush)

    async def block(self, max_tokens: Optional[int] = None, tags: Optional[Sequence[str]] = None, view: str = "") -> Block:
        return await asyncio.to_thread(self.sync.block, max_tokens, tags, view)

    async def context(self, **kw: Any) -> Context:
        """See :meth:`agentmemory.Client.context` (the same keyword arguments, the same cache)."""
        return await asyncio.to_thread(lambda: self.sync.context(**kw))

    async def read_turns(self, conversation_id: str = "", **kw: Any) -> TurnsPage:
        """See :meth:`agentmemory.Client.read_turns`."""
        return await asyncio.to_thread(lambda: self.sync.read_turns(conversation_id, **kw))

    async def export_feed(self, tables: Optional[List[str]] = None, **kw: Any) -> FeedPage:
        """See :meth:`agentmemory.Client.export_feed`."""
        return await asyncio.to_thread(lambda: self.sync.export_feed(tables, **kw))

    async def knowledge_base_ids(self, limit: int = 10) -> List[str]:
        """See :meth:`agentmemory.Client.knowledge_base_ids`."""
        return await asyncio.to_thread(self.sync.knowledge_base_ids, limit)

    async def remember(self, kind: str, title: str, body: str, tags: Optional[Sequence[str]] = None, **kw: Any) -> Saved:
        return await asyncio.to_thread(lambda: self.sync.remember(kind, title, body, tags, **kw))

    async def search(self, query: str, tags: Optional[Sequence[str]] = None, limit: Optional[int] = None) -> List[Note]:
        return await asyncio.to_thread(self.sync.search, query, tags, limit)

    async def retrieve(self, query: str, kbs: Sequence[str], **kw: Any) -> Retrieval:
        """See :meth:`agentmemory.Client.retrieve`."""
        return await asyncio.to_thread(lambda: self.sync.retrieve(query, kbs, **kw))

    async def tools(self, agent_memory: bool = True, write_agent_memory: bool = False, **kw: Any) -> AsyncToolkit:
        return AsyncToolkit(await asyncio.to_thread(lambda: self.sync.tools(agent_memory, write_agent_memory, **kw)))

    @staticmethod
    def system_prompt(instructions: str, notes: Any = None, context: Any = None) -> str:
        return Client.system_prompt(instructions, notes, context)
