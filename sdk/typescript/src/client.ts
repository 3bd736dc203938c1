/**
 * The client: working memory with read-your-writes, an offline queue and replay mode (WM-14),
 * and agent memory (the prompt block cached and revalidated, remember, search) (AM-4).
 *
 * @module
 */
import { BoardHandle, BridgedBoardHandle } from "./boards.js";
import { AgentMemoryError, ConflictError, UnreachableError } from "./errors.js";
import { Transport, type Answer, type FetchLike, type Logger, type RetryOptions } from "./http.js";
import { fileQueue, memoryQueue, type QueueStore, type QueuedWrite } from "./queue.js";
import type {
  Block,
  ContextAnswer,
  ContextRequest,
  Evidence,
  JsonValue,
  LeaseInfo,
  Note,
  NoteInput,
  ProposalAccepted,
  RetrieveRequest,
  Retrieval,
  Run,
  Scope,
  SearchResult,
  StateReadResult,
  StateWrite,
  StateWriteResult,
  TurnsPage,
  TurnsReadRequest,
  WriteMode,
  ExportFeedRequest,
  FeedPage,
  AgentMemoryExportStatus,
} from "./types.js";
import type { ToolKit, ToolKitOptions } from "./tooltypes.js";

/** Builds a client's tool kit (tools.ts registers its own with {@link registerToolKit}). */
type ToolKitBuilder = (client: AgentMemoryClient, opts: ToolKitOptions, evidence: Evidence | undefined) => Promise<ToolKit>;

let toolKitBuilder: ToolKitBuilder | undefined;

/**
 * @internal Sets the builder `tools()` uses. The tool kit (tools.ts) depends on this module and
 * never the reverse: it registers its builder when loaded, and the package's entry loads it.
 */
export function registerToolKit(builder: ToolKitBuilder): void {
  toolKitBuilder = builder;
}

/** Builds the kit through the registered builder; rejects when tools.ts was never loaded. */
function buildToolKit(client: AgentMemoryClient, opts: ToolKitOptions, evidence: Evidence | undefined): Promise<ToolKit> {
  if (!toolKitBuilder) return Promise.reject(new Error("agentmemory: the tool kit is not loaded (import it from @agentmemory/sdk)"));
  return toolKitBuilder(client, opts, evidence);
}

/** Options of {@link AgentMemoryClient}. */
export interface ClientOptions {
  /** The service, e.g. `http://127.0.0.1:8080`. Required unless `replay` is true. */
  baseUrl?: string;
  /** The agent's key (scopes `agent_state`, `agent_memory`, `agent_memory:write`), or a person's with role `integration`. */
  key?: string;
  /** The agent acted for; only with a person key (sent as `agent` and `source_id`). */
  agent?: string;
  /** Sent as the `Agent-Version` header (provenance, MS-5), e.g. `shop-bot/2.1`. */
  agentVersion?: string;
  /** Queued writes are kept in this JSON file (Node, Deno, Bun) and survive a restart. */
  queueFile?: string;
  /** A queue store of your own (takes precedence over `queueFile`); in memory by default. */
  queue?: QueueStore;
  /** Replay mode: every state starts empty and writes stay local; nothing is sent. */
  replay?: boolean;
  /** The `fetch` to use (default: the runtime's global `fetch`). */
  fetch?: FetchLike;
  /** Per-attempt timeout in milliseconds (default 10000). */
  timeoutMs?: number;
  /** Retries with backoff on 429, 5xx and transport failures. */
  retry?: RetryOptions;
  /** Receives log events: method, route, status, attempt, code. Never a key, scope id or body. */
  logger?: Logger;
  /**
   * The clock of the block and context caches, in milliseconds since the epoch (default
   * `Date.now`). A cached answer is fresh until its `Cache-Control: max-age` has passed on
   * this clock (CTX-4); tests pass their own to step over the period without sleeping.
   */
  now?: () => number;
}

/** `{"$delete": true}`: as a field's value in a merge write, removes that field. */
export const DELETE: { readonly $delete: true } = Object.freeze({ $delete: true as const });

/** A state as read: the service's `StateReadResult`. */
export type AgentState = StateReadResult;

/**
 * The answer of a write. `stored` and `version` as the service answered; `reason` is
 * `not_declared_field` or `over_cap` (refused by rule, HTTP 200), or `conflict` (HTTP 412: the
 * stored version is not `if_version`; `version` is the current one). `queued` is true when
 * the service could not be reached and the write waits in the queue (`stored` false,
 * `version` the expected base).
 */
export interface WriteResult extends Omit<StateWriteResult, "reason"> {
  reason: StateWriteResult["reason"] | "conflict";
  queued: boolean;
}

/** Options of a write: `mode` (`merge_by_key` default, or `cas`) and `ifVersion` (0: must not exist). */
export interface PutOptions {
  mode?: WriteMode;
  ifVersion?: number;
  /** The lease this write carries (see {@link AgentStateHandle.lease}): 409 `lease_lost` once it is no longer in force. */
  lease?: { leaseId: string; token: number };
}

/**
 * A queued compare-and-swap (or conditional merge) that met another version when it was
 * resent: reported, never merged.
 */
export interface Conflict {
  scope: Scope;
  agent?: string;
  if_version: number;
  current_version: number;
  body: { [field: string]: JsonValue };
}

