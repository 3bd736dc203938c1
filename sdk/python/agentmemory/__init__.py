"""agentmemory: the Python SDK of the agentmemory service (standard library only).

    import agentmemory
    client = agentmemory.Client("http://127.0.0.1:8080", key)   # or AGENTMEMORY_URL / AGENTMEMORY_KEY
    conversation = client.conversation("c-1")
    state = conversation.agent_state.get()                       # version 0 before the first write
    written = conversation.agent_state.put({"step": "sizes"})    # merge_by_key
    written = conversation.agent_state.put({"step": "checkout"}, mode="cas", if_version=state.version)
    conversation.agent_state.put({"offer": agentmemory.DELETE})
    notes = conversation.agent_memory(max_tokens=300, tags=["scheduling"])
    saved = conversation.remember("pitfall", "Scheduling API", "Dates without a time zone...", tags=["scheduling"])
    found = client.retrieve("Can I get a refund to my card?", ["kb_..."], top_k=5)   # found.context, found.chunks
    ctx = client.context(view="chat", knowledge={"kbs": ["kb_..."], "query": "refund to card"})
    prompt = agentmemory.system_prompt("You are the shop's assistant.", ctx)   # instructions, block, context

See docs/sdk/python.md for every behaviour, the cache and the framework integrations
(agentmemory.integrations.openai_agents, agentmemory.integrations.langchain).
"""

from .boards import Board, BoardPutResult, BoardState, BridgedBoard, Lease, Settled
from .aio import AsyncAgentState, AsyncClient, AsyncSession, AsyncToolkit
from .client import (DELETE, AgentState, Block, Client, Conflict, Context, ContextTokens, FeedPage, FeedRecord, Note,
                     Retrieval,
                     RetrievedChunk, Saved, Scope, Session, State, StateLease, Turn, TurnsPage, WriteResult, max_age,
                     system_prompt)
from .errors import (AgentMemoryError, AnswerError, ConflictError, PersonalDataError, RateLimitedError,
                     UnavailableError, UnreachableError)
from .tools import DEFINITIONS, REMEMBER_SCHEMA, SEARCH_KNOWLEDGE_SCHEMA, SEARCH_SCHEMA, ToolDefinition, Toolkit

__version__ = "0.1.0"

__all__ = [
    "Client", "AsyncClient", "Session", "AsyncSession", "AgentState", "AsyncAgentState", "Toolkit", "AsyncToolkit",
    "DELETE", "Scope", "State", "WriteResult", "Conflict", "Block", "Context", "ContextTokens", "Note", "Saved",
    "Retrieval", "RetrievedChunk", "Turn", "TurnsPage", "FeedRecord", "FeedPage", "system_prompt", "max_age",
    "ToolDefinition", "DEFINITIONS", "SEARCH_SCHEMA", "REMEMBER_SCHEMA", "SEARCH_KNOWLEDGE_SCHEMA",
    "AgentMemoryError", "ConflictError", "PersonalDataError", "RateLimitedError", "UnavailableError",
    "UnreachableError", "AnswerError",
    "Board", "BoardState", "BridgedBoard", "BoardPutResult", "Settled", "Lease", "StateLease",
]
