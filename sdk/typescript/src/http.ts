/**
 * The transport: JSON over `fetch`, retries with backoff on 429 and 5xx (honouring
 * `Retry-After`) and on transport failures, typed errors, and logs that never hold a key, a
 * scope id, a query string or a body.
 *
 * @module
 */
import { AgentMemoryError, UnreachableError, errorFor } from "./errors.js";

/** The part of a `fetch` answer the SDK reads. */
export interface FetchResponse {
  status: number;
  headers: { get(name: string): string | null };
  text(): Promise<string>;
}

/** An `AbortSignal` (the SDK's own timeout), typed structurally so no DOM or Node types are needed. */
export interface AbortSignalLike {
  readonly aborted: boolean;
}

/** The part of `fetch` the SDK calls; pass your own (a proxy, a test double) in `ClientOptions.fetch`. */
export type FetchLike = (
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string; signal?: AbortSignalLike },
) => Promise<FetchResponse>;

/** Retry policy: how many retries after the first try and the backoff bounds. */
export interface RetryOptions {
  /** Retries after the first attempt on 429, 5xx and transport failures (default 2). */
  retries?: number;
  /** First backoff in milliseconds, doubled per retry, with jitter (default 200). */
  baseDelayMs?: number;
  /** Largest backoff in milliseconds (default 5000). */
  maxDelayMs?: number;
  /** Largest `Retry-After` honoured, in milliseconds: a longer one fails at once (default 30000). */
  maxRetryAfterMs?: number;
}

/**
 * One log event. `route` is the path without its query string (`/v1/agent-state`): events never
 * carry a key, a scope id, a query, a header value or a body.
 */
export interface LogEvent {
  event: "request" | "retry" | "queued" | "resent" | "conflict" | "rejected" | "dropped_state";
  method?: string;
  route?: string;
  status?: number;
  attempt?: number;
  delayMs?: number;
  code?: string;
}

/** Receives {@link LogEvent}s. */
export type Logger = (event: LogEvent) => void;

/** An answer: status, headers and the parsed JSON body (undefined when empty). */
export interface Answer<T> {
  status: number;
  headers: { get(name: string): string | null };
  data: T;
}

/** Largest nesting accepted in an answer (the service's 64-level body plus envelopes, as the Go SDK). */
export const MAX_ANSWER_DEPTH = 96;

/** Settings of a {@link Transport}. */
export interface TransportOptions {
  baseUrl: string;
  key: string;
  agentVersion?: string;
  fetch?: FetchLike;
  timeoutMs?: number;
  retry?: RetryOptions;
  logger?: Logger;
}

const RETRY_STATUSES = new Set([429, 500, 502, 503, 504]);

/** Sends JSON requests to the service. */
export class Transport {
  readonly baseUrl: string;
  private readonly key: string;
  private readonly agentVersion?: string;
  private readonly fetchFn: FetchLike;
  private readonly timeoutMs: number;
  private readonly retry: Required<RetryOptions>;
  readonly log: Logger;

  constructor(opt: TransportOptions) {
    this.baseUrl = opt.baseUrl.replace(/\/+$/, "");
    this.key = opt.key;
    if (opt.agentVersion !== undefined) this.agentVersion = opt.agentVersion;
    const f = opt.fetch ?? (globalThis.fetch as unknown as FetchLike | undefined);
    if (!f) throw new TypeError("agentmemory: no fetch in this runtime: pass ClientOptions.fetch");
    this.fetchFn = opt.fetch ?? ((url, init) => (globalThis.fetch as unknown as FetchLike)(url, init));
    this.timeoutMs = opt.timeoutMs ?? 10_000;
    this.retry = {
      retries: opt.retry?.retries ?? 2,
      baseDelayMs: opt.retry?.baseDelayMs ?? 200,
      maxDelayMs: opt.retry?.maxDelayMs ?? 5_000,
      maxRetryAfterMs: opt.retry?.maxRetryAfterMs ?? 30_000,
    };
    this.log = opt.logger ?? (() => {});
  }