/** A queued write the service refused for another reason than a conflict when resent (dropped from the queue). */
export interface Rejected {
  request: StateWrite;
  error: AgentMemoryError;
}

/** Options of a scope handle. */
export interface HandleOptions {
  /** The customer a conversation, task or object state belongs to (a handle such as `email:...`). */
  subject?: string;
  /** The agent (person keys with role `integration` only); defaults to `ClientOptions.agent`. */
  agent?: string;
}

/** Selects a prompt block: `max_tokens` 50..2000 (default 300); `tags` and `view` order notes, matching first. */
export interface BlockOptions {
  max_tokens?: number;
  tags?: string[];
  view?: string;
}

/**
 * The prompt block with its `etag`. `notModified` is true when this call took the block from
 * the cache: inside its freshness period (no request at all) or revalidated and answered 304.
 */
export interface AgentMemoryBlock extends Block {
  etag: string | null;
  notModified: boolean;
}

/**
 * The answer of the context call (`POST /v1/context`, CTX-2). `notModified` is true when this
 * call took it from the cache: inside its freshness period (no request) or answered 304.
 */
export interface AgentContext extends ContextAnswer {
  notModified: boolean;
}

/** One cached block or context answer: its ETag and until when (the client's clock, ms) it is fresh. */
interface CacheEntry<T> {
  value: T;
  etag: string | null;
  freshUntil: number;
}

/**
 * The freshness period in seconds that a `Cache-Control` header grants (CTX-4): its
 * `max-age=N`; 0 (revalidate every call) for `no-cache`, `no-store`, a missing header or one
 * without `max-age`.
 */
export function freshSeconds(cacheControl: string | null): number {
  if (!cacheControl) return 0;
  const parts = cacheControl.toLowerCase().split(",").map((p) => p.trim());
  if (parts.some((p) => p === "no-cache" || p === "no-store")) return 0;
  for (const p of parts) {
    const m = /^max-age=(\d{1,9})$/.exec(p);
    if (m) return Number(m[1]);
  }
  return 0;
}

/** The canonical JSON of v (members sorted at every level): one cache key per request shape. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return "[" + v.map(canonicalJson).join(",") + "]";
  if (v && typeof v === "object") {
    const o = v as { [k: string]: unknown };
    const keys = Object.keys(o).filter((k) => o[k] !== undefined).sort();
    return "{" + keys.map((k) => JSON.stringify(k) + ":" + canonicalJson(o[k])).join(",") + "}";
  }
  return JSON.stringify(v);
}

/** What `remember` sends: a note (`kind`, `title`, `body`, `tags`, ...). */
export type RememberNote = NoteInput;

/** Options of `remember`. */
export interface RememberOptions {
  /** Makes a retry return the first answer (at most 200 printable ASCII); a new one is generated when absent. */
  idempotencyKey?: string;
}

/**
 * A note written: `stored` (201, `note`), `proposed` (202 in a `human_only` space,
 * `proposal_id`) or `duplicate` (200: the same note is already active, nothing stored;
 * `note` is it and `duplicate_of` its id). `replayed` is true when the Idempotency-Key
 * matched an earlier write.
 */
export interface Remembered {
  status: "stored" | "proposed" | "duplicate";
  note: Note | null;
  proposal_id?: string;
  duplicate_of?: string;
  replayed: boolean;
}

/** `{ data, error }`: exactly one is non-null. `error.code` is the service's (e.g. `personal_data_in_agent_memory` with `error.kinds`). */
export type RememberResult = { data: Remembered; error: null } | { data: null; error: AgentMemoryError };

/** Options of `search`: `tags` (every one must be on the note) and `limit` (1..50, default 10). */
export interface SearchOptions {
  tags?: string[];
  limit?: number;
  /** The run the search belongs to (CTX-3), sent as the headers Agent-Run-Id and Agent-Run-Budget. */
  run?: Run;
}

/**
 * Options of `retrieve`: `top_k` 1..50 and `max_tokens` 100..8000 (the context's budget)
 * default to the first base's settings; with `min_score` (0..1) weaker vector candidates leave
 * the vector ranking. `filters` is sent as the request's `filters` object as given; the
 * service decides what it accepts (one without filters answers 400).
 */
export interface RetrieveOptions {
  top_k?: number;
  max_tokens?: number;
  min_score?: number;
  filters?: { [member: string]: JsonValue };
  /** The run the retrieval draws on (CTX-3). */
  run?: Run;
  /**
   * Another space whose bases `kbs` names by name, read across a bridge (issue 31): only an
   * active bridge approved by both spaces that lists this agent and those bases lets it
   * through; otherwise 404, as for a base that does not exist. A `run` is then a run of the
   * key's own space.
   */
  space?: string;
}

interface Seen {
  state: AgentState;
  known: boolean; // state.body is the body at state.version (not only the number)
}

const MAX_READ_RETRIES = 5;

/**
 * The agentmemory client. One per agent process.
 *
 * ```ts
 * const client = new AgentMemoryClient({ baseUrl: "http://127.0.0.1:8080", key: process.env.AGENTMEMORY_KEY });
 * const conv = client.conversation("c-1");
 * const state = await conv.agentState.get();
 * await conv.agentState.put({ step: "checkout" }, { mode: "cas", ifVersion: state.version });
 * ```
 */
