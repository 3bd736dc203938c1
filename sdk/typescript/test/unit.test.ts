// Behaviour one real server cannot show, against a fake fetch: retries with backoff on 5xx
// and 429 honouring Retry-After, the read-your-writes floor against a lagging replica, a
// state answered as gone dropped from the cache, typed errors, bounded answers.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  AgentMemoryClient,
  ConflictError,
  PersonalDataError,
  RateLimitedError,
  UnavailableError,
  UnreachableError,
  AgentMemoryError,
  type FetchLike,
  type LogEvent,
} from "../src/index.js";

type Reply = { status: number; body?: unknown; headers?: Record<string, string> } | "network";

function fake(replies: Reply[], seen: { method: string; url: string; body?: string; headers: Record<string, string>; at: number }[] = []): FetchLike {
  return async (url, init) => {
    const entry: { method: string; url: string; body?: string; headers: Record<string, string>; at: number } = { method: init.method, url, headers: init.headers, at: Date.now() };
    if (init.body !== undefined) entry.body = init.body;
    seen.push(entry);
    const r = replies.shift();
    if (!r) throw new Error("no more replies");
    if (r === "network") throw Object.assign(new TypeError("fetch failed: http://127.0.0.1:9/secret?q=ana"), { cause: { code: "ECONNREFUSED" } });
    const h = new Headers(r.headers ?? {});
    const text = r.body === undefined ? "" : typeof r.body === "string" ? r.body : JSON.stringify(r.body);
    return { status: r.status, headers: h, text: async () => text };
  };
}

const err = (code: string, extra: object = {}) => ({ error: { code, message: "m", ...extra } });

test("5xx and 429 are retried with backoff; Retry-After is honoured", async () => {
  const seen: any[] = [];
  const logs: LogEvent[] = [];
  const c = new AgentMemoryClient({
    baseUrl: "http://x",
    key: "k",
    fetch: fake(
      [
        { status: 500, body: err("internal") },
        { status: 429, body: err("note_rate_limited", { retry_after: 1 }), headers: { "Retry-After": "1" } },
        { status: 200, body: { text: "", enabled: true, note_ids: [], tokens: 0 }, headers: { ETag: '"e1"' } },
      ],
      seen,
    ),
    retry: { retries: 3, baseDelayMs: 5, maxDelayMs: 20 },
    logger: (e) => logs.push(e),
  });
  const b = await c.agentMemory();
  assert.equal(b.etag, '"e1"');
  assert.equal(seen.length, 3);
  assert.ok(seen[2].at - seen[1].at >= 950, "waited the Retry-After second");
  assert.deepEqual(logs.filter((l) => l.event === "retry").map((l) => l.status), [500, 429]);
});

test("retries end: the typed error of the last answer, with retryAfterSeconds", async () => {
  const c = new AgentMemoryClient({
    baseUrl: "http://x",
    key: "k",
    fetch: fake([{ status: 503, body: err("detector_unavailable"), headers: { "Retry-After": "2" } }, { status: 503, body: err("detector_unavailable"), headers: { "Retry-After": "2" } }]),
    retry: { retries: 1, maxRetryAfterMs: 5000 },
  });
  const started = Date.now();
  const { error } = await c.remember({ kind: "pitfall", title: "t", body: "b" });
  assert.ok(error instanceof UnavailableError);
  assert.equal(error.code, "detector_unavailable");
  assert.equal(error.retryAfterSeconds, 2);
  assert.ok(Date.now() - started >= 1900);
  // A Retry-After beyond maxRetryAfterMs fails at once.
  const c2 = new AgentMemoryClient({ baseUrl: "http://x", key: "k", fetch: fake([{ status: 429, body: err("note_rate_limited"), headers: { "Retry-After": "3600" } }]) });
  const r2 = await c2.remember({ kind: "pitfall", title: "t", body: "b" });
  assert.ok(r2.error instanceof RateLimitedError);
  assert.equal(r2.error.retryAfterSeconds, 3600);
});

test("remember retries with the same Idempotency-Key", async () => {
  const seen: any[] = [];
  const note = { id: "n1", version: 1, source_id: "a", kind: "pitfall", title: "t", body: "b", tags: [], visibility: "source", origin: "agent", status: "active", created_at: "2026-01-01T00:00:00Z" };
  const c = new AgentMemoryClient({ baseUrl: "http://x", key: "k", fetch: fake(["network", { status: 201, body: note }], seen), retry: { baseDelayMs: 1 } });
  const { data } = await c.remember({ kind: "pitfall", title: "t", body: "b" });
  assert.equal(data?.status, "stored");
  assert.equal(seen.length, 2);
  assert.ok(seen[0].headers["Idempotency-Key"]);
  assert.equal(seen[0].headers["Idempotency-Key"], seen[1].headers["Idempotency-Key"]);
});

