"""The agentmemory client: working memory (agent_state) with read-your-writes, an offline queue
and replay mode (WM-14), and agent notes (the prompt block with revalidation, remember, search)."""

from __future__ import annotations

import copy
import json
from collections import OrderedDict
import logging
import os
import threading
import time
import urllib.parse
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ._http import Transport
from .errors import AgentMemoryError, ConflictError, UnavailableError, UnreachableError

#: Builds the tool kit for Client.tools: ``builder(client, agent_memory, write_agent_memory, *,
#: knowledge, knowledge_bases, can_write, discover)``. The tool kit (agentmemory.tools) depends on
#: this module and never the reverse: it registers its builder here when it is imported, and
#: the package always imports it (agentmemory/__init__.py), so a client always has one.
ToolkitBuilder = Callable[..., Any]
_toolkit_builder: Optional[ToolkitBuilder] = None


def register_toolkit(builder: ToolkitBuilder) -> None:
    """Sets the builder Client.tools and Session.tools use (agentmemory.tools registers its own)."""
    global _toolkit_builder
    _toolkit_builder = builder

log = logging.getLogger("agentmemory")

__all__ = [
    "DELETE", "Scope", "State", "WriteResult", "Conflict", "Block", "Context", "ContextTokens", "Note", "Saved",
    "RetrievedChunk", "Retrieval", "Client", "Session", "AgentState", "system_prompt",
]


class _Delete:
    """The DELETE sentinel: as a field's value in a merge write, removes that field."""

    _instance: Optional["_Delete"] = None

    def __new__(cls) -> "_Delete":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "agentmemory.DELETE"

    def __reduce__(self) -> str:
        return "DELETE"


#: As a field's value in ``agent_state.put`` (merge_by_key), removes that field; sent as
#: exactly ``{"$delete": true}`` (which may also be written literally).
DELETE = _Delete()

_DELETE_WIRE = {"$delete": True}


def _is_delete(value: Any) -> bool:
    return value is DELETE or (isinstance(value, dict) and value == _DELETE_WIRE and
                               isinstance(value.get("$delete"), bool))


@dataclass(frozen=True)
class Scope:
    """What a state belongs to: kind is ``conversation``, ``task``, ``object`` or ``subject``.

    An object's id is ``type:namespace:id``; a subject's id is a handle such as
    ``email:ana@example.com``. A scope's id is never logged nor put in an error message.
    """

    kind: str
    id: str = field(repr=False)

    def wire(self) -> Dict[str, str]:
        return {"kind": self.kind, "id": self.id}


@dataclass
class State:
    """A state as read: ``body`` maps field names to JSON values; ``version`` 0 and an empty body
    before the first write (or after the state was erased, expired or deleted)."""

    body: Dict[str, Any] = field(default_factory=dict)
    version: int = 0
    updated_at: Optional[str] = None


@dataclass
class WriteResult:
    """The answer of ``agent_state.put``.

    ``stored`` is True when the write was applied at ``version``. When False, ``reason`` says why:
    ``not_declared_field`` (``fields`` names them), ``over_cap`` (``bytes`` over ``max_bytes``)
    or ``conflict`` (the state is at another version, ``version`` is the current one: a
    compare-and-swap or conditional merge lost). ``queued`` is True when the service was
    unreachable and the write waits in the client's queue (``version`` is then the if_version
    it will be resent with, or 0).
    """

    stored: bool
    version: int
    reason: Optional[str] = None
    fields: List[str] = field(default_factory=list)
    bytes: int = 0
    max_bytes: int = 0
    queued: bool = False


@dataclass
class Conflict:
    """A queued write with an if_version that met another version when it was resent: reported,
    never merged silently. ``body`` is the body the write carried (DELETE as ``{"$delete": true}``)."""

    scope: Scope
    agent: str
    if_version: int
    current_version: int
    body: Dict[str, Any] = field(repr=False)
    mode: str = "cas"


@dataclass
class Block:
    """The notes block for a prompt (AM-4): ``text`` (empty when agent memory is off, then
    ``enabled`` is False), the ids of the notes in it, its size in tokens and its ``etag``.
    ``not_modified`` is True when this call was served from the cache: answered 304, or
    ``fresh`` (inside the answer's freshness period, CTX-4: no request was sent at all)."""

    text: str = ""
    enabled: bool = False
    note_ids: List[str] = field(default_factory=list)
    tokens: int = 0
    etag: str = ""
    not_modified: bool = False
    fresh: bool = False

    def __str__(self) -> str:
        return self.text


@dataclass
class ContextTokens:
    """The token counts of a context answer (cl100k_base): the system block, the task section,
    the knowledge evidence, and ``total`` (the block plus the context as delivered, never over
    the request's ``max_tokens``)."""

    system_block: int = 0
    task_notes: int = 0
    knowledge: int = 0
    total: int = 0


@dataclass
class Context:
    """The answer of the context call (POST /v1/context, CTX-2): ``system_block`` for the system
    prompt (after the agent's instructions, before the customer's context: AM-4) and ``context``
    (the fenced knowledge evidence, then the task's note section) within one token budget.
    ``note_ids`` are the block's notes, ``task_note_ids`` the task section's, ``chunk_ids`` the
    evidence's; ``knowledge_mode`` is ``hybrid``, ``lexical_only`` or "" (no knowledge asked).
    ``enabled`` is False while agent memory is off (block and task section empty).
    ``not_modified`` and ``fresh`` as on Block (CTX-4)."""

    system_block: str = ""
    context: str = ""
    tokens: ContextTokens = field(default_factory=ContextTokens)
    etag: str = ""
    enabled: bool = False
    note_ids: List[str] = field(default_factory=list)
    task_note_ids: List[str] = field(default_factory=list)
    chunk_ids: List[str] = field(default_factory=list)
    knowledge_mode: str = ""
    not_modified: bool = False
    fresh: bool = False

    @classmethod
    def from_wire(cls, d: Mapping[str, Any], etag: str) -> "Context":
        t = d.get("tokens") or {}
        return cls(system_block=str(d.get("system_block") or ""), context=str(d.get("context") or ""),
                   tokens=ContextTokens(system_block=int(t.get("system_block") or 0),
                                        task_notes=int(t.get("task_notes") or 0),
                                        knowledge=int(t.get("knowledge") or 0), total=int(t.get("total") or 0)),
                   etag=etag or str(d.get("etag") or ""), enabled=bool(d.get("enabled")),
                   note_ids=list(d.get("note_ids") or []), task_note_ids=list(d.get("task_note_ids") or []),
                   chunk_ids=list(d.get("chunk_ids") or []), knowledge_mode=str(d.get("knowledge_mode") or ""))