export class AgentMemoryClient {
  /** @internal */ readonly http: Transport | null;
  /** @internal */ readonly opt: ClientOptions;
  private readonly store: QueueStore;
  private readonly ready: Promise<void>;
  private queue: QueuedWrite[] = [];
  private readonly conflictList: Conflict[] = [];
  private readonly rejectedList: Rejected[] = [];
  private readonly seen = new Map<string, Seen>();
  private readonly local = new Map<string, AgentState>();
  private readonly cache = new Map<string, CacheEntry<unknown>>();
  private readonly inflight = new Map<string, Promise<{ value: unknown; cached: boolean }>>();
  private readonly now: () => number;
  private flushing: Promise<void> | undefined;

  /** Builds a client; a queue file that exists is loaded and resent on the next call that reaches the service. Throws `TypeError` without `baseUrl` (outside replay). */
  constructor(opt: ClientOptions) {
    this.opt = { ...opt };
    if (!opt.replay && !opt.baseUrl) throw new TypeError("agentmemory: baseUrl is required");
    const t: ConstructorParameters<typeof Transport>[0] = { baseUrl: opt.baseUrl ?? "", key: opt.key ?? "" };
    if (opt.agentVersion !== undefined) t.agentVersion = opt.agentVersion;
    if (opt.fetch !== undefined) t.fetch = opt.fetch;
    if (opt.timeoutMs !== undefined) t.timeoutMs = opt.timeoutMs;
    if (opt.retry !== undefined) t.retry = opt.retry;
    if (opt.logger !== undefined) t.logger = opt.logger;
    this.http = opt.replay && !opt.baseUrl ? null : new Transport(t);
    this.now = opt.now ?? Date.now;
    this.store = opt.queue ?? (opt.queueFile ? fileQueue(opt.queueFile) : memoryQueue());
    this.ready = this.store.load().then((q) => {
      this.queue = q;
    });
    this.ready.catch(() => {}); // reported by the calls that await it
  }

  /** The handle of a conversation: its working state, the notes block, `remember` with the conversation as evidence. */
  conversation(id: string, opts?: HandleOptions): ScopeHandle {
    return new ScopeHandle(this, { kind: "conversation", id }, opts);
  }

  /** The handle of a task (its id is sent as `evidence.task_id` by `remember`). */
  task(id: string, opts?: HandleOptions): ScopeHandle {
    return new ScopeHandle(this, { kind: "task", id }, opts);
  }

  /** The handle of an object, named `type:namespace:id` (a string, or its three parts). */
  object(ref: string | { type: string; namespace: string; id: string }, opts?: HandleOptions): ScopeHandle {
    const id = typeof ref === "string" ? ref : `${ref.type}:${ref.namespace}:${ref.id}`;
    return new ScopeHandle(this, { kind: "object", id }, opts);
  }

  /** The handle of a customer, named by a handle such as `email:ana@example.com`. */
  subject(handle: string, opts?: HandleOptions): ScopeHandle {
    return new ScopeHandle(this, { kind: "subject", id: handle }, opts);
  }

  /** The working state of any scope for this client's agent. */
  agentState(scope: Scope, opts?: HandleOptions): AgentStateHandle {
    return new AgentStateHandle(this, scope, opts);
  }

  /** Queued compare-and-swap writes that conflicted when resent, oldest first (a copy). */
  get conflicts(): Conflict[] {
    return this.conflictList.map((c) => ({ ...c }));
  }

  /** Queued writes the service refused (not a conflict) when resent, oldest first (a copy). */
  get rejected(): Rejected[] {
    return [...this.rejectedList];
  }

  /** How many writes wait in the queue. */
  async pending(): Promise<number> {
    await this.ready;
    return this.queue.length;
  }

  /**
   * Resends queued writes in order, each with its own `if_version`. A resent write that
   * conflicts moves to {@link conflicts}; one refused otherwise to {@link rejected}. Throws
   * {@link UnreachableError} (or a 5xx error) when the service still cannot take them: they
   * stay queued.
   */
  async flush(): Promise<void> {
    await this.ready;
    if (this.flushing) return this.flushing;
    this.flushing = (async () => {
      try {
        while (this.queue.length > 0) {
          const next = this.queue[0]!;
          try {
            await this.send(next.request);
            this.http?.log({ event: "resent", method: "PUT", route: "/v1/agent-state" });
          } catch (err) {
            if (isTransient(err)) throw err;
            if (err instanceof ConflictError) {
              const c: Conflict = {
                scope: { ...next.request.scope },
                if_version: next.request.if_version ?? 0,
                current_version: err.version ?? 0,
                body: next.request.body,
              };
              if (next.request.agent) c.agent = next.request.agent;
              this.conflictList.push(c);
              this.http?.log({ event: "conflict", method: "PUT", route: "/v1/agent-state", status: 412, code: err.code });
            } else if (err instanceof AgentMemoryError) {
              this.rejectedList.push({ request: next.request, error: err });
              this.http?.log({ event: "rejected", method: "PUT", route: "/v1/agent-state", status: err.status, code: err.code });
            } else {
              throw err;
            }
          }
          this.queue.shift();
          await this.store.save(this.queue);
        }
      } finally {
        this.flushing = undefined;
      }
    })();
    return this.flushing;
  }

