"""The HTTP transport: JSON requests with the key, retries with backoff on 5xx and 429
honouring Retry-After, bounded answers, typed errors. Standard library only."""

from __future__ import annotations

import email.utils
import json
import logging
import random
import re
import socket
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone
from typing import Any, Callable, Dict, Mapping, Optional

from .errors import AgentMemoryError, AnswerError, UnreachableError, error_for

log = logging.getLogger("agentmemory")
log.addHandler(logging.NullHandler())

#: Statuses retried with backoff (and Retry-After when the service sends it).
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})

#: Nesting an answer may hold: a working-memory body holds at most 64 levels, answers wrap it
#: in a few more (the Go SDK's MaxAnswerDepth). A deeper answer is refused before parsing.
MAX_ANSWER_DEPTH = 96

#: Largest answer read, in bytes.
MAX_ANSWER_BYTES = 16 << 20

_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def check_depth(data: bytes, limit: int = MAX_ANSWER_DEPTH) -> None:
    """Raises AnswerError when data nests arrays/objects deeper than limit (one linear scan)."""
    depth = 0
    for m in _TOKENS.finditer(data):
        c = m.group()
        if c in (b"[", b"{"):
            depth += 1
            if depth > limit:
                raise AnswerError("json_too_deep: the answer nests deeper than %d levels" % limit)
        elif c in (b"]", b"}"):
            depth -= 1


def parse_retry_after(value: Optional[str]) -> Optional[float]:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Never follows a redirect: the key must not travel to another address."""

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> None:
        return None


class Response:
    """An answer: status, headers (lower-case names) and the decoded JSON (None when empty)."""

    def __init__(self, status: int, headers: Mapping[str, str], data: Any) -> None:
        self.status = status
        self.headers = {k.lower(): v for k, v in headers.items()}
        self.data = data

    def header(self, name: str) -> str:
        return self.headers.get(name.lower(), "")


class Transport:
    """Sends JSON requests to the service; safe for concurrent use."""

    def __init__(self, base_url: str, key: str, *, agent_version: str = "", timeout: float = 10.0,
                 max_retries: int = 3, max_retry_wait: float = 30.0, backoff: float = 0.25,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.base_url = base_url.rstrip("/")
        self._key = key
        self.agent_version = agent_version
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self.backoff = backoff
        self.sleep = sleep
        self._opener = urllib.request.build_opener(_NoRedirect())

    def __repr__(self) -> str:  # never shows the key
        return "Transport(%r)" % self.base_url

    def request(self, method: str, path: str, body: Any = None, headers: Optional[Dict[str, str]] = None,
                *, accept: str = "application/json") -> Response:
        """Sends one request, retrying 429 and 5xx answers with exponential backoff (full jitter)
        or the Retry-After the service sent, at most max_retries times and never waiting longer
        than max_retry_wait for one retry. Returns a 2xx or 304 Response; raises the typed
        AgentMemoryError of any other answer, UnreachableError on a transport failure (not retried)."""
        data = None if body is None else json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        route = path.split("?", 1)[0]
        attempt = 0
        while True:
            try:
                return self._once(method, path, data, headers, accept)
            except AgentMemoryError as err:
                if err.status not in RETRY_STATUSES or attempt >= self.max_retries:
                    raise
                wait = err.retry_after
                if wait is None:
                    wait = random.uniform(0.5, 1.0) * self.backoff * (2 ** attempt)
                if wait > self.max_retry_wait:
                    raise
                log.debug("agentmemory: %s %s answered %d; retry %d in %.2fs", method, route, err.status, attempt + 1, wait)
                self.sleep(wait)
                attempt += 1

    def _once(self, method: str, path: str, data: Optional[bytes], headers: Optional[Dict[str, str]],
              accept: str) -> Response:
        req = urllib.request.Request(self.base_url + path, data=data, method=method)
        req.add_header("Authorization", "Bearer " + self._key)
        req.add_header("Accept", accept)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.agent_version:
            req.add_header("Agent-Version", self.agent_version)
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            resp = self._opener.open(req, timeout=self.timeout)
        except urllib.error.HTTPError as e:
            status, hdrs, raw = e.code, dict(e.headers.items()) if e.headers else {}, _read(e)
            e.close()
        except (urllib.error.URLError, socket.timeout, ConnectionError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise UnreachableError(type(reason).__name__ if not isinstance(reason, str) else "transport error") from None
        else:
            with resp:
                status, hdrs, raw = resp.status, dict(resp.headers.items()), _read(resp)
        if status == 304:
            return Response(status, hdrs, None)
        if status >= 300:
            raise _decode_error(status, hdrs, raw)
        parsed: Any = None
        if raw:
            ctype = {k.lower(): v for k, v in hdrs.items()}.get("content-type", "")
            if ctype.startswith("text/event-stream"):
                raw = _sse_data(raw)
            check_depth(raw)
            try:
                parsed = json.loads(raw)
            except ValueError:
                raise AnswerError("the answer is not JSON") from None
        return Response(status, hdrs, parsed)


def _read(resp: Any) -> bytes:
    try:
        raw: bytes = resp.read(MAX_ANSWER_BYTES + 1)
    except (OSError, socket.timeout):
        raise UnreachableError("the answer was cut") from None
    if len(raw) > MAX_ANSWER_BYTES:
        raise AnswerError("the answer is larger than %d bytes" % MAX_ANSWER_BYTES)
    return raw


def _sse_data(raw: bytes) -> bytes:
    """The data of the first event of a text/event-stream answer (MCP's Streamable HTTP)."""
    lines = [ln[5:].lstrip() for ln in raw.splitlines() if ln.startswith(b"data:")]
    return b"\n".join(lines)


def _decode_error(status: int, headers: Mapping[str, str], raw: bytes) -> AgentMemoryError:
    code, message, kinds, version = "", "", None, None
    try:
        check_depth(raw)
        body = json.loads(raw) if raw else {}
    except (AgentMemoryError, ValueError):
        body = {}
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            code = str(err.get("code") or "")
            message = str(err.get("message") or "")
            if isinstance(err.get("kinds"), list):
                kinds = [str(k) for k in err["kinds"]]
        if isinstance(body.get("version"), int):
            version = body["version"]
    lower = {k.lower(): v for k, v in headers.items()}
    retry_after = parse_retry_after(lower.get("retry-after"))
    if not code:
        code = _STATUS_TEXT.get(status, "http_%d" % status)
    return error_for(status, code, message, retry_after=retry_after, kinds=kinds, version=version)


_STATUS_TEXT = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found", 409: "conflict",
                412: "agent_state_conflict", 413: "body_too_large", 415: "unsupported_media_type",
                422: "unprocessable", 429: "rate_limited", 500: "internal", 502: "bad_gateway",
                503: "unavailable", 504: "gateway_timeout"}
