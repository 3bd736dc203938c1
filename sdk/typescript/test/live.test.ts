// The SDK against the real binary: working memory (merge, CAS, DELETE, read-your-writes),
// the offline queue across a server restart (resend with the same if_version, a CAS conflict
// in `conflicts`, a queue file), replay mode, the block's 304 revalidation, remember's
// { data, error } with evidence and an Idempotency-Key; every exchange checked against
// api/openapi.json; no key or scope id in logs or error messages.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentMemoryClient, DELETE, UnreachableError, type LogEvent, type ClientOptions } from "../src/index.js";
import { walkthroughServer, ALL_SCOPES, FakeClock, type Server } from "./harness.js";
import { recordingFetch, checkExchanges, openapi, type Exchange } from "./openapi.js";

let server: Server;
let key: string;
const exchanges: Exchange[] = [];
const logs: LogEvent[] = [];
const errorTexts: string[] = [];

function client(extra: Partial<ClientOptions> = {}): AgentMemoryClient {
  return new AgentMemoryClient({
    baseUrl: server.url,
    key,
    agentVersion: "shop-bot/ts-test",
    fetch: recordingFetch(exchanges),
    retry: { retries: 1, baseDelayMs: 10, maxDelayMs: 50 },
    timeoutMs: 5000,
    logger: (e) => logs.push(e),
    ...extra,
  });
}

before(async () => {
  server = await walkthroughServer();
  key = await server.mintKey({ kind: "agent", agent: "shop-bot", vendor: "acme-ai", scopes: ALL_SCOPES });
});

after(async () => {
  await server?.stop();
});

test("merge, read, CAS, conflict as a result, DELETE, not_declared_field", async () => {
  const conv = client().conversation("c-1");
  const empty = await conv.agentState.get();
  assert.deepEqual(empty, { body: {}, version: 0, updated_at: null });
  const w1 = await conv.agentState.put({ step: "sizes", offer: "familia-plus", cart_note: "send to ana@example.com" });
  assert.deepEqual(w1, { stored: true, version: 1, reason: null, queued: false });
  const s1 = await conv.agentState.get();
  assert.equal(s1.version, 1);
  assert.deepEqual(s1.body, { step: "sizes", offer: "familia-plus", cart_note: "send to <email>" });
  const w2 = await conv.agentState.put({ step: "checkout" }, { mode: "cas", ifVersion: s1.version });
  assert.equal(w2.stored, true);
  assert.equal(w2.version, 2);
  const stale = await conv.agentState.put({ step: "late" }, { mode: "cas", ifVersion: 1 });
  assert.deepEqual(stale, { stored: false, version: 2, reason: "conflict", queued: false });
  await conv.agentState.put({ offer: "x", cart_note: "y" });
  const w4 = await conv.agentState.put({ offer: DELETE });
  assert.equal(w4.version, 4);
  assert.deepEqual((await conv.agentState.get()).body, { step: "checkout", cart_note: "y" });
  const refused = await conv.agentState.put({ coupon: "X" });
  assert.equal(refused.stored, false);
  assert.equal(refused.reason, "not_declared_field");
  assert.deepEqual(refused.fields, ["coupon"]);
});

test("a write made while the service is down is resent after its restart with the same if_version", async () => {
  const c = client();
  const conv = c.conversation("c-resend");
  assert.equal((await conv.agentState.put({ step: "one" })).version, 1);
  await server.stop();
  try {
    const queued = await conv.agentState.put({ step: "two" }, { ifVersion: 1 });
    assert.deepEqual(queued, { stored: false, version: 1, reason: null, queued: true });
    assert.equal(await c.pending(), 1);
    await assert.rejects(conv.agentState.get(), (e: unknown) => e instanceof UnreachableError && e.code === "unreachable");
  } finally {
    await server.startProcess();
  }
  const before = exchanges.length;
  const st = await conv.agentState.get();
  assert.equal(st.version, 2);
  assert.deepEqual(st.body, { step: "two" });
  assert.equal(await c.pending(), 0);
  const resent = exchanges.slice(before).find((x) => x.method === "PUT" && x.path === "/v1/agent-state");
  assert.ok(resent, "the queued write was resent");
  assert.equal(JSON.parse(resent.requestBody!).if_version, 1);
  assert.deepEqual(conv.agentState.conflicts, []);
});