@dataclass
class Note:
    """A note as the service answers it (AM-1)."""

    id: str
    kind: str
    title: str
    body: str
    tags: List[str] = field(default_factory=list)
    version: int = 0
    source_id: str = ""
    visibility: str = ""
    status: str = ""
    origin: str = ""
    evidence: Optional[Dict[str, str]] = None
    created_at: Optional[str] = None

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> "Note":
        return cls(id=str(d.get("id", "")), kind=str(d.get("kind", "")), title=str(d.get("title", "")),
                   body=str(d.get("body", "")), tags=list(d.get("tags") or []), version=int(d.get("version") or 0),
                   source_id=str(d.get("source_id", "")), visibility=str(d.get("visibility", "")),
                   status=str(d.get("status", "")), origin=str(d.get("origin", "")),
                   evidence=d.get("evidence"), created_at=d.get("created_at"))


@dataclass
class Saved:
    """The answer of ``remember``.

    ``status`` is ``stored`` (``note`` holds it), ``proposed`` (the space holds agents' notes for
    a person's approval: ``proposal_id``), ``duplicate`` (an identical active note exists:
    ``note`` is it, ``duplicate_of`` its id, nothing stored) or ``error``: then ``error`` is the
    service's code (``personal_data_in_agent_memory`` with ``kinds``, never values;
    ``rate_limited`` with ``retry_after``; ``note_cap_reached``, ``invalid_member``,
    ``feature_disabled``...) and ``http_status`` its status. ``replayed`` is True when the
    Idempotency-Key matched an earlier call (the first answer is returned).
    """

    status: str
    note: Optional[Note] = None
    proposal_id: str = ""
    duplicate_of: str = ""
    replayed: bool = False
    error: Optional[str] = None
    message: str = ""
    kinds: List[str] = field(default_factory=list)
    retry_after: Optional[float] = None
    http_status: int = 0
    idempotency_key: str = ""

    @property
    def note_id(self) -> str:
        """The stored (or duplicated) note's id, or ""."""
        return self.note.id if self.note else ""

    def raise_for_error(self) -> "Saved":
        """Raises the typed AgentMemoryError when ``error`` is set; returns self otherwise."""
        if self.error is not None:
            from .errors import error_for
            raise error_for(self.http_status, self.error, self.message, retry_after=self.retry_after, kinds=self.kinds)
        return self


@dataclass
class RetrievedChunk:
    """One ranked chunk of a knowledge base with its provenance (KN-4): its document, base,
    source, title, version label and byte range in the document. ``score`` is the fused
    reciprocal-rank score; ``vector_score`` the cosine similarity and ``vector_rank``,
    ``lexical_rank`` its ranks in each ranking (None: not in that ranking); ``in_context``
    whether ``Retrieval.context`` holds it."""

    chunk_id: str
    document_id: str
    kb_id: str
    source_uri: str
    title: str
    version: str
    start_byte: int
    end_byte: int
    score: float
    text: str = field(repr=False)
    in_context: bool = False
    vector_score: Optional[float] = None
    vector_rank: Optional[int] = None
    lexical_rank: Optional[int] = None

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> "RetrievedChunk":
        return cls(chunk_id=str(d.get("chunk_id", "")), document_id=str(d.get("document_id", "")),
                   kb_id=str(d.get("kb_id", "")), source_uri=str(d.get("source_uri", "")), title=str(d.get("title", "")),
                   version=str(d.get("version", "")), start_byte=int(d.get("start_byte") or 0),
                   end_byte=int(d.get("end_byte") or 0), score=float(d.get("score") or 0), text=str(d.get("text", "")),
                   in_context=bool(d.get("in_context")), vector_score=d.get("vector_score"),
                   vector_rank=d.get("vector_rank"), lexical_rank=d.get("lexical_rank"))


@dataclass(frozen=True)
class Turn:
    """A stored turn of a conversation (or task): ``text`` is masked (personal data replaced by
    typed placeholders such as ``<email>``); ``key_id`` and ``agent_version`` are its
    provenance; ``at`` is RFC 3339 in UTC."""

    id: str
    speaker: str
    text: str = field(repr=False)
    at: str = ""
    conversation_id: str = ""
    task_id: str = ""
    key_id: str = ""
    agent_version: str = ""

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> "Turn":
        return cls(id=str(d.get("id", "")), speaker=str(d.get("speaker", "")), text=str(d.get("text", "")),
                   at=str(d.get("at", "")), conversation_id=str(d.get("conversation_id") or ""),
                   task_id=str(d.get("task_id") or ""), key_id=str(d.get("key_id") or ""),
                   agent_version=str(d.get("agent_version") or ""))


@dataclass(frozen=True)
class TurnsPage:
    """A page of ``read_turns``, oldest first; ``next_after`` is the ``after`` of the next page
    (empty when this page is the last)."""

    turns: List[Turn] = field(default_factory=list)
    next_after: str = ""


@dataclass(frozen=True)
class FeedRecord:
    """One change of the continuous export feed (issue 33): ``cursor`` is 1, 2, 3... per
    space, never skipping or repeating a committed change; ``key`` the row's primary key;
    ``op`` is ``upsert`` (``row`` is the row as the API shows it) or ``delete`` (a tombstone:
    ``row`` is None). ``changed_at`` is RFC 3339 UTC."""

    cursor: int
    table: str
    key: str
    op: str
    row: Optional[Dict[str, Any]] = None
    changed_at: str = ""

    @classmethod
    def from_wire(cls, d: Dict[str, Any]) -> "FeedRecord":
        row = d.get("row")
        return cls(cursor=int(d.get("cursor") or 0), table=str(d.get("table") or ""), key=str(d.get("key") or ""),
                   op=str(d.get("op") or ""), row=row if isinstance(row, dict) else None,
                   changed_at=str(d.get("changed_at") or ""))


@dataclass(frozen=True)
class FeedPage:
    """A page of ``export_feed``, oldest first; ``next_after`` is the ``after`` of the next
    page (the last cursor returned, or the request's ``after`` when the page is empty)."""

    records: List[FeedRecord] = field(default_factory=list)
    next_after: int = 0


