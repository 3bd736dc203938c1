"""Typed errors of the agentmemory SDK.

Every error the service answers is an :class:`AgentMemoryError` carrying the service's
``code``; a transport failure is :class:`UnreachableError` (code ``"unreachable"``). Messages
never hold the key, a scope id, a request body or personal data: only the HTTP status, the
service's code and the service's message (which never repeats values).
"""

from __future__ import annotations

from typing import List, Optional


class AgentMemoryError(Exception):
    """An answer of the service that is not a success.

    Attributes:
        status: the HTTP status (0 for :class:`UnreachableError`).
        code: the service's ``error.code`` (e.g. ``agent_state_conflict``), or the status text.
        message: the service's ``error.message`` (never repeats values).
        retry_after: seconds to wait before retrying (429, 503), or None.
        kinds: for ``personal_data_in_agent_memory``, the kinds of personal data found (never values).
        version: for a 412, the state's current version.
    """

    def __init__(self, status: int, code: str, message: str = "", *, retry_after: Optional[float] = None,
                 kinds: Optional[List[str]] = None, version: Optional[int] = None) -> None:
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after
        self.kinds = list(kinds or [])
        self.version = version
        text = "agentmemory: %d %s" % (status, code)
        if message:
            text += ": " + message
        super().__init__(text)


class ConflictError(AgentMemoryError):
    """412 agent_state_conflict: the state is at another version (``version`` holds it)."""


class PersonalDataError(AgentMemoryError):
    """422 personal_data_in_agent_memory: ``kinds`` lists the kinds found, never the values."""


class RateLimitedError(AgentMemoryError):
    """429: too many requests; wait ``retry_after`` seconds."""


class UnavailableError(AgentMemoryError):
    """502, 503 or 504: the service cannot answer now; ``retry_after`` when it said so."""


class UnreachableError(AgentMemoryError):
    """The service could not be reached (connection refused, timeout, DNS): status 0, code ``unreachable``.

    The request may or may not have reached the service.
    """

    def __init__(self, reason: str = "") -> None:
        super().__init__(0, "unreachable", reason)


class AnswerError(AgentMemoryError):
    """The service's answer could not be read (not JSON, nested too deep, too large)."""

    def __init__(self, reason: str) -> None:
        super().__init__(0, "invalid_answer", reason)


def error_for(status: int, code: str, message: str, *, retry_after: Optional[float] = None,
              kinds: Optional[List[str]] = None, version: Optional[int] = None) -> AgentMemoryError:
    """Returns the typed error of an answer with this status."""
    cls = AgentMemoryError
    if status == 412:
        cls = ConflictError
    elif status == 422:
        cls = PersonalDataError
    elif status == 429:
        cls = RateLimitedError
    elif status in (502, 503, 504):
        cls = UnavailableError
    return cls(status, code, message, retry_after=retry_after, kinds=kinds, version=version)