test("a queued CAS that conflicts after the restart lands in conflicts, never merged", async () => {
  const a = client();
  const b = client();
  const convA = a.conversation("c-conflict");
  await convA.agentState.put({ step: "one" });
  await server.stop();
  try {
    assert.equal((await convA.agentState.put({ step: "mine" }, { mode: "cas", ifVersion: 1 })).queued, true);
  } finally {
    await server.startProcess();
  }
  assert.equal((await b.conversation("c-conflict").agentState.put({ offer: "theirs" })).version, 2);
  const st = await convA.agentState.get();
  assert.deepEqual(st.body, { step: "one", offer: "theirs" });
  assert.equal(await a.pending(), 0);
  assert.deepEqual(convA.agentState.conflicts, [
    { scope: { kind: "conversation", id: "c-conflict" }, if_version: 1, current_version: 2, body: { step: "mine" } },
  ]);
  assert.deepEqual(a.conversation("c-other").agentState.conflicts, []);
});

test("a queue file keeps the write across a restart of the client's process", async () => {
  const file = join(mkdtempSync(join(tmpdir(), "sdkts-queue-")), "queue.json");
  const c1 = client({ queueFile: file });
  await c1.conversation("c-file").agentState.put({ step: "one" });
  await server.stop();
  try {
    assert.equal((await c1.conversation("c-file").agentState.put({ offer: "kept" }, { ifVersion: 1 })).queued, true);
    assert.ok(existsSync(file));
    assert.deepEqual(JSON.parse(readFileSync(file, "utf8"))[0].request.if_version, 1);
    const c2 = client({ queueFile: file });
    assert.equal(await c2.pending(), 1);
  } finally {
    await server.startProcess();
  }
  const c3 = client({ queueFile: file });
  const st = await c3.conversation("c-file").agentState.get();
  assert.deepEqual(st, { ...st, version: 2, body: { step: "one", offer: "kept" } });
  assert.equal(await c3.pending(), 0);
  assert.deepEqual(JSON.parse(readFileSync(file, "utf8")), []);
});

test("replay mode: states start empty and writes stay local", async () => {
  const r = client({ replay: true });
  const conv = r.conversation("c-replay");
  assert.equal((await conv.agentState.get()).version, 0);
  assert.equal((await conv.agentState.put({ step: "sizes", offer: "x" })).version, 1);
  assert.equal((await conv.agentState.put({ offer: DELETE })).version, 2);
  assert.equal((await conv.agentState.put({ step: "late" }, { mode: "cas", ifVersion: 1 })).reason, "conflict");
  assert.deepEqual((await conv.agentState.get()).body, { step: "sizes" });
  assert.equal((await client().conversation("c-replay").agentState.get()).version, 0, "nothing reached the service");
  const { error } = await conv.remember({ kind: "pitfall", title: "t", body: "b" });
  assert.equal(error?.code, "replay_mode");
});

test("remember: { data, error }, the conversation as evidence, its own Idempotency-Key; the block cached, then revalidated with 304", async () => {
  const clock = new FakeClock();
  const c = client({ now: clock.now });
  const conv = c.conversation("c-notes");
  const before = exchanges.length;
  const { data, error } = await conv.remember({
    kind: "procedure",
    title: "Refund to a gift card",
    body: "Ask for the mailing address, then use Record Reason.",
    tags: ["refund"],
  });
  assert.equal(error, null);
  assert.equal(data?.status, "stored");
  assert.deepEqual(data?.note?.evidence, { conversation_id: "c-notes" });
  const sent = exchanges.slice(before).find((x) => x.path === "/v1/agent-memory/notes")!;
  assert.deepEqual(JSON.parse(sent.requestBody!).evidence, { conversation_id: "c-notes" });

  const refused = await conv.remember({ kind: "pitfall", title: "Call back", body: "ligar para suporte(11)91234-5678" });
  assert.equal(refused.data, null);
  assert.equal(refused.error?.code, "personal_data_in_agent_memory");
  assert.deepEqual(refused.error?.kinds, ["phone"]);
  assert.equal(refused.error?.status, 422);
  errorTexts.push(refused.error!.message, String(refused.error));

  const again = await c.remember({ kind: "tool_note", title: "Stock API", body: "Pages at 50 items." }, { idempotencyKey: "ts-idem-1" });
  const replay = await c.remember({ kind: "tool_note", title: "Stock API", body: "Pages at 50 items." }, { idempotencyKey: "ts-idem-1" });
  assert.equal(again.data?.replayed, false);
  assert.equal(replay.data?.replayed, true);
  assert.equal(replay.data?.note?.id, again.data?.note?.id);
  const dup = await c.remember({ kind: "tool_note", title: "Stock API", body: "Pages at 50 items." });
  assert.equal(dup.data?.status, "duplicate");
  assert.equal(dup.data?.duplicate_of, again.data?.note?.id);

  const b1 = await conv.agentMemory({ max_tokens: 300, tags: ["refund"] });
  assert.equal(b1.enabled, true);
  assert.equal(b1.notModified, false);
  assert.match(b1.text, /Refund to a gift card/);
  assert.ok(b1.etag);
  const n = exchanges.length;
  const fresh = await conv.agentMemory({ max_tokens: 300, tags: ["refund"] });
  assert.equal(fresh.notModified, true);
  assert.equal(exchanges.length, n, "inside the freshness period (max-age) nothing is sent");
  clock.advance(61);
  const b2 = await conv.agentMemory({ max_tokens: 300, tags: ["refund"] });
  assert.equal(b2.notModified, true);
  assert.equal(b2.text, b1.text);
  assert.equal(b2.etag, b1.etag);
  const last = exchanges.slice(n);
  assert.equal(last.length, 1);
  assert.equal(last[0]!.status, 304, "the second read was revalidated with If-None-Match and answered 304");
  const b3 = await conv.agentMemory({ max_tokens: 200, tags: ["refund"] });
  assert.equal(b3.notModified, false, "another max_tokens is another cache entry");

  const found = await c.search("gift card", { tags: ["refund"] });
  assert.deepEqual(found.notes.map((x) => x.title), ["Refund to a gift card"]);
});