@dataclass
class Retrieval:
    """The answer of ``retrieve``: ``mode`` is ``hybrid`` (vector and full-text rankings fused)
    or ``lexical_only`` (the embedder was down and the bases allow full text alone);
    ``chunks`` ranked; ``context`` ready for a prompt, each chunk that fits
    ``context_tokens`` fenced as evidence with its source and version under a line saying it
    is reference material, not instructions (MS-7), or empty when none fits. Put the context
    beside the conversation (e.g. a user-side message before the customer's question), never in
    place of the system prompt. In a run (CTX-3), ``run`` is the run's figures as the service
    sent them ({id, budget_tokens, used_tokens, remaining_tokens, cut}) and
    ``budget_exhausted`` says the run had nothing left (the payload is then empty)."""

    mode: str
    chunks: List[RetrievedChunk] = field(default_factory=list)
    context: str = ""
    context_tokens: int = 0
    run: Optional[Dict[str, Any]] = None
    budget_exhausted: bool = False


def system_prompt(instructions: str, notes: Any = None, context: Any = None) -> str:
    """Builds a system prompt: the agent's instructions, then the notes block, then the
    customer's context, joined by a blank line (empty parts left out). ``notes`` is a Block, a
    Context (its ``system_block``; its ``context`` too when ``context`` is not given) or text;
    the block goes after the instructions and before the customer context (AM-4), so the
    prompt prefix a provider caches stays the same for every customer."""
    if isinstance(notes, Context):
        if context is None:
            context = notes.context
        notes = notes.system_block
    parts = [instructions, notes.text if isinstance(notes, Block) else notes,
             context.context if isinstance(context, Context) else getattr(context, "text", context)]
    return "\n\n".join(str(p) for p in parts if p)


#: How many call shapes (block and context answers) a client keeps cached; the least recently
#: used goes first. A context call per user message (knowledge before each model call) would
#: otherwise grow the cache without end.
MAX_CACHED_ANSWERS = 256


def max_age(cache_control: str) -> float:
    """The freshness period in seconds of an answer's Cache-Control header (CTX-4):
    ``max-age=N`` gives N; ``no-cache``, ``no-store``, an absent header or a malformed value
    give 0 (revalidate every call)."""
    age = 0.0
    for directive in (cache_control or "").lower().split(","):
        name, _, value = directive.strip().partition("=")
        if name in ("no-cache", "no-store"):
            return 0.0
        if name == "max-age":
            try:
                age = max(0.0, float(int(value.strip().strip('"'))))
            except ValueError:
                return 0.0
    return age


@dataclass
class _Cached:
    value: Any  # a Block or a Context, never handed out (callers get copies)
    etag: str
    fresh_until: float  # a clock reading: before it the value is served without a request


_Key = Tuple[str, str, str]


@dataclass
class _Seen:
    version: int
    body: Optional[Dict[str, Any]] = None  # None: only the version is known
    updated_at: Optional[str] = None


#: Retries of a read that answers an older version than this client saw (about 0.75 s in all).
MAX_READ_RETRIES = 5