test("typed errors by status, with the service's code; transport errors never carry the URL", async () => {
  const mk = (r: Reply) => new AgentMemoryClient({ baseUrl: "http://x", key: "secret-key", fetch: fake([r]), retry: { retries: 0 } });
  await assert.rejects(mk({ status: 403, body: err("scope_required") }).conversation("c-9").agentState.get(), (e: any) => e instanceof AgentMemoryError && e.code === "scope_required" && e.status === 403);
  const r422 = await mk({ status: 422, body: err("personal_data_in_agent_memory", { kinds: ["email"] }) }).remember({ kind: "pitfall", title: "t", body: "b" });
  assert.ok(r422.error instanceof PersonalDataError);
  assert.deepEqual(r422.error.kinds, ["email"]);
  const conflict = await mk({ status: 412, body: { ...err("agent_state_conflict"), version: 7 } }).conversation("c-9").agentState.put({ a: 1 }, { mode: "cas", ifVersion: 3 });
  assert.deepEqual(conflict, { stored: false, version: 7, reason: "conflict", queued: false });
  await assert.rejects(mk("network").conversation("c-9").agentState.get(), (e: any) => {
    assert.ok(e instanceof UnreachableError);
    assert.equal(e.reason, "ECONNREFUSED");
    assert.ok(!e.message.includes("secret") && !e.message.includes("ana") && !e.message.includes("c-9"));
    return true;
  });
  assert.ok(new ConflictError({ status: 412, code: "agent_state_conflict" }) instanceof AgentMemoryError);
});

test("read-your-writes: a lagging replica's older version is never served", async () => {
  const seen: any[] = [];
  const c = new AgentMemoryClient({
    baseUrl: "http://x",
    key: "k",
    fetch: fake(
      [
        { status: 200, body: { body: { step: "b" }, version: 2, updated_at: null } }, // read v2
        { status: 200, body: { body: { step: "a" }, version: 1, updated_at: null } }, // lagging
        { status: 200, body: { stored: true, version: 3, reason: null } }, // write v3
        { status: 200, body: { body: { step: "b" }, version: 2, updated_at: null } }, // lagging
        { status: 200, body: { body: { step: "c" }, version: 3, updated_at: null } }, // caught up
      ],
      seen,
    ),
  });
  const st = c.conversation("c-1").agentState;
  assert.equal((await st.get()).version, 2);
  const again = await st.get();
  assert.deepEqual(again.body, { step: "b" }, "the state held (v2), not the replica's v1");
  assert.equal(again.version, 2);
  assert.equal((await st.put({ step: "c" })).version, 3);
  const after = await st.get(); // v2 answered, body of v3 unknown: retried until v3
  assert.equal(after.version, 3);
  assert.deepEqual(after.body, { step: "c" });
  assert.equal(seen.length, 5);
});

test("a state the service keeps answering as gone (version 0) is dropped, never served", async () => {
  const replies: Reply[] = [{ status: 200, body: { body: { step: "b" }, version: 2, updated_at: null } }];
  for (let i = 0; i < 6; i++) replies.push({ status: 200, body: { body: {}, version: 0, updated_at: null } });
  replies.push({ status: 200, body: { body: { step: "new" }, version: 1, updated_at: null } });
  const logs: LogEvent[] = [];
  const c = new AgentMemoryClient({ baseUrl: "http://x", key: "k", fetch: fake(replies), logger: (e) => logs.push(e) });
  const st = c.conversation("c-1").agentState;
  await st.get();
  const gone = await st.get();
  assert.deepEqual(gone, { body: {}, version: 0, updated_at: null });
  assert.ok(logs.some((l) => l.event === "dropped_state"));
  const fresh = await st.get(); // a new state at version 1 is served, not refused as older than 2
  assert.deepEqual(fresh.body, { step: "new" });
});

test("a 503 on a write queues it; the answer nesting is bounded", async () => {
  const c = new AgentMemoryClient({ baseUrl: "http://x", key: "k", fetch: fake([{ status: 503, body: err("agent_state_busy") }]), retry: { retries: 0 } });
  const w = await c.conversation("c-1").agentState.put({ a: 1 });
  assert.equal(w.queued, true);
  assert.equal(await c.pending(), 1);
  const deep = "[".repeat(200) + "]".repeat(200);
  const d = new AgentMemoryClient({ baseUrl: "http://x", key: "k", fetch: fake([{ status: 200, body: deep }]) });
  await assert.rejects(d.search("x"), (e: any) => e.code === "json_too_deep");
});