test("typed errors carry the service's code; a bad key is 401", async () => {
  const bad = new AgentMemoryClient({ baseUrl: server.url, key: "am_not_a_key_secret_value", fetch: recordingFetch(exchanges), logger: (e) => logs.push(e) });
  await assert.rejects(bad.conversation("c-secret-scope-id").agentState.get(), (e: any) => {
    errorTexts.push(e.message, String(e), JSON.stringify(e));
    return e.status === 401 && typeof e.code === "string" && e.code.length > 0;
  });
  const down = new AgentMemoryClient({ baseUrl: "http://127.0.0.1:1", key: "am_not_a_key_secret_value", retry: { retries: 0 }, logger: (e) => logs.push(e) });
  await assert.rejects(down.conversation("c-secret-scope-id").agentState.get(), (e: any) => {
    errorTexts.push(e.message, String(e), JSON.stringify(e));
    return e instanceof UnreachableError;
  });
});

test("every exchange matches api/openapi.json (the document GET /openapi.json serves)", async () => {
  const served = await (await fetch(server.url + "/openapi.json")).json();
  assert.deepStrictEqual(served, openapi, "the binary serves api/openapi.json");
  assert.ok(exchanges.length > 20);
  const statuses = new Set(exchanges.map((x) => x.status));
  for (const s of [200, 201, 304, 401, 412, 422]) assert.ok(statuses.has(s), `saw a ${s}`);
  assert.deepEqual(checkExchanges(exchanges), []);
});

test("no key, scope id or personal data in logs or error messages", () => {
  assert.ok(logs.length > 10);
  const text = JSON.stringify(logs) + "\n" + errorTexts.join("\n");
  for (const secret of [key, "am_not_a_key_secret_value", "c-secret-scope-id", "c-resend", "c-conflict", "ana@example.com", "91234-5678", "refund"]) {
    assert.ok(!text.includes(secret), `leaked ${secret.slice(0, 6)}...`);
  }
});

test("the README's quick start (examples/quickstart.mjs) runs as written", async () => {
  const { execFile } = await import("node:child_process");
  const { promisify } = await import("node:util");
  const { repoRoot } = await import("./harness.js");
  const { stdout } = await promisify(execFile)(process.execPath, ["examples/quickstart.mjs"], {
    cwd: join(repoRoot, "sdk", "typescript"),
    env: { ...process.env, AGENTMEMORY_URL: server.url, AGENTMEMORY_KEY: key },
  });
  assert.match(stdout, /cas: true 2 \| stale cas: conflict \| now: \{"step":"checkout"\}/);
  assert.match(stdout, /remember: stored/);
  assert.match(stdout, /refused: personal_data_in_agent_memory \[ 'phone' \]/);
  assert.match(stdout, /block cached: true/);
  assert.match(stdout, /You are the shop's assistant\.\n\n<agent_notes>[\s\S]*Scheduling API[\s\S]*<\/agent_notes>\n\n\(the customer context\)/);
  assert.match(stdout, /tools: search_agent_memory, remember/);
});