  private async flushQuiet(): Promise<void> {
    await this.ready;
    if (this.queue.length === 0) return;
    try {
      await this.flush();
    } catch {
      // still unreachable: the writes stay queued
    }
  }

  /** @internal */
  async read(scope: Scope, agent: string | undefined): Promise<AgentState> {
    const k = stateKey(scope, agent);
    if (this.opt.replay) return cloneState(this.local.get(k) ?? emptyState());
    await this.flushQuiet();
    const http = this.transport();
    for (let attempt = 0; ; attempt++) {
      const req: { scope: Scope; agent?: string } = { scope };
      if (agent) req.agent = agent;
      const st = (await http.request<StateReadResult>("POST", "/v1/agent-state/read", { body: req })).data;
      const seen = this.seen.get(k);
      if (!seen || st.version >= seen.state.version) {
        this.seen.set(k, { state: cloneState(st), known: true });
        return cloneState(st);
      }
      const absent = st.version === 0;
      if (absent && attempt >= MAX_READ_RETRIES) {
        // Still absent after the retries: erased, expired or deleted, not a lagging replica.
        this.seen.delete(k);
        http.log({ event: "dropped_state", method: "POST", route: "/v1/agent-state/read" });
        return cloneState(st);
      }
      if (seen.known && !absent) return cloneState(seen.state);
      if (attempt >= MAX_READ_RETRIES) {
        throw new AgentMemoryError({
          status: 0,
          code: "stale_read",
          message: `the service still serves version ${st.version} after this client saw ${seen.state.version}`,
        });
      }
      await new Promise((r) => setTimeout(r, 50 * (attempt + 1)));
    }
  }

  /** @internal */
  async write(req: StateWrite): Promise<WriteResult> {
    const k = stateKey(req.scope, req.agent);
    if (this.opt.replay) return this.applyLocal(k, req);
    await this.flushQuiet();
    if (this.queue.length > 0) return this.enqueue(req); // keep the order behind writes still waiting
    try {
      return await this.send(req);
    } catch (err) {
      if (isTransient(err)) return this.enqueue(req);
      if (err instanceof ConflictError) return { stored: false, version: err.version ?? 0, reason: "conflict", queued: false };
      throw err;
    }
  }

  private async enqueue(req: StateWrite): Promise<WriteResult> {
    this.queue.push({ request: req });
    await this.store.save(this.queue);
    this.http?.log({ event: "queued", method: "PUT", route: "/v1/agent-state" });
    return { stored: false, version: req.if_version ?? 0, reason: null, queued: true };
  }

  private async send(req: StateWrite): Promise<WriteResult> {
    const res = (await this.transport().request<StateWriteResult>("PUT", "/v1/agent-state", { body: req })).data;
    if (res.stored) {
      const k = stateKey(req.scope, req.agent);
      const seen = this.seen.get(k);
      if (!seen || res.version > seen.state.version) {
        this.seen.set(k, { state: { body: {}, version: res.version, updated_at: null }, known: false });
      }
    }
    return { ...res, queued: false };
  }

  /** Replay: the service's semantics on a local state (version check, merge or CAS, version + 1). */
  private applyLocal(k: string, req: StateWrite): WriteResult {
    const cur = this.local.get(k) ?? emptyState();
    if (req.if_version !== undefined && req.if_version !== null && req.if_version !== cur.version) {
      return { stored: false, version: cur.version, reason: "conflict", queued: false };
    }
    const cas = req.mode === "cas";
    const next: { [f: string]: JsonValue } = cas ? {} : { ...cur.body };
    for (const [f, v] of Object.entries(req.body)) {
      if (isDelete(v)) {
        if (cas) throw new AgentMemoryError({ status: 400, code: "invalid_member", member: "body", message: "$delete is for merge writes" });
        delete next[f];
      } else next[f] = v;
    }
    this.local.set(k, { body: next, version: cur.version + 1, updated_at: new Date().toISOString() });
    return { stored: true, version: cur.version + 1, reason: null, queued: false };
  }

  /**
   * The notes block for the prompt (`GET /v1/agent-memory/block`), cached per
   * (`max_tokens`, `tags`, `view`, source) (CTX-4): inside the answer's freshness period
   * (`Cache-Control: max-age`, the space's `agent_memory.cache_seconds`) it is served with no
   * request; after it, revalidated with `If-None-Match` (a 304 renews the period). Either
   * way `notModified` is true. With agent memory off the block is empty and `enabled` false.
   * Throws {@link AgentMemoryError} (400, 401, 403) or {@link UnreachableError}.
   */
  async agentMemory(opts: BlockOptions = {}): Promise<AgentMemoryBlock> {
    const q = new URLSearchParams();
    if (opts.max_tokens !== undefined) q.set("max_tokens", String(opts.max_tokens));
    if (opts.tags && opts.tags.length > 0) q.set("tags", opts.tags.join(","));
    if (opts.view) q.set("view", opts.view);
    if (this.opt.agent) q.set("source_id", this.opt.agent);
    const path = "/v1/agent-memory/block" + (q.toString() ? "?" + q.toString() : "");
    const got = await this.cached<Block>("block " + path, (headers) => this.transport().request<Block>("GET", path, { headers }));
    const b = got.value as Block & { etag?: string | null };
    return { ...b, note_ids: [...b.note_ids], etag: b.etag ?? null, notModified: got.cached };
  }