test("retrieve posts the request (filters as given, unset options left out) and answers the chunks with provenance", async () => {
  const seen: any[] = [];
  const answer = {
    mode: "hybrid",
    context: "<knowledge_context>x</knowledge_context>",
    context_tokens: 42,
    chunks: [
      { chunk_id: "kc_1", document_id: "kd_1", kb_id: "kb_1", source_uri: "kb://refunds", title: "Refunds", version: "v2", start_byte: 0, end_byte: 57,
        score: 0.032787, vector_score: 0.81, vector_rank: 1, lexical_rank: null, text: "Refunds go to store credit.", in_context: true },
    ],
  };
  const c = new AgentMemoryClient({ baseUrl: "http://x", key: "k", fetch: fake([{ status: 200, body: answer }, { status: 200, body: answer }, { status: 200, body: answer }], seen) });
  const filters = { source_uri: ["kb://refunds"], tags: { any: ["orders"] } };
  const got = await c.retrieve("refund to card?", ["kb_1"], { top_k: 3, max_tokens: 500, min_score: 0.2, filters });
  await c.retrieve("refund", ["kb_1"]);
  await c.retrieve("refund", ["refunds"], { space: "sp_other" }); // across a bridge: the other space's base by name
  assert.deepEqual(
    seen.map((s) => [s.method, s.url, JSON.parse(s.body)]),
    [
      ["POST", "http://x/v1/knowledge/retrieve", { query: "refund to card?", kbs: ["kb_1"], top_k: 3, max_tokens: 500, min_score: 0.2, filters }],
      ["POST", "http://x/v1/knowledge/retrieve", { query: "refund", kbs: ["kb_1"] }],
      ["POST", "http://x/v1/knowledge/retrieve", { query: "refund", kbs: ["refunds"], space: "sp_other" }],
    ],
  );
  assert.deepEqual(got, answer);
});

test("retrieve throws the service's refusals typed: 403 scope_required, 503 embedder_unavailable", async () => {
  const c = new AgentMemoryClient({
    baseUrl: "http://x",
    key: "k",
    fetch: fake([{ status: 403, body: err("scope_required") }, { status: 503, body: err("embedder_unavailable") }]),
    retry: { retries: 0 },
  });
  await assert.rejects(c.retrieve("q", ["kb_1"]), (e: any) => e instanceof AgentMemoryError && e.status === 403 && e.code === "scope_required");
  await assert.rejects(c.retrieve("q", ["kb_1"]), (e: any) => e instanceof UnavailableError && e.code === "embedder_unavailable");
});

test("cache (CTX-4): overlapping calls of one shape share a request; a failed revalidation keeps nothing half-updated", async () => {
  const seen: any[] = [];
  let t = 0;
  const block = { text: "<agent_notes>n</agent_notes>", enabled: true, note_ids: ["note_1"], tokens: 5 };
  const c = new AgentMemoryClient({
    baseUrl: "http://x",
    key: "k",
    now: () => t,
    retry: { retries: 0 },
    fetch: fake(
      [
        { status: 200, body: block, headers: { ETag: '"e1"', "Cache-Control": "private, max-age=10" } },
        { status: 500, body: err("internal") },
        { status: 304, headers: { ETag: '"e1"', "Cache-Control": "private, max-age=10" } },
      ],
      seen,
    ),
  });
  const [a, b] = await Promise.all([c.agentMemory({ max_tokens: 300 }), c.agentMemory({ max_tokens: 300 })]);
  assert.equal(seen.length, 1, "two overlapping calls, one request");
  assert.equal(a.text, block.text);
  assert.equal(b.text, block.text);
  t = 10_000; // the period is over exactly at max-age
  await assert.rejects(c.agentMemory({ max_tokens: 300 }), (e: any) => e.status === 500);
  const again = await c.agentMemory({ max_tokens: 300 });
  assert.equal(again.notModified, true);
  assert.equal(again.text, block.text);
  assert.deepEqual(seen.slice(1).map((s) => s.headers["If-None-Match"]), ['"e1"', '"e1"'], "the failed call left the entry to revalidate");
  a.note_ids.push("mutated");
  assert.deepEqual((await c.agentMemory({ max_tokens: 300 })).note_ids, ["note_1"], "callers get copies");
  assert.equal(seen.length, 3);
});
