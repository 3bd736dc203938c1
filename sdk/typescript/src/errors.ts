/**
 * Typed errors. Every failure the service answers is an {@link AgentMemoryError} carrying the
 * service's `code`; a transport failure is an {@link UnreachableError} (code `unreachable`).
 * Messages hold the HTTP status, the code and the service's message (which never repeats a
 * caller's values): never a key, a scope id, a URL or a body.
 *
 * @module
 */

/** Fields of an {@link AgentMemoryError}. */
export interface AgentMemoryErrorInit {
  /** HTTP status; 0 for a transport failure. */
  status: number;
  /** The service's `error.code` (`agent_state_conflict`, `personal_data_in_agent_memory`, ...). */
  code: string;
  /** The service's message (it never repeats the caller's values). */
  message?: string;
  /** 400: the request member at fault. */
  member?: string;
  /** 422 `personal_data_in_agent_memory`: the kinds of personal data found, never values. */
  kinds?: string[];
  /** 429 and 503: seconds to wait (the `Retry-After` header or `error.retry_after`). */
  retryAfterSeconds?: number;
  /** 412: the state's current version. */
  version?: number;
  /** The `X-Request-Id` of the answer, for the service's logs. */
  requestId?: string;
}

/** A failure of a call to agentmemory: `status`, `code` and details, never personal data. */
export class AgentMemoryError extends Error {
  /** HTTP status; 0 when the service could not be reached. */
  readonly status: number;
  /** The service's `error.code`, or `unreachable`. */
  readonly code: string;
  /** 400: the request member at fault. */
  readonly member?: string;
  /** 422: the kinds of personal data found (never the values). */
  readonly kinds?: string[];
  /** 429 and 503: seconds to wait before a retry. */
  readonly retryAfterSeconds?: number;
  /** 412: the state's current version. */
  readonly version?: number;
  /** The answer's `X-Request-Id`. */
  readonly requestId?: string;

  constructor(init: AgentMemoryErrorInit) {
    super(`agentmemory: ${init.status === 0 ? "unreachable" : init.status} ${init.code}${init.message ? ": " + init.message : ""}`);
    this.name = "AgentMemoryError";
    this.status = init.status;
    this.code = init.code;
    if (init.member !== undefined) this.member = init.member;
    if (init.kinds !== undefined) this.kinds = init.kinds;
    if (init.retryAfterSeconds !== undefined) this.retryAfterSeconds = init.retryAfterSeconds;
    if (init.version !== undefined) this.version = init.version;
    if (init.requestId !== undefined) this.requestId = init.requestId;
  }
}

/** 412 `agent_state_conflict`: the stored version is not `if_version`; `version` is the current one. */
export class ConflictError extends AgentMemoryError {
  constructor(init: AgentMemoryErrorInit) {
    super(init);
    this.name = "ConflictError";
  }
}

/** 422 `personal_data_in_agent_memory`: the note holds customer data; `kinds` lists what was found. */
export class PersonalDataError extends AgentMemoryError {
  constructor(init: AgentMemoryErrorInit) {
    super(init);
    this.name = "PersonalDataError";
  }
}

/** 429 (`note_rate_limited`, ...): wait `retryAfterSeconds`. */
export class RateLimitedError extends AgentMemoryError {
  constructor(init: AgentMemoryErrorInit) {
    super(init);
    this.name = "RateLimitedError";
  }
}

/** 503 (`detector_unavailable`, `agent_state_busy`, ...): retry after `retryAfterSeconds`. */
export class UnavailableError extends AgentMemoryError {
  constructor(init: AgentMemoryErrorInit) {
    super(init);
    this.name = "UnavailableError";
  }
}

/**
 * The service could not be reached (connection refused, DNS, timeout, a cut answer): status 0,
 * code `unreachable`. `reason` is the transport's short error code (`ECONNREFUSED`,
 * `timeout`), never its full message (which can hold the URL).
 */
export class UnreachableError extends AgentMemoryError {
  /** The transport's error code, e.g. `ECONNREFUSED` or `timeout`. */
  readonly reason: string;
  constructor(reason: string) {
    super({ status: 0, code: "unreachable", message: `the service could not be reached (${reason})` });
    this.name = "UnreachableError";
    this.reason = reason;
  }
}

/** Builds the typed error for an answer's status. */
export function errorFor(init: AgentMemoryErrorInit): AgentMemoryError {
  switch (init.status) {
    case 412:
      return new ConflictError(init);
    case 422:
      return new PersonalDataError(init);
    case 429:
      return new RateLimitedError(init);
    case 503:
      return new UnavailableError(init);
    default:
      return new AgentMemoryError(init);
  }
}