  /**
   * The context call (`POST /v1/context`, CTX-2): the system block, and the context holding
   * the fenced knowledge evidence and the task section, within one token budget. Cached per
   * request (its canonical JSON) as {@link agentMemory} is: no request inside the freshness
   * period, then `If-None-Match`. The key needs scope `context`, or `agent_memory` (plus
   * `knowledge:read` with `knowledge`). Throws {@link AgentMemoryError} (400 `invalid_member`
   * naming the member, 403 `scope_required` or `feature_disabled`, 404
   * `knowledge_base_not_found`) or {@link UnreachableError}.
   */
  async context(req: ContextRequest = {}): Promise<AgentContext> {
    const body: ContextRequest = JSON.parse(JSON.stringify(req)) as ContextRequest;
    if (this.opt.agent && body.source_id === undefined) body.source_id = this.opt.agent;
    const got = await this.cached<ContextAnswer>("context " + canonicalJson(body), (headers) =>
      this.transport().request<ContextAnswer>("POST", "/v1/context", { body, headers }),
    );
    const a = got.value as ContextAnswer;
    return { ...a, tokens: { ...a.tokens }, note_ids: [...a.note_ids], task_note_ids: [...a.task_note_ids], chunk_ids: [...a.chunk_ids], notModified: got.cached };
  }

  /**
   * One cached read (CTX-4): the entry of key while fresh on the client's clock; else send
   * (with `If-None-Match` when an ETag is known), keeping a 200's answer or renewing the
   * period on a 304. Calls of one key that overlap share one request.
   */
  private cached<T>(key: string, send: (headers: Record<string, string>) => Promise<Answer<T>>): Promise<{ value: unknown; cached: boolean }> {
    const entry = this.cache.get(key);
    if (entry && this.now() < entry.freshUntil) return Promise.resolve({ value: entry.value, cached: true });
    const running = this.inflight.get(key);
    if (running) return running;
    const p = (async () => {
      const headers: Record<string, string> = {};
      if (entry?.etag) headers["If-None-Match"] = entry.etag;
      const ans = await send(headers);
      const freshUntil = this.now() + freshSeconds(ans.headers.get("Cache-Control")) * 1000;
      if (ans.status === 304 && entry) {
        entry.freshUntil = freshUntil;
        return { value: entry.value, cached: true };
      }
      const etag = ans.headers.get("ETag");
      const value = { ...(ans.data as object), etag: (ans.data as { etag?: string }).etag ?? etag };
      this.cache.set(key, { value, etag, freshUntil });
      return { value, cached: false };
    })();
    this.inflight.set(key, p);
    const clear = () => this.inflight.delete(key);
    p.then(clear, clear);
    return p;
  }

  /**
   * Writes a note through the personal-data gate (`POST /v1/agent-memory/notes`) with an
   * Idempotency-Key (yours or a new one), so a retry never writes twice. Never throws for an
   * answer of the service: a refusal is `{ data: null, error }` with `error.code`
   * (`personal_data_in_agent_memory` with `error.kinds`, `note_rate_limited` with
   * `error.retryAfterSeconds`, `feature_disabled`, `unreachable`, ...). In replay mode nothing
   * is sent: the error is `replay_mode`.
   */
  async remember(note: RememberNote, opts: RememberOptions = {}): Promise<RememberResult> {
    if (this.opt.replay) {
      return { data: null, error: new AgentMemoryError({ status: 0, code: "replay_mode", message: "replay mode keeps writes local: notes are not written" }) };
    }
    const body: NoteInput = { kind: note.kind, title: note.title, body: note.body };
    if (note.tags && note.tags.length > 0) body.tags = note.tags;
    if (note.visibility) body.visibility = note.visibility;
    if (note.evidence) body.evidence = note.evidence;
    if (note.valid_until) body.valid_until = note.valid_until;
    const source = note.source_id ?? this.opt.agent;
    if (source) body.source_id = source;
    try {
      const ans = await this.transport().request<Note | ProposalAccepted | (Note & { duplicate_of: string })>("POST", "/v1/agent-memory/notes", {
        body,
        headers: { "Idempotency-Key": opts.idempotencyKey ?? newId() },
      });
      const replayed = ans.headers.get("Idempotent-Replayed") === "true";
      if (ans.status === 202) {
        return { data: { status: "proposed", note: null, proposal_id: (ans.data as ProposalAccepted).proposal_id, replayed }, error: null };
      }
      const n = ans.data as Note & { duplicate_of?: string };
      if (n.duplicate_of) {
        const { duplicate_of, ...stored } = n;
        return { data: { status: "duplicate", note: stored, duplicate_of, replayed }, error: null };
      }
      return { data: { status: "stored", note: n, replayed }, error: null };
    } catch (err) {
      if (err instanceof AgentMemoryError) return { data: null, error: err };
      throw err;
    }
  }