  /**
   * Sends one request and returns a 2xx or 304 answer. Retries 429, 5xx and transport failures
   * with backoff (`Retry-After` first). Throws {@link UnreachableError} when the service
   * could not be reached, or the typed {@link AgentMemoryError} of the last answer.
   */
  async request<T>(
    method: string,
    path: string,
    opts: { body?: unknown; headers?: Record<string, string>; retries?: number; raw?: boolean } = {},
  ): Promise<Answer<T>> {
    const route = path.split("?")[0] ?? path;
    const headers: Record<string, string> = { Authorization: "Bearer " + this.key, Accept: "application/json" };
    if (opts.body !== undefined) headers["Content-Type"] = "application/json";
    if (this.agentVersion) headers["Agent-Version"] = this.agentVersion;
    Object.assign(headers, opts.headers);
    const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const retries = opts.retries ?? this.retry.retries;
    for (let attempt = 0; ; attempt++) {
      let res: FetchResponse;
      let text: string;
      try {
        const signal = typeof AbortSignal !== "undefined" && "timeout" in AbortSignal ? AbortSignal.timeout(this.timeoutMs) : undefined;
        const init: Parameters<FetchLike>[1] = { method, headers };
        if (body !== undefined) init.body = body;
        if (signal) init.signal = signal;
        res = await this.fetchFn(this.baseUrl + path, init);
        text = await res.text();
      } catch (err) {
        const reason = transportReason(err);
        if (attempt < retries) {
          const delay = this.backoff(attempt);
          this.log({ event: "retry", method, route, attempt: attempt + 1, delayMs: delay, code: reason });
          await sleep(delay);
          continue;
        }
        throw new UnreachableError(reason);
      }
      this.log({ event: "request", method, route, status: res.status, attempt });
      if (res.status === 304) return { status: 304, headers: res.headers, data: undefined as T };
      if (res.status >= 200 && res.status < 300) {
        return { status: res.status, headers: res.headers, data: (opts.raw ? text : parseAnswer(text)) as T };
      }
      const err = decodeError(res, text);
      if (RETRY_STATUSES.has(res.status) && attempt < retries) {
        let delay = this.backoff(attempt);
        if (err.retryAfterSeconds !== undefined) {
          const ms = err.retryAfterSeconds * 1000;
          if (ms > this.retry.maxRetryAfterMs) throw err;
          delay = ms;
        }
        this.log({ event: "retry", method, route, status: res.status, attempt: attempt + 1, delayMs: delay, code: err.code });
        await sleep(delay);
        continue;
      }
      throw err;
    }
  }

  private backoff(attempt: number): number {
    const exp = Math.min(this.retry.maxDelayMs, this.retry.baseDelayMs * 2 ** attempt);
    return Math.round(exp / 2 + (Math.random() * exp) / 2);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The short code of a transport failure; never its message, which can hold the URL. */
function transportReason(err: unknown): string {
  const e = err as { name?: string; code?: string; cause?: { code?: string; name?: string } };
  if (e?.name === "TimeoutError" || e?.name === "AbortError") return "timeout";
  const code = e?.cause?.code ?? e?.code;
  if (typeof code === "string" && /^[A-Z0-9_]{1,40}$/.test(code)) return code;
  return "network_error";
}

/**
 * Parses an answer's JSON after a linear scan that refuses nesting beyond
 * {@link MAX_ANSWER_DEPTH}: memory stays bounded whatever a server sends.
 */
export function parseAnswer(text: string): unknown {
  if (text.length === 0) return undefined;
  checkDepth(text, MAX_ANSWER_DEPTH);
  try {
    return JSON.parse(text);
  } catch {
    throw new AgentMemoryError({ status: 0, code: "invalid_answer", message: "the answer is not JSON" });
  }
}

function checkDepth(text: string, max: number): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++;
      else if (c === 34) inString = false;
      continue;
    }
    if (c === 34) inString = true;
    else if (c === 123 || c === 91) {
      if (++depth > max) throw new AgentMemoryError({ status: 0, code: "json_too_deep", message: `the answer nests deeper than ${max} levels` });
    } else if (c === 125 || c === 93) depth--;
  }
}

function decodeError(res: FetchResponse, text: string): AgentMemoryError {
  let body: { error?: { code?: unknown; message?: unknown; member?: unknown; kinds?: unknown; retry_after?: unknown }; version?: unknown } = {};
  try {
    const parsed = parseAnswer(text);
    if (parsed && typeof parsed === "object") body = parsed as typeof body;
  } catch {
    // an error answer that is not JSON keeps only its status
  }
  const e = body.error ?? {};
  let retryAfter: number | undefined;
  const header = res.headers.get("Retry-After");
  if (header && /^\d+$/.test(header.trim())) retryAfter = Number(header.trim());
  else if (typeof e.retry_after === "number") retryAfter = e.retry_after;
  const init: ConstructorParameters<typeof AgentMemoryError>[0] = {
    status: res.status,
    code: typeof e.code === "string" && /^[a-z_]+$/.test(e.code) ? e.code : `http_${res.status}`,
  };
  if (typeof e.message === "string") init.message = e.message;
  if (typeof e.member === "string") init.member = e.member;
  if (Array.isArray(e.kinds)) init.kinds = e.kinds.filter((k): k is string => typeof k === "string");
  if (retryAfter !== undefined) init.retryAfterSeconds = retryAfter;
  if (typeof body.version === "number") init.version = body.version;
  const rid = res.headers.get("X-Request-Id");
  if (rid) init.requestId = rid;
  return errorFor(init);
}