class Client:
    """Talks to agentmemory; one per agent process, safe for concurrent use.

    Args:
        base_url: e.g. ``http://127.0.0.1:8080``; default ``$AGENTMEMORY_URL``.
        key: an agent key (scopes agent_state, agent_memory, agent_memory:write), or a person
            key with role integration plus ``agent``; default ``$AGENTMEMORY_KEY``.
        agent: the agent acted for (person keys only): sent as ``agent`` and ``source_id``.
        agent_version: sent as the Agent-Version header (provenance).
        queue_file: keep writes queued while the service is unreachable in this JSON file, so
            they survive a restart of the agent's process (default: in memory).
        replay: start every state empty and keep writes local; nothing is sent.
        timeout: seconds per HTTP request.
        max_retries: retries of a 429 or 5xx answer (exponential backoff, or Retry-After).
        max_retry_wait: an answer asking to wait longer than this is returned at once.
        clock: seconds on a monotonic clock (default ``time.monotonic``): when a cached block or
            context answer stops being fresh (CTX-4). Tests pass their own.

    Raises:
        ValueError: without a base URL (outside replay mode), or with an unreadable queue file.
    """

    def __init__(self, base_url: Optional[str] = None, key: Optional[str] = None, *, agent: str = "",
                 agent_version: str = "", queue_file: Optional[str] = None, replay: bool = False,
                 timeout: float = 10.0, max_retries: int = 3, max_retry_wait: float = 30.0,
                 backoff: float = 0.25, clock: Callable[[], float] = time.monotonic) -> None:
        base_url = base_url if base_url is not None else os.environ.get("AGENTMEMORY_URL", "")
        key = key if key is not None else os.environ.get("AGENTMEMORY_KEY", "")
        if not replay and not base_url:
            raise ValueError("agentmemory: base_url (or AGENTMEMORY_URL) is required")
        self.agent = agent
        self.replay = replay
        self.queue_file = queue_file
        self._http = Transport(base_url or "http://replay.invalid", key or "", agent_version=agent_version,
                               timeout=timeout, max_retries=max_retries, max_retry_wait=max_retry_wait,
                               backoff=backoff)
        self._lock = threading.RLock()
        self._flush_lock = threading.Lock()
        self._seen: Dict[_Key, _Seen] = {}
        self._local: Dict[_Key, State] = {}
        self._queue: List[Dict[str, Any]] = []
        self._conflicts: List[Conflict] = []
        self._clock = clock
        self._cache: "OrderedDict[str, _Cached]" = OrderedDict()
        self._load_queue()

    def __repr__(self) -> str:
        return "agentmemory.Client(%r%s)" % (self._http.base_url, ", replay=True" if self.replay else "")

    # Sessions -------------------------------------------------------------------------------

    def conversation(self, conversation_id: str, *, subject: str = "", view: str = "") -> "Session":
        """The session of one conversation: its agent_state, its notes block, remember with the
        conversation id as evidence. ``subject`` (a handle) ties its state to a customer."""
        return Session(self, Scope("conversation", conversation_id), subject=subject, view=view)

    def task(self, task_id: str, *, subject: str = "", view: str = "") -> "Session":
        """The session of one task (remember sends the task id as evidence)."""
        return Session(self, Scope("task", task_id), subject=subject, view=view)

    def object(self, type: str, namespace: str, id: str, *, subject: str = "", view: str = "") -> "Session":
        """The session of one object, named ``type:namespace:id``."""
        return Session(self, Scope("object", "%s:%s:%s" % (type, namespace, id)), subject=subject, view=view)

    def subject(self, handle: str, *, view: str = "") -> "Session":
        """The session of one customer, named by a handle such as ``email:ana@example.com``."""
        return Session(self, Scope("subject", handle), view=view)

    def board(self, type: str, id: str) -> "Board":
        """The board type:id (issue 31, docs/boards.md): get, put with if_version, lease."""
        from .boards import Board
        return Board(self._http, type, id)

    def bridged_board(self, space: str, type: str, id: str) -> "BridgedBoard":
        """The board type:id of another space (its id), read through a bridge (issue 31,
        docs/boards.md "Bridges"): get only."""
        from .boards import BridgedBoard
        return BridgedBoard(self._http, space, type, id)

    def agent_state(self, scope: Scope, *, subject: str = "") -> "AgentState":
        """The handle of the state of ``scope`` for this client's agent."""
        return AgentState(self, scope, subject=subject)

    # Working memory ---------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        """How many writes wait in the queue."""
        with self._lock:
            return len(self._queue)

    @property
    def conflicts(self) -> List[Conflict]:
        """Every queued conditional write that conflicted when resent, in order."""
        with self._lock:
            return list(self._conflicts)

    def flush(self) -> None:
        """Resends queued writes in order with their own if_version. A resent conditional write
        that conflicts moves to ``conflicts``; any other refusal is dropped from the queue (and
        logged without values). Raises UnreachableError/UnavailableError, leaving the rest queued,
        when the service still cannot take them."""
        with self._flush_lock:
            while True:
                with self._lock:
                    if not self._queue:
                        return
                    req = self._queue[0]
                try:
                    self._send(req)
                except (UnreachableError, UnavailableError):
                    raise
                except ConflictError as err:
                    with self._lock:
                        self._queue.pop(0)
                        self._conflicts.append(Conflict(
                            scope=Scope(req["scope"]["kind"], req["scope"]["id"]), agent=req.get("agent", ""),
                            if_version=int(req.get("if_version") or 0), current_version=int(err.version or 0),
                            body=copy.deepcopy(req["body"]), mode=req.get("mode", "cas")))
                        self._save_queue()
                    log.warning("agentmemory: a queued %s write conflicted on resend (see conflicts)", req.get("mode"))
                except AgentMemoryError as err:
                    with self._lock:
                        self._queue.pop(0)
                        self._save_queue()
                    log.warning("agentmemory: a queued write was refused on resend: %d %s", err.status, err.code)
                else:
                    with self._lock:
                        self._queue.pop(0)
                        self._save_queue()

    def _flush_quiet(self) -> None:
        if self.pending:
            try:
                self.flush()
            except AgentMemoryError:
                pass

    def _key(self, scope: Scope, agent: str) -> _Key:
        return (scope.kind, scope.id, agent)

    def _get(self, scope: Scope) -> State:
        k = self._key(scope, self.agent)
        if self.replay:
            with self._lock:
                return copy.deepcopy(self._local.get(k, State()))
        self._flush_quiet()
        body: Dict[str, Any] = {"scope": scope.wire()}
        if self.agent:
            body["agent"] = self.agent
        attempt = 0
        while True:
            data = self._http.request("POST", "/v1/agent-state/read", body).data or {}
            st = State(body=dict(data.get("body") or {}), version=int(data.get("version") or 0),
                       updated_at=data.get("updated_at"))
            with self._lock:
                seen = self._seen.get(k)
                if seen is None or st.version >= seen.version:
                    self._seen[k] = _Seen(st.version, copy.deepcopy(st.body), st.updated_at)
                    return st
                absent = st.version == 0
                if absent and attempt >= MAX_READ_RETRIES:
                    # Still absent after the retries: erased, expired or deleted, not lagging.
                    del self._seen[k]
                    return st
                if seen.body is not None and not absent:
                    return State(copy.deepcopy(seen.body), seen.version, seen.updated_at)
            if attempt >= MAX_READ_RETRIES:
                raise AgentMemoryError(0, "stale_read", "the service still serves version %d after this client saw %d"
                                       % (st.version, seen.version))
            time.sleep(0.05 * (attempt + 1))
            attempt += 1

    def _put(self, scope: Scope, subject: str, body: Mapping[str, Any], mode: str,
             if_version: Optional[int], lease: Optional["StateLease"] = None) -> WriteResult:
        if mode not in ("merge_by_key", "cas"):
            raise ValueError("agentmemory: mode must be merge_by_key or cas")
        if not isinstance(body, Mapping):
            raise TypeError("agentmemory: body must be a mapping of field names to JSON values")
        wire_body = {str(f): (dict(_DELETE_WIRE) if _is_delete(v) else copy.deepcopy(v)) for f, v in body.items()}
        json.dumps(wire_body)  # a TypeError here names the type, never a value
        req: Dict[str, Any] = {"scope": scope.wire(), "mode": mode, "body": wire_body}
        if self.agent:
            req["agent"] = self.agent
        if if_version is not None:
            req["if_version"] = int(if_version)
        if subject:
            req["subject"] = subject
        if lease is not None:
            req["lease"] = {"lease_id": lease.lease_id, "token": lease.token}
        if self.replay:
            return self._apply_local(self._key(scope, self.agent), req)
        self._flush_quiet()
        if lease is not None:
            # A write under a lease is never queued: resent later, its lease would be gone.
            try:
                return self._send(req)
            except ConflictError as err:
                return WriteResult(stored=False, version=int(err.version or 0), reason="conflict")
        try:
            return self._send(req)
        except ConflictError as err:
            return WriteResult(stored=False, version=int(err.version or 0), reason="conflict")
        except (UnreachableError, UnavailableError):
            with self._lock:
                self._queue.append(req)
                self._save_queue()
            log.info("agentmemory: the service is unreachable; a write is queued (%d pending)", self.pending)
            return WriteResult(stored=False, version=int(if_version or 0), queued=True)

    def _send(self, req: Dict[str, Any]) -> WriteResult:
        data = self._http.request("PUT", "/v1/agent-state", req).data or {}
        res = WriteResult(stored=bool(data.get("stored")), version=int(data.get("version") or 0),
                          reason=data.get("reason"), fields=list(data.get("fields") or []),
                          bytes=int(data.get("bytes") or 0), max_bytes=int(data.get("max_bytes") or 0))
        if res.stored:
            k = (req["scope"]["kind"], req["scope"]["id"], req.get("agent", ""))
            with self._lock:
                seen = self._seen.get(k)
                if seen is None or res.version > seen.version:
                    self._seen[k] = _Seen(res.version)
        return res

    def _apply_local(self, k: _Key, req: Dict[str, Any]) -> WriteResult:
        with self._lock:
            cur = self._local.get(k, State())
            iv = req.get("if_version")
            if iv is not None and iv != cur.version:
                return WriteResult(stored=False, version=cur.version, reason="conflict")
            nxt: Dict[str, Any] = {} if req["mode"] == "cas" else copy.deepcopy(cur.body)
            for f, v in req["body"].items():
                if _is_delete(v):
                    nxt.pop(f, None)
                else:
                    nxt[f] = copy.deepcopy(v)
            now = datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")
            self._local[k] = State(nxt, cur.version + 1, now)
            return WriteResult(stored=True, version=cur.version + 1)

    def _load_queue(self) -> None:
        if not self.queue_file or not os.path.exists(self.queue_file):
            return
        try:
            with open(self.queue_file, "rb") as f:
                raw = f.read()
            items = json.loads(raw) if raw.strip() else []
            if not isinstance(items, list):
                raise ValueError("not a list")
            self._queue = [dict(item["request"]) for item in items]
        except (OSError, ValueError, KeyError, TypeError):
            raise ValueError("agentmemory: the queue file cannot be read as a queue") from None

    def _save_queue(self) -> None:
        """Writes the queue file atomically (the Go SDK's format: [{"request": {...}}]); lock held."""
        if not self.queue_file:
            return
        tmp = self.queue_file + ".tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump([{"request": r} for r in self._queue], f, ensure_ascii=False)
        os.replace(tmp, self.queue_file)

    # Agent memory -------------------------------------------------------------------------------

    def block(self, max_tokens: Optional[int] = None, tags: Optional[Sequence[str]] = None,
              view: str = "") -> Block:
        """The notes block for the prompt (GET /v1/agent-memory/block). Cached per (max_tokens,
        tags, view, source) for the answer's freshness period (``Cache-Control: max-age``, the
        space's ``agent_memory.cache_seconds``; CTX-4): inside it no request is sent (``fresh``
        and ``not_modified`` True); after it the block is revalidated with If-None-Match, and
        unchanged costs a 304 that renews the period (``not_modified`` True). ``no-cache`` or no
        header: revalidated on every call. ``max_tokens`` is 50..2000 (the service's default
        300). Raises AgentMemoryError (400 for a bad max_tokens or an unknown view, 401, 403)."""
        q: Dict[str, str] = {}
        if max_tokens:
            q["max_tokens"] = str(int(max_tokens))
        if tags:
            q["tags"] = ",".join(tags)
        if view:
            q["view"] = view
        if self.agent:
            q["source_id"] = self.agent
        path = "/v1/agent-memory/block" + ("?" + urllib.parse.urlencode(sorted(q.items())) if q else "")

        def parse(resp: Any) -> Block:
            d = resp.data or {}
            return Block(text=str(d.get("text") or ""), enabled=bool(d.get("enabled")),
                         note_ids=list(d.get("note_ids") or []), tokens=int(d.get("tokens") or 0),
                         etag=resp.header("ETag"))

        out: Block = self._cached("block " + path, lambda h: self._http.request("GET", path, headers=h), parse)
        return out

    def context(self, *, view: str = "", task: Optional[Mapping[str, Any]] = None, max_tokens: Optional[int] = None,
                block_max_tokens: Optional[int] = None, include_agent_memory: bool = False,
                knowledge: Optional[Mapping[str, Any]] = None) -> Context:
        """The context call (POST /v1/context, CTX-2): the system block and the context (the
        fenced knowledge evidence, then the task's note section) within one token budget, one
        receipt. ``task`` is ``{"id", "object_types"}`` (object types order the block after the
        view and select the task section, which ``include_agent_memory`` appends); ``knowledge``
        is ``{"kbs", "query", "top_k", "min_score", "filters"}`` as on retrieve; ``max_tokens``
        50..10000 (default 2000), ``block_max_tokens`` 50..2000 (default 300). Cached per
        request body (its canonical JSON) exactly as ``block`` is (CTX-4). The key needs scope
        ``context``, or ``agent_memory`` plus ``knowledge:read`` for a knowledge part.

        Raises AgentMemoryError: 400 ``invalid_member`` naming the member (an unknown view,
        include_agent_memory without object types...), 403 ``scope_required`` or
        ``feature_disabled``, 404 ``knowledge_base_not_found``, UnreachableError."""
        body: Dict[str, Any] = {}
        if view:
            body["view"] = view
        if task:
            body["task"] = dict(task)
        if max_tokens is not None:
            body["max_tokens"] = int(max_tokens)
        if block_max_tokens is not None:
            body["block_max_tokens"] = int(block_max_tokens)
        if include_agent_memory:
            body["include_agent_memory"] = True
        if knowledge:
            body["knowledge"] = dict(knowledge)
        if self.agent:
            body["source_id"] = self.agent
        shape = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        out: Context = self._cached(
            "context " + shape, lambda h: self._http.request("POST", "/v1/context", body, h),
            lambda resp: Context.from_wire(resp.data or {}, resp.header("ETag")))
        return out

    def _cached(self, key: str, send: Callable[[Optional[Dict[str, str]]], Any], parse: Callable[[Any], Any]) -> Any:
        """One cached read (CTX-4): a fresh entry is served without a request; a stale one is
        revalidated with If-None-Match (a 304 renews its period); a 200 replaces it. The period
        counts from before the request was sent, so it never outlives the server's."""
        now = self._clock()
        with self._lock:
            entry = self._cache.get(key)
            if entry is not None:
                self._cache.move_to_end(key)
        if entry is not None and now < entry.fresh_until:
            out = copy.deepcopy(entry.value)
            out.not_modified = out.fresh = True
            return out
        headers = {"If-None-Match": entry.etag} if entry is not None and entry.etag else None
        resp = send(headers)
        if resp.status == 304 and entry is None:  # not ours to answer from: ask again, unconditionally
            resp = send(None)
        age = max_age(resp.header("Cache-Control"))
        if resp.status == 304 and entry is not None:
            with self._lock:
                entry.fresh_until = now + age
            out = copy.deepcopy(entry.value)
            out.not_modified = True
            return out
        value = parse(resp)
        with self._lock:
            self._cache[key] = _Cached(copy.deepcopy(value), value.etag, now + age)
            self._cache.move_to_end(key)
            while len(self._cache) > MAX_CACHED_ANSWERS:
                self._cache.popitem(last=False)
        return value

    def remember(self, kind: str, title: str, body: str, tags: Optional[Sequence[str]] = None, *,
                 visibility: str = "", conversation_id: str = "", task_id: str = "",
                 idempotency_key: Optional[str] = None, valid_until: Optional[str] = None) -> Saved:
        """Writes a note about the agent's trade through the personal-data gate
        (POST /v1/agent-memory/notes). ``kind`` is procedure, tool_note, process_note or pitfall;
        title at most 120 characters, body 2,000, at most 8 lower-case tags. Sends an
        Idempotency-Key of its own (a new uuid) unless one is given, so retries never store
        twice. A refusal is not raised: it is ``Saved.error`` (e.g.
        ``personal_data_in_agent_memory`` with ``kinds``). Raises UnreachableError only."""
        payload: Dict[str, Any] = {"kind": kind, "title": title, "body": body}
        if tags:
            payload["tags"] = list(tags)
        if visibility:
            payload["visibility"] = visibility
        evidence = {}
        if conversation_id:
            evidence["conversation_id"] = conversation_id
        if task_id:
            evidence["task_id"] = task_id
        if evidence:
            payload["evidence"] = evidence
        if valid_until:
            payload["valid_until"] = valid_until
        if self.agent:
            payload["source_id"] = self.agent
        idem = idempotency_key or "py-" + uuid.uuid4().hex
        try:
            resp = self._http.request("POST", "/v1/agent-memory/notes", payload, {"Idempotency-Key": idem})
        except UnreachableError:
            raise
        except AgentMemoryError as err:
            return Saved(status="error", error=err.code, message=err.message, kinds=list(err.kinds),
                         retry_after=err.retry_after, http_status=err.status, idempotency_key=idem)
        replayed = resp.header("Idempotent-Replayed") == "true"
        d = resp.data or {}
        if resp.status == 202:
            return Saved(status="proposed", proposal_id=str(d.get("proposal_id", "")), replayed=replayed,
                         http_status=202, idempotency_key=idem)
        dup = str(d.get("duplicate_of") or "")
        return Saved(status="duplicate" if dup else "stored", note=Note.from_wire(d), duplicate_of=dup,
                     replayed=replayed, http_status=resp.status, idempotency_key=idem)

    def search(self, query: str, tags: Optional[Sequence[str]] = None, limit: Optional[int] = None) -> List[Note]:
        """Finds notes by words (every word must match) and tags (every tag must be on the note),
        with the block's visibility (GET /v1/agent-memory/search). Raises AgentMemoryError."""
        return self._search(query, tags, limit)[1]

    def _search(self, query: str, tags: Optional[Sequence[str]], limit: Optional[int]) -> Tuple[bool, List[Note]]:
        d = self._search_wire(query, tags, limit, None)
        return bool(d.get("enabled")), [Note.from_wire(n) for n in d.get("notes") or []]

    def _search_wire(self, query: str, tags: Optional[Sequence[str]], limit: Optional[int],
                     run: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
        """GET /v1/agent-memory/search's answer as sent; ``run`` ({"id", "budget_tokens"}, CTX-3)
        travels in the headers Agent-Run-Id and Agent-Run-Budget."""
        q = {"q": query}
        if tags:
            q["tags"] = ",".join(tags)
        if limit:
            q["limit"] = str(int(limit))
        if self.agent:
            q["source_id"] = self.agent
        headers: Dict[str, str] = {}
        if run:
            headers["Agent-Run-Id"] = str(run.get("id", ""))
            if run.get("budget_tokens") is not None:
                headers["Agent-Run-Budget"] = str(run["budget_tokens"])
        path = "/v1/agent-memory/search?" + urllib.parse.urlencode(sorted(q.items()))
        return self._http.request("GET", path, headers=headers or None).data or {}

    # Knowledge ----------------------------------------------------------------------------------

    def retrieve(self, query: str, kbs: Sequence[str], *, top_k: Optional[int] = None,
                 max_tokens: Optional[int] = None, min_score: Optional[float] = None,
                 filters: Optional[Mapping[str, Any]] = None,
                 run: Optional[Mapping[str, Any]] = None, space: Optional[str] = None) -> Retrieval:
        """Ranks the chunks of knowledge bases ``kbs`` (1-10 base ids of the key's space) for
        ``query`` (1-1000 characters) (POST /v1/knowledge/retrieve; the key needs scope
        ``knowledge:read``). ``top_k`` 1..50 and ``max_tokens`` 100..8000 (the context's budget)
        default to the first base's settings; with ``min_score`` (0..1) weaker vector candidates
        leave the vector ranking. ``filters`` is sent as the request's ``filters`` object as
        given; the service decides what it accepts (one without filters answers 400). ``run``
        ({"id", "budget_tokens"}, CTX-3) draws the retrieval on a run's budget. ``space`` reads
        another space's bases across a bridge (issue 31): ``kbs`` then names that space's bases
        by name, and only an active bridge approved by both spaces that lists this agent and
        those bases lets the read through (otherwise 404, as for a base that does not exist); a
        ``run`` is then a run of the key's own space. The service leaves a receipt naming the
        chunks delivered.

        Raises AgentMemoryError: 400 ``invalid_member``, 403 ``scope_required`` or
        ``feature_disabled``, 404 ``knowledge_base_not_found`` (a base of another space looks
        missing), UnavailableError 503 ``embedder_unavailable`` (a base whose embedder_down is
        ``fail``), UnreachableError."""
        payload: Dict[str, Any] = {"query": query, "kbs": list(kbs)}
        if top_k is not None:
            payload["top_k"] = int(top_k)
        if max_tokens is not None:
            payload["max_tokens"] = int(max_tokens)
        if min_score is not None:
            payload["min_score"] = float(min_score)
        if filters is not None:
            payload["filters"] = dict(filters)
        if run is not None:
            payload["run"] = dict(run)
        if space:
            payload["space"] = str(space)
        d = self._http.request("POST", "/v1/knowledge/retrieve", payload).data or {}
        return Retrieval(mode=str(d.get("mode", "")), chunks=[RetrievedChunk.from_wire(c) for c in d.get("chunks") or []],
                         context=str(d.get("context") or ""), context_tokens=int(d.get("context_tokens") or 0),
                         run=d.get("run"), budget_exhausted=bool(d.get("budget_exhausted")))

    def read_turns(self, conversation_id: str = "", *, task_id: str = "", after: str = "",
                   limit: Optional[int] = None) -> TurnsPage:
        """Reads a page of a conversation's (or, with ``task_id``, a task's) masked turns,
        oldest first (POST /v1/turns/read; the key needs scope ``context``, a person key role
        ``integration``). ``after`` is the previous page's ``next_after``; ``limit`` 1..500
        (default 100). The service leaves a receipt naming the conversation by its keyed hash.
        An erased conversation answers as one that never existed: no turns.

        Raises AgentMemoryError: 400 ``invalid_member`` (conversation_id, after, limit), 403
        ``scope_required`` or ``role_required``, UnreachableError."""
        payload: Dict[str, Any] = {}
        if conversation_id:
            payload["conversation_id"] = conversation_id
        if task_id:
            payload["task_id"] = task_id
        if after:
            payload["after"] = after
        if limit is not None:
            payload["limit"] = int(limit)
        d = self._http.request("POST", "/v1/turns/read", payload).data or {}
        return TurnsPage(turns=[Turn.from_wire(t) for t in d.get("turns") or [] if isinstance(t, dict)],
                         next_after=str(d.get("next_after") or ""))

    def export_feed(self, tables: Optional[List[str]] = None, *, after: int = 0,
                    limit: Optional[int] = None) -> FeedPage:
        """Reads a page of the space's continuous export feed (GET /v1/export/feed, issue 33;
        the key needs scope ``export``, a person key role ``admin``): ``tables`` are feed table
        names (``notes``, ``agent_states``...; None: every table), ``after`` the previous
        page's ``next_after`` (0 from the start), ``limit`` 1..1000 (default 100).

        Raises AgentMemoryError: 400 ``invalid_query`` (an unknown table), 410
        ``cursor_expired`` (``after`` below what retention pruned; resume after the error's
        ``oldest_cursor``), 403 ``scope_required`` or ``role_required``, UnreachableError."""
        q: Dict[str, str] = {}
        if tables:
            q["tables"] = ",".join(tables)
        if after:
            q["after"] = str(int(after))
        if limit is not None:
            q["limit"] = str(int(limit))
        path = "/v1/export/feed" + ("?" + urllib.parse.urlencode(q) if q else "")
        d = self._http.request("GET", path).data or {}
        return FeedPage(records=[FeedRecord.from_wire(r) for r in d.get("records") or [] if isinstance(r, dict)],
                        next_after=int(d.get("next_after") or 0))

    def request_agent_memory_export(self, source_id: str) -> str:
        """Asks for agent ``source_id``'s export file (POST /v1/agent-memory/exports, issue 33;
        a person key with role ``admin``); the service's workflow builds it (every note version
        and proposal, sealed, expiring after 7 days). Returns the export id: poll
        ``agent_memory_export`` until ``status`` is ``completed``, then
        ``agent_memory_export_file``. Raises AgentMemoryError (400 ``invalid_member``, 403
        ``role_required``), UnreachableError."""
        d = self._http.request("POST", "/v1/agent-memory/exports", {"source_id": source_id}).data or {}
        return str(d.get("export_id") or "")

    def agent_memory_export(self, export_id: str) -> Dict[str, Any]:
        """The state of export file ``export_id`` (GET /v1/agent-memory/exports/{id}) as the
        service sends it: ``export_id``, ``source_id``, ``status`` (``running``, ``completed``,
        ``failed``), ``created_at``, ``completed_at``, ``expires_at`` (RFC 3339 UTC) and
        ``counts`` ({notes, proposals} once completed). Raises AgentMemoryError (404 unknown or
        expired, 403 ``role_required``)."""
        path = "/v1/agent-memory/exports/" + urllib.parse.quote(export_id, safe="")
        return dict(self._http.request("GET", path).data or {})

    def agent_memory_export_file(self, export_id: str) -> Dict[str, Any]:
        """Downloads completed export file ``export_id`` (GET /v1/agent-memory/exports/{id}/file;
        the download leaves a receipt): {export_id, source_id, space_id, exported_at,
        expires_at, notes, proposals}. Raises AgentMemoryError (409 ``export_not_ready``, 404,
        403 ``role_required``)."""
        path = "/v1/agent-memory/exports/" + urllib.parse.quote(export_id, safe="") + "/file"
        return dict(self._http.request("GET", path).data or {})

    def knowledge_base_ids(self, limit: int = 10) -> List[str]:
        """The ids of the knowledge bases this key may read, by name, at most ``limit`` (GET
        /v1/knowledge: an agent key sees the bases whose readers grant it; the MCP server's
        default for search_knowledge without kbs). Raises AgentMemoryError (403
        ``scope_required`` without ``knowledge:read``, ``feature_disabled``)."""
        d = self._http.request("GET", "/v1/knowledge").data or {}
        return [str(b.get("id")) for b in d.get("bases") or [] if isinstance(b, dict)][:limit]

    # Tools --------------------------------------------------------------------------------------

    def tools(self, agent_memory: bool = True, write_agent_memory: bool = False, *, knowledge: bool = False,
              knowledge_bases: Optional[Sequence[str]] = None, can_write: Optional[bool] = None,
              discover: bool = True) -> Any:
        """The model tool kit (an :class:`agentmemory.tools.Toolkit`): ``search_agent_memory`` (with
        agent_memory), ``remember`` (with write_agent_memory, and only when the key holds
        ``agent_memory:write``) and ``search_knowledge`` (with knowledge, and only where the key
        may read knowledge: scope ``knowledge:read`` and knowledge on for the space). What the key
        may use is learned from the service's MCP tool list (POST /mcp tools/list, which follows
        the key's scopes and the space's features); ``can_write`` overrides that for remember, and
        ``discover=False`` offers what is asked without asking the service.
        ``knowledge_bases`` are the base ids search_knowledge searches when the model names
        none (default: every base the key may read, at most 10). Raises AgentMemoryError when
        discovery fails. The kit is built by agentmemory.tools (see register_toolkit)."""
        if _toolkit_builder is None:
            raise RuntimeError("agentmemory: the tool kit is not loaded (import agentmemory or agentmemory.tools)")
        return _toolkit_builder(self, agent_memory, write_agent_memory, knowledge=knowledge,
                                knowledge_bases=knowledge_bases, can_write=can_write, discover=discover)

    @staticmethod
    def system_prompt(instructions: str, notes: Any = None, context: Any = None) -> str:
        """See :func:`agentmemory.system_prompt`."""
        return system_prompt(instructions, notes, context)


class AgentState:
    """Reads and writes one state (scope + this client's agent)."""

    def __init__(self, client: Client, scope: Scope, *, subject: str = "") -> None:
        self._client = client
        self.scope = scope
        self._subject = subject

    def __repr__(self) -> str:
        return "AgentState(%s)" % self.scope.kind

    def get(self) -> State:
        """The state, never older than the newest version this client wrote or read
        (read-your-writes). An older non-zero version (a lagging replica) is answered from what
        the client holds, or retried briefly; version 0 kept through the retries (about 0.75 s)
        means the state is gone (erased, expired, deleted): the client drops its copy and returns
        the empty state. Pending queued writes are resent first. Raises AgentMemoryError
        (UnreachableError when the service cannot be reached)."""
        return self._client._get(self.scope)

    def put(self, body: Mapping[str, Any], mode: str = "merge_by_key", if_version: Optional[int] = None) -> WriteResult:
        """Writes fields: ``merge_by_key`` (the default: each top-level field replaces that field,
        ``DELETE`` removes one) or ``cas`` (the body is the whole state, applied only at
        ``if_version``; 0: the state must not exist). A refusal by rule is a result with
        ``stored`` False and ``reason`` (not_declared_field, over_cap, conflict), not an error.
        When the service is unreachable (or answers 502/503/504 after the retries) the write is
        queued (``queued`` True) and resent later with the same if_version. Raises
        AgentMemoryError for other refusals (400 invalid_field_value, 401, 403)."""
        return self._client._put(self.scope, self._subject, body, mode, if_version)

    @property
    def conflicts(self) -> List[Conflict]:
        """This state's queued conditional writes that conflicted when resent."""
        k = self._client._key(self.scope, self._client.agent)
        return [c for c in self._client.conflicts if (c.scope.kind, c.scope.id, c.agent) == k]

    def lease(self, ttl: int = 30) -> "StateLease":
        """Acquires a lease on this state for ttl seconds (1..3600): one handler at a time, with
        a fencing token that grows with every grant. While it is held, writes without it raise
        AgentMemoryError lease_held (unless the schema's leases are advisory). Use it in a
        ``with`` block, which releases it; AgentMemoryError lease_held while another handler
        holds one."""
        req: Dict[str, Any] = {"scope": self.scope.wire(), "ttl_seconds": int(ttl)}
        if self._client.agent:
            req["agent"] = self._client.agent
        d = self._client._http.request("POST", "/v1/agent-state/lease", req).data or {}
        return StateLease(self, d["lease_id"], int(d["token"]), d["expires_at"])


class StateLease:
    """A lease on a working state with its fencing token (issue 31); a context manager that
    releases it on exit (a lease already lost is not an error on exit). ``put`` writes carrying
    it: AgentMemoryError lease_lost once it expired, was released or a newer one was granted."""

    def __init__(self, state: "AgentState", lease_id: str, token: int, expires_at: str) -> None:
        self.state = state
        self.lease_id = lease_id
        self.token = token
        self.expires_at = expires_at

    def __enter__(self) -> "StateLease":
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self.release()
        except AgentMemoryError as e:
            if e.code != "lease_lost":
                raise

    def _proof(self, **extra: Any) -> Dict[str, Any]:
        req: Dict[str, Any] = {"scope": self.state.scope.wire(), "lease_id": self.lease_id, "token": self.token}
        if self.state._client.agent:
            req["agent"] = self.state._client.agent
        req.update(extra)
        return req

    def put(self, body: Mapping[str, Any], mode: str = "merge_by_key", if_version: Optional[int] = None) -> WriteResult:
        """AgentState.put carrying this lease (never queued when the service is unreachable)."""
        return self.state._client._put(self.state.scope, self.state._subject, body, mode, if_version, self)

    def renew(self, ttl: int = 30) -> None:
        """Extends the lease to ttl seconds from now; AgentMemoryError lease_lost when it is no longer in force."""
        d = self.state._client._http.request("POST", "/v1/agent-state/lease/renew", self._proof(ttl_seconds=int(ttl))).data or {}
        self.expires_at = d.get("expires_at", self.expires_at)

    def release(self) -> None:
        """Ends the lease; AgentMemoryError lease_lost when it is no longer in force."""
        self.state._client._http.request("POST", "/v1/agent-state/lease/release", self._proof())


class Session:
    """A conversation, task, object or customer: its working memory and its notes."""

    def __init__(self, client: Client, scope: Scope, *, subject: str = "", view: str = "") -> None:
        self.client = client
        self.scope = scope
        self.view = view
        self.agent_state = AgentState(client, scope, subject=subject)

    def __repr__(self) -> str:
        return "Session(%s)" % self.scope.kind

    def agent_memory(self, max_tokens: Optional[int] = None, tags: Optional[Sequence[str]] = None,
                     view: Optional[str] = None) -> Block:
        """The notes block (see Client.block); the session's view orders the notes unless given."""
        return self.client.block(max_tokens=max_tokens, tags=tags, view=self.view if view is None else view)

    def context(self, *, view: Optional[str] = None, **kw: Any) -> Context:
        """Client.context; the session's view orders the block unless given."""
        return self.client.context(view=self.view if view is None else view, **kw)

    def remember(self, kind: str, title: str, body: str, tags: Optional[Sequence[str]] = None, *,
                 visibility: str = "", idempotency_key: Optional[str] = None,
                 valid_until: Optional[str] = None) -> Saved:
        """Client.remember with this conversation's (or task's) id as evidence."""
        conv = self.scope.id if self.scope.kind == "conversation" else ""
        task = self.scope.id if self.scope.kind == "task" else ""
        return self.client.remember(kind, title, body, tags, visibility=visibility, conversation_id=conv,
                                    task_id=task, idempotency_key=idempotency_key, valid_until=valid_until)

    def tools(self, agent_memory: bool = True, write_agent_memory: bool = False, **kw: Any) -> Any:
        """Client.tools whose remember sends this session's id as evidence."""
        kit = self.client.tools(agent_memory, write_agent_memory, **kw)
        kit.session = self
        return kit