  /**
   * Finds notes by words (all must match) and tags (`GET /v1/agent-memory/search`), with the
   * block's visibility. Throws {@link AgentMemoryError} or {@link UnreachableError}.
   */
  async search(query: string, opts: SearchOptions = {}): Promise<SearchResult> {
    const q = new URLSearchParams();
    q.set("q", query);
    if (opts.tags && opts.tags.length > 0) q.set("tags", opts.tags.join(","));
    if (opts.limit !== undefined) q.set("limit", String(opts.limit));
    if (this.opt.agent) q.set("source_id", this.opt.agent);
    const headers: Record<string, string> = {};
    if (opts.run) {
      headers["Agent-Run-Id"] = opts.run.id;
      if (opts.run.budget_tokens !== undefined) headers["Agent-Run-Budget"] = String(opts.run.budget_tokens);
    }
    return (await this.transport().request<SearchResult>("GET", "/v1/agent-memory/search?" + q.toString(), { headers })).data;
  }

  /**
   * Reads a page of a conversation's (or task's) masked turns, oldest first
   * (`POST /v1/turns/read`; the key needs scope `context`, a person key role `integration`):
   * `req.after` is the previous page's `next_after`, `req.limit` 1..500 (default 100). The
   * service leaves a receipt naming the conversation by its keyed hash; an erased
   * conversation answers as one that never existed (no turns). Throws
   * {@link AgentMemoryError}: 400 `invalid_member`, 403 `scope_required` or `role_required`;
   * or {@link UnreachableError}.
   */
  async readTurns(req: TurnsReadRequest): Promise<TurnsPage> {
    const body: TurnsReadRequest = { ...req };
    return (await this.transport().request<TurnsPage>("POST", "/v1/turns/read", { body })).data;
  }

  /**
   * Reads a page of the space's continuous export feed, oldest first (`GET /v1/export/feed`,
   * issue 33; the key needs scope `export`, a person key role `admin`): `req.after` is the
   * previous page's `next_after`. Throws {@link AgentMemoryError}: 400 `invalid_query` (an
   * unknown table), 410 `cursor_expired` (`after` below what retention pruned; resume after
   * the error's `oldest_cursor`), 403 `scope_required` or `role_required`; or
   * {@link UnreachableError}.
   */
  async exportFeed(req: ExportFeedRequest = {}): Promise<FeedPage> {
    const q = new URLSearchParams();
    if (req.tables && req.tables.length > 0) q.set("tables", req.tables.join(","));
    if (req.after) q.set("after", String(req.after));
    if (req.limit !== undefined) q.set("limit", String(req.limit));
    const qs = q.toString();
    const path = "/v1/export/feed" + (qs ? "?" + qs : "");
    return (await this.transport().request<FeedPage>("GET", path)).data;
  }
  /**
   * Asks for agent `sourceId`'s export file (`POST /v1/agent-memory/exports`, issue 33; a
   * person key with role `admin`); the service's workflow builds it (every note version and
   * proposal, sealed, expiring after 7 days). Resolves to the export id: poll
   * {@link agentMemoryExport} until `status` is `completed`, then
   * {@link agentMemoryExportFile}. Throws {@link AgentMemoryError}: 400 `invalid_member`, 403
   * `role_required`; or {@link UnreachableError}.
   */
  async requestAgentMemoryExport(sourceId: string): Promise<string> {
    const r = await this.transport().request<{ export_id: string }>("POST", "/v1/agent-memory/exports", { body: { source_id: sourceId } });
    return r.data.export_id;
  }

  /** The state of export file `id` (`GET /v1/agent-memory/exports/{id}`). Throws {@link AgentMemoryError}: 404 (unknown or expired), 403 `role_required`. */
  async agentMemoryExport(id: string): Promise<AgentMemoryExportStatus> {
    return (await this.transport().request<AgentMemoryExportStatus>("GET", "/v1/agent-memory/exports/" + encodeURIComponent(id))).data;
  }

  /**
   * Downloads completed export file `id` (`GET /v1/agent-memory/exports/{id}/file`; the
   * download leaves a receipt): `{export_id, source_id, space_id, exported_at, expires_at,
   * notes, proposals}`. Throws {@link AgentMemoryError}: 409 `export_not_ready`, 404, 403
   * `role_required`.
   */
  async agentMemoryExportFile(id: string): Promise<{ [member: string]: JsonValue }> {
    return (await this.transport().request<{ [member: string]: JsonValue }>("GET", "/v1/agent-memory/exports/" + encodeURIComponent(id) + "/file")).data;
  }


  /**
   * Ranks the chunks of knowledge bases `kbs` (1-10 base ids of the key's space) for `query`
   * (1-1000 characters) (`POST /v1/knowledge/retrieve`; the key needs scope `knowledge:read`).
   * The service leaves a receipt naming the chunks delivered. Put `context` beside the
   * conversation, never in place of the system prompt. Throws {@link AgentMemoryError}: 400
   * `invalid_member`, 403 `scope_required` or `feature_disabled`, 404
   * `knowledge_base_not_found` (a base of another space looks missing),
   * {@link UnavailableError} 503 `embedder_unavailable` (a base whose `embedder_down` is
   * `fail`); or {@link UnreachableError}.
   */
  async retrieve(query: string, kbs: string[], opts: RetrieveOptions = {}): Promise<Retrieval> {
    const body: RetrieveRequest = { query, kbs: [...kbs] };
    if (opts.top_k !== undefined) body.top_k = opts.top_k;
    if (opts.max_tokens !== undefined) body.max_tokens = opts.max_tokens;
    if (opts.min_score !== undefined) body.min_score = opts.min_score;
    if (opts.filters !== undefined) body.filters = opts.filters;
    if (opts.run !== undefined) body.run = opts.run;
    if (opts.space !== undefined) body.space = opts.space;
    return (await this.transport().request<Retrieval>("POST", "/v1/knowledge/retrieve", { body })).data;
  }

