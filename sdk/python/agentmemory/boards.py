"""Boards (issue 31, docs/boards.md): shared memory that agents read and write only by grant.

``client.board(type, id)`` names one board; ``get()`` reads it, ``put(body, if_version=...)``
writes the fields of ``body`` at the version read (an older version is merged field by field by
the type's conflict rules, and the answer names the rule that settled each field). Leases give
one handler at a time, as a context manager::

    with client.board("findings", "incident-42").lease(ttl=30) as lease:
        lease.put({"hits": 3}, if_version=version)

``client.bridged_board(space, type, id).get()`` reads a board of another space through a
bridge both spaces approved (read only).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional

from ._http import Transport


@dataclass(frozen=True)
class BoardState:
    """A board as read: its fields, the version to pass to put, its last write (ISO 8601 or None)."""
    body: Dict[str, Any]
    version: int
    updated_at: Optional[str]


@dataclass(frozen=True)
class Settled:
    """The rule that settled a field both this write and another since if_version changed."""
    field: str
    rule: str
    rejected: bool = False
    reason: str = ""


@dataclass(frozen=True)
class BoardPutResult:
    """The answer of a board write: stored and the version after it, the settled fields, and
    reason/fields when not stored (not_declared_field, over_cap)."""
    stored: bool
    version: int
    settled: List[Settled] = field(default_factory=list)
    reason: Optional[str] = None
    fields: List[str] = field(default_factory=list)


def _settled(items: Any) -> List[Settled]:
    return [Settled(field=s["field"], rule=s["rule"], rejected=bool(s.get("rejected")), reason=s.get("reason", ""))
            for s in items or []]


class Board:
    """One board of the key's space; the key needs a grant on it (403 board_grant_required
    otherwise). Raises :class:`agentmemory.ConflictError` on a 412 board_conflict (get and
    retry) and :class:`agentmemory.AgentMemoryError` with code ``lease_held`` or ``lease_lost``."""

    def __init__(self, http: Transport, type: str, id: str) -> None:
        self._http = http
        self.type = type
        self.id = id

    def __repr__(self) -> str:
        return "Board(%r, %r)" % (self.type, self.id)

    def get(self) -> BoardState:
        d = self._http.request("POST", "/v1/boards/read", {"type": self.type, "id": self.id}).data or {}
        return BoardState(body=dict(d.get("body") or {}), version=int(d.get("version") or 0), updated_at=d.get("updated_at"))

    def put(self, body: Mapping[str, Any], if_version: int) -> BoardPutResult:
        return self._put(body, if_version, None)

    def _put(self, body: Mapping[str, Any], if_version: int, lease: Optional["Lease"]) -> BoardPutResult:
        req: Dict[str, Any] = {"type": self.type, "id": self.id, "if_version": if_version, "body": dict(body)}
        if lease is not None:
            req["lease"] = {"lease_id": lease.lease_id, "token": lease.token}
        d = self._http.request("PUT", "/v1/boards", req).data or {}
        return BoardPutResult(stored=bool(d.get("stored")), version=int(d.get("version") or 0),
                              settled=_settled(d.get("settled")), reason=d.get("reason"), fields=list(d.get("fields") or []))

    def lease(self, ttl: int = 30) -> "Lease":
        """Acquires a lease for ttl seconds (1..3600); use it in a ``with`` block, which releases it."""
        d = self._http.request("POST", "/v1/boards/lease", {"type": self.type, "id": self.id, "ttl_seconds": int(ttl)}).data or {}
        return Lease(self, d["lease_id"], int(d["token"]), d["expires_at"])


class BridgedBoard:
    """A board of another space read through a bridge (docs/boards.md "Bridges"): read only.
    Without a bridge both spaces approved that lists this agent and the board, and for a board
    never written, ``get()`` raises :class:`agentmemory.AgentMemoryError` 404 ``board_not_found``,
    the same answer as for a space that does not exist."""

    def __init__(self, http: Transport, space: str, type: str, id: str) -> None:
        self._http = http
        self.space = space
        self.type = type
        self.id = id

    def __repr__(self) -> str:
        return "BridgedBoard(%r, %r, %r)" % (self.space, self.type, self.id)

    def get(self) -> BoardState:
        d = self._http.request("POST", "/v1/boards/read", {"type": self.type, "id": self.id, "space": self.space}).data or {}
        return BoardState(body=dict(d.get("body") or {}), version=int(d.get("version") or 0), updated_at=d.get("updated_at"))


class Lease:
    """A lease on a board with its fencing token; a context manager that releases it on exit
    (a lease already lost is not an error on exit)."""

    def __init__(self, board: Board, lease_id: str, token: int, expires_at: str) -> None:
        self.board = board
        self.lease_id = lease_id
        self.token = token
        self.expires_at = expires_at

    def __enter__(self) -> "Lease":
        return self

    def __exit__(self, *exc: Any) -> None:
        from .errors import AgentMemoryError
        try:
            self.release()
        except AgentMemoryError as e:
            if e.code != "lease_lost":
                raise

    def _proof(self, **extra: Any) -> Dict[str, Any]:
        return dict({"type": self.board.type, "id": self.board.id, "lease_id": self.lease_id, "token": self.token}, **extra)

    def put(self, body: Mapping[str, Any], if_version: int) -> BoardPutResult:
        """Writes carrying the lease: AgentMemoryError lease_lost once it is no longer in force."""
        return self.board._put(body, if_version, self)

    def renew(self, ttl: int = 30) -> None:
        d = self.board._http.request("POST", "/v1/boards/lease/renew", self._proof(ttl_seconds=int(ttl))).data or {}
        self.expires_at = d.get("expires_at", self.expires_at)

    def release(self) -> None:
        self.board._http.request("POST", "/v1/boards/lease/release", self._proof())