  /**
   * The model tool kit: `search_agent_memory` (with `agentMemory`) and `remember` (with
   * `writeAgentMemory`, and only when the key has `agent_memory:write`), as OpenAI and
   * Anthropic tool definitions, plus a dispatcher. See {@link ToolKit}.
   */
  tools(opts: ToolKitOptions = {}): Promise<ToolKit> {
    return buildToolKit(this, opts, undefined);
  }

  /** The board `type`:`id` (issue 31, docs/boards.md): get, put with ifVersion, lease. */
  board(type: string, id: string): BoardHandle {
    return new BoardHandle(() => this.transport(), type, id);
  }

  /** The board `type`:`id` of another space (its id), read through a bridge both spaces approved (docs/boards.md "Bridges"): get only. */
  bridgedBoard(space: string, type: string, id: string): BridgedBoardHandle {
    return new BridgedBoardHandle(() => this.transport(), space, type, id);
  }

  /** @internal */
  transport(): Transport {
    if (!this.http) throw new AgentMemoryError({ status: 0, code: "replay_mode", message: "replay mode without baseUrl sends nothing" });
    return this.http;
  }
}

/** `Symbol.asyncDispose` where the runtime has it (for `await using`), else a registered symbol. */
const stateAsyncDispose: symbol = (Symbol as unknown as { asyncDispose?: symbol }).asyncDispose ?? Symbol.for("Symbol.asyncDispose");

/**
 * A lease on a working state (issue 31): `put` writes carrying it (409 `lease_lost` once it
 * expired, was released or a newer lease was granted); `renew`, `release`, and release at
 * the end of an `await using` block.
 */
export class StateLease {
  readonly leaseId: string;
  readonly token: number;
  expiresAt: string;

  constructor(
    private readonly state: AgentStateHandle,
    private readonly http: () => Transport,
    private readonly target: { [m: string]: JsonValue },
    l: LeaseInfo,
  ) {
    this.leaseId = l.lease_id;
    this.token = l.token;
    this.expiresAt = l.expires_at;
  }

  /** {@link AgentStateHandle.put} carrying this lease. */
  put(body: { [field: string]: JsonValue | undefined }, opts: PutOptions = {}): Promise<WriteResult> {
    return this.state.put(body, { ...opts, lease: this });
  }

  private proof(extra: { [m: string]: JsonValue } = {}): { [m: string]: JsonValue } {
    const { ttl_seconds: _ttl, ...target } = this.target;
    return { ...target, lease_id: this.leaseId, token: this.token, ...extra };
  }

  /** Extends the lease to `ttlSeconds` from now; 409 `lease_lost` when it is no longer in force. */
  async renew(ttlSeconds = 30): Promise<void> {
    this.expiresAt = (await this.http().request<LeaseInfo>("POST", "/v1/agent-state/lease/renew", { body: this.proof({ ttl_seconds: ttlSeconds }) })).data.expires_at;
  }

  /** Ends the lease; 409 `lease_lost` when it is no longer in force. */
  async release(): Promise<void> {
    await this.http().request<LeaseInfo>("POST", "/v1/agent-state/lease/release", { body: this.proof() });
  }

  /** Releases the lease at the end of an `await using` block; a lease already lost is no error. */
  async [stateAsyncDispose](): Promise<void> {
    try {
      await this.release();
    } catch (e) {
      if ((e as { code?: string }).code !== "lease_lost") throw e;
    }
  }
}

/** The working state of one scope and agent. */
export class AgentStateHandle {
  /** The scope this handle reads and writes. */
  readonly scope: Scope;
  private readonly client: AgentMemoryClient;
  private readonly agent: string | undefined;
  private readonly subjectHandle: string | undefined;

  /** Use {@link AgentMemoryClient.conversation} (or task, object, subject, agentState). */
  constructor(client: AgentMemoryClient, scope: Scope, opts: HandleOptions = {}) {
    this.client = client;
    this.scope = { ...scope };
    this.agent = opts.agent ?? client.opt.agent;
    this.subjectHandle = opts.subject;
  }

  /**
   * Reads the state (`POST /v1/agent-state/read`): version 0 and an empty body before the
   * first write. Never older than what this client wrote or read for this scope and agent
   * (read-your-writes); a state the service keeps answering as gone (version 0) is dropped
   * from the client's memory and returned empty. Resends queued writes first. Throws
   * {@link UnreachableError} or {@link AgentMemoryError}.
   */
  get(): Promise<AgentState> {
    return this.client.read(this.scope, this.agent);
  }

  /**
   * Writes fields (`PUT /v1/agent-state`): `merge_by_key` by default (each field replaces
   * that field; {@link DELETE} removes one), or `{ mode: "cas", ifVersion }` (the whole
   * state, at that version). A refusal by rule or a version conflict is a result with
   * `stored` false and its `reason`, not an error. An unreachable service queues the write
   * (`queued` true), resent later with the same `if_version`. Throws {@link AgentMemoryError}
   * for other refusals (400 `invalid_field_value`, 403, ...).
   */
  put(body: { [field: string]: JsonValue | undefined }, opts: PutOptions = {}): Promise<WriteResult> {
    const clean: { [f: string]: JsonValue } = {};
    for (const [f, v] of Object.entries(body)) if (v !== undefined) clean[f] = v;
    const req: StateWrite = { scope: { ...this.scope }, mode: opts.mode ?? "merge_by_key", body: clean };
    if (this.agent) req.agent = this.agent;
    if (opts.ifVersion !== undefined) req.if_version = opts.ifVersion;
    if (this.subjectHandle) req.subject = this.subjectHandle;
    if (opts.lease) req.lease = { lease_id: opts.lease.leaseId, token: opts.lease.token };
    return this.client.write(req);
  }

  /**
   * Acquires a lease on this state for `ttlSeconds` (1..3600, `POST /v1/agent-state/lease`):
   * one handler at a time, with a fencing token that grows with every grant. While it is
   * held, writes without it are refused 409 `lease_held` (unless the schema's leases are
   * advisory). `await using lease = await state.lease(30)` releases it when the block ends;
   * or `try { ... } finally { await lease.release() }`. Throws 409 `lease_held` while another
   * handler holds one.
   */
  async lease(ttlSeconds = 30): Promise<StateLease> {
    const req: { [m: string]: JsonValue } = { scope: { ...this.scope }, ttl_seconds: ttlSeconds };
    if (this.agent) req.agent = this.agent;
    const l = (await this.client.transport().request<LeaseInfo>("POST", "/v1/agent-state/lease", { body: req })).data;
    return new StateLease(this, () => this.client.transport(), req, l);
  }

  /** The client's queued writes of this scope and agent that conflicted when resent. */
  get conflicts(): Conflict[] {
    return this.client.conflicts.filter(
      (c) => c.scope.kind === this.scope.kind && c.scope.id === this.scope.id && (c.agent ?? "") === (this.agent ?? ""),
    );
  }
}

/** A conversation, task, object or customer: its working state and the agent's notes. */
export class ScopeHandle {
  /** The scope. */
  readonly scope: Scope;
  /** The working state of this scope for the client's agent. */
  readonly agentState: AgentStateHandle;
  private readonly client: AgentMemoryClient;

  /** Use {@link AgentMemoryClient.conversation} (or task, object, subject). */
  constructor(client: AgentMemoryClient, scope: Scope, opts?: HandleOptions) {
    this.client = client;
    this.scope = { ...scope };
    this.agentState = new AgentStateHandle(client, scope, opts);
  }

  /** The notes block (see {@link AgentMemoryClient.agentMemory}). */
  agentMemory(opts?: BlockOptions): Promise<AgentMemoryBlock> {
    return this.client.agentMemory(opts);
  }

  /** The context call (see {@link AgentMemoryClient.context}). */
  context(req?: ContextRequest): Promise<AgentContext> {
    return this.client.context(req);
  }

  /** The client this handle belongs to. */
  get agentMemoryClient(): AgentMemoryClient {
    return this.client;
  }

  /**
   * Writes a note (see {@link AgentMemoryClient.remember}) with this conversation's or task's
   * id as `evidence` (an object or customer scope sends none: a handle is never evidence).
   */
  remember(note: RememberNote, opts?: RememberOptions): Promise<RememberResult> {
    const evidence = this.evidence();
    return this.client.remember(evidence && !note.evidence ? { ...note, evidence } : note, opts);
  }

  /** The tool kit whose `remember` sends this scope's evidence (see {@link AgentMemoryClient.tools}). */
  tools(opts: ToolKitOptions = {}): Promise<ToolKit> {
    return buildToolKit(this.client, opts, this.evidence());
  }

  private evidence(): Evidence | undefined {
    if (this.scope.kind === "conversation") return { conversation_id: this.scope.id };
    if (this.scope.kind === "task") return { task_id: this.scope.id };
    return undefined;
  }
}

function isTransient(err: unknown): boolean {
  return err instanceof UnreachableError || (err instanceof AgentMemoryError && [502, 503, 504].includes(err.status));
}

function isDelete(v: unknown): boolean {
  return !!v && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length === 1 && (v as { $delete?: unknown }).$delete === true;
}

function stateKey(scope: Scope, agent: string | undefined): string {
  return JSON.stringify([scope.kind, scope.id, agent ?? ""]);
}

function emptyState(): AgentState {
  return { body: {}, version: 0, updated_at: null };
}

function cloneState(s: AgentState): AgentState {
  return { body: structuredCloneJson(s.body), version: s.version, updated_at: s.updated_at };
}

function structuredCloneJson<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

/** A random id for an Idempotency-Key. */
export function newId(): string {
  const c = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  if (c?.randomUUID) return c.randomUUID();
  let s = "";
  for (let i = 0; i < 32; i++) s += Math.floor(Math.random() * 16).toString(16);
  return s;
}
