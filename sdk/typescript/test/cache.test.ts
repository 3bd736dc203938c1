// The block and context caches (CTX-4) against the real binary, counted at a reverse proxy in
// front of it: inside the answer's max-age no request at all; after it (an injected clock, no
// sleeping) one conditional request answered 304, which renews the period; a note written
// meanwhile shows up after the period; `no-cache` revalidates every call. And the tool kit's
// search_knowledge, equal to the MCP server's and dispatched to POST /v1/knowledge/retrieve.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { AgentMemoryClient, rememberTool, searchAgentMemoryTool, searchKnowledgeTool, freshSeconds } from "../src/index.js";
import { countingProxy, integrationServer, FakeClock, INTEGRATION_SCOPES, type CountingProxy, type Server } from "./harness.js";

let server: Server;
let kb: string;
let key: string;
let proxy: CountingProxy;

before(async () => {
  ({ server, kb } = await integrationServer());
  key = await server.mintKey({ kind: "agent", agent: "cache-bot", vendor: "acme-ai", scopes: INTEGRATION_SCOPES });
  proxy = await countingProxy(server.url);
});

after(async () => {
  await proxy?.close();
  await server?.stop();
});

function client(clock: FakeClock): AgentMemoryClient {
  return new AgentMemoryClient({ baseUrl: proxy.url, key, now: clock.now });
}

test("freshSeconds reads max-age; no-cache, no-store and a missing header mean revalidate every call", () => {
  assert.equal(freshSeconds("private, max-age=60"), 60);
  assert.equal(freshSeconds("private, no-cache"), 0);
  assert.equal(freshSeconds("no-store, max-age=60"), 0);
  assert.equal(freshSeconds(null), 0);
  assert.equal(freshSeconds("private"), 0);
});

test("block: no request inside max-age, then one 304 that renews the period; a new note shows after the period", async () => {
  const clock = new FakeClock();
  const c = client(clock);
  assert.equal((await c.remember({ kind: "procedure", title: "Refund to a gift card", body: "Ask for the mailing address, then use Record Reason.", tags: ["refund"] })).error, null);
  const route = "/v1/agent-memory/block";
  const b1 = await c.agentMemory({ max_tokens: 300, tags: ["refund"] });
  assert.equal(b1.notModified, false);
  assert.match(b1.text, /Refund to a gift card/);
  assert.equal(proxy.of(route).length, 1);
  for (let i = 0; i < 5; i++) {
    const b = await c.agentMemory({ max_tokens: 300, tags: ["refund"] });
    assert.equal(b.text, b1.text);
    assert.equal(b.notModified, true);
  }
  assert.equal(proxy.of(route).length, 1, "five calls inside the period sent nothing");

  clock.advance(61); // the space's default cache_seconds is 60
  const b2 = await c.agentMemory({ max_tokens: 300, tags: ["refund"] });
  assert.equal(b2.notModified, true);
  assert.equal(b2.text, b1.text);
  const after304 = proxy.of(route);
  assert.equal(after304.length, 2);
  assert.deepEqual([after304[1]!.status, after304[1]!.ifNoneMatch], [304, b1.etag]);
  clock.advance(30);
  await c.agentMemory({ max_tokens: 300, tags: ["refund"] });
  assert.equal(proxy.of(route).length, 2, "the 304 renewed the period");

  assert.equal((await c.remember({ kind: "pitfall", title: "Gift card balance", body: "The balance shows only after the nightly sync.", tags: ["refund"] })).error, null);
  const stale = await c.agentMemory({ max_tokens: 300, tags: ["refund"] });
  assert.doesNotMatch(stale.text, /Gift card balance/, "inside the period the cached block is served");
  assert.equal(proxy.of(route).length, 2);
  clock.advance(31);
  const b3 = await c.agentMemory({ max_tokens: 300, tags: ["refund"] });
  assert.equal(b3.notModified, false);
  assert.match(b3.text, /Gift card balance/);
  assert.notEqual(b3.etag, b1.etag);
  assert.deepEqual(proxy.of(route).slice(2).map((e) => e.status), [200]);

  const other = await c.agentMemory({ max_tokens: 200, tags: ["refund"] });
  assert.equal(other.notModified, false, "another call shape is another cache entry");
  assert.equal(proxy.of(route).length, 4);
});

test("context: cached per request (members in any order), 304 after the period, knowledge included", async () => {
  const clock = new FakeClock();
  const c = client(clock);
  const route = "/v1/context";
  const before = proxy.of(route).length;
  const req = { max_tokens: 1500, task: { id: "t-1", object_types: ["refund"] }, knowledge: { kbs: [kb], query: "refund to my card" } };
  const a1 = await c.context(req);
  assert.equal(a1.notModified, false);
  assert.match(a1.system_block, /Refund to a gift card/);
  assert.match(a1.context, /original card/);
  assert.ok(a1.chunk_ids.length > 0);
  const reordered = { knowledge: { query: "refund to my card", kbs: [kb] }, task: { object_types: ["refund"], id: "t-1" }, max_tokens: 1500 };
  for (let i = 0; i < 3; i++) assert.deepEqual({ ...(await c.context(reordered)), notModified: false }, a1);
  assert.equal(proxy.of(route).length - before, 1, "one request for four calls inside the period");
  clock.advance(61);
  const a2 = await c.context(req);
  assert.equal(a2.notModified, true);
  assert.equal(a2.context, a1.context);
  const sent = proxy.of(route).slice(before);
  assert.deepEqual(sent.map((e) => [e.status, e.ifNoneMatch]), [[200, null], [304, a1.etag]]);
  await c.context({ ...req, max_tokens: 1400 });
  assert.equal(proxy.of(route).length - before, 3, "another request is another cache entry");
});

test("no-cache (cache_seconds 0): every call revalidates with If-None-Match", async () => {
  await server.putDocument("features", { agent_state: { enabled: true }, agent_memory: { enabled: true, writes: "agents", max_notes_per_source: 500, cache_seconds: 0 }, knowledge: { enabled: true } });
  try {
    const c = client(new FakeClock());
    const route = "/v1/agent-memory/block";
    const before = proxy.of(route).length;
    const b1 = await c.agentMemory({ max_tokens: 250 });
    await c.agentMemory({ max_tokens: 250 });
    await c.agentMemory({ max_tokens: 250 });
    assert.deepEqual(proxy.of(route).slice(before).map((e) => [e.status, e.ifNoneMatch]), [[200, null], [304, b1.etag], [304, b1.etag]]);
  } finally {
    await server.putDocument("features", { agent_state: { enabled: true }, agent_memory: { enabled: true, writes: "agents", max_notes_per_source: 500 }, knowledge: { enabled: true } });
  }
});

async function mcpTools(k: string): Promise<any[]> {
  const r = await fetch(server.url + "/mcp", {
    method: "POST",
    headers: { Authorization: "Bearer " + k, "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
  });
  assert.equal(r.status, 200);
  const text = await r.text();
  const data = text.split("\n").filter((l) => l.startsWith("data:")).pop() ?? text;
  return JSON.parse(data.replace(/^data:/, "")).result.tools;
}

test("the three tool definitions equal the MCP server's tools/list (names, descriptions, input schemas)", async () => {
  const listed = await mcpTools(key);
  const byName = Object.fromEntries(listed.map((t) => [t.name, t]));
  // get_context (the context call as a tool) is the server's only: no kit carries it.
  assert.deepEqual(Object.keys(byName).sort(), ["get_context", "remember", "search_agent_memory", "search_knowledge"]);
  for (const def of [searchAgentMemoryTool, rememberTool, searchKnowledgeTool]) {
    assert.equal(def.description, byName[def.name].description, def.name);
    assert.deepStrictEqual(def.inputSchema, byName[def.name].inputSchema, def.name);
  }
  const kit = await new AgentMemoryClient({ baseUrl: server.url, key }).tools({ agentMemory: true, writeAgentMemory: true, knowledge: true });
  assert.deepEqual(kit.names, ["search_agent_memory", "remember", "search_knowledge"]);
  for (const t of kit.anthropic) assert.deepStrictEqual(t.input_schema, byName[t.name].inputSchema);
});

test("search_knowledge: offered where the key may read knowledge; dispatch retrieves the fenced context", async () => {
  const noKnowledge = await server.mintKey({ kind: "agent", agent: "cache-bot", vendor: "acme-ai", scopes: ["agent_memory"] });
  const without = await new AgentMemoryClient({ baseUrl: server.url, key: noKnowledge }).tools({ agentMemory: true, knowledge: true });
  assert.deepEqual(without.names, ["search_agent_memory"]);

  const kit = await new AgentMemoryClient({ baseUrl: server.url, key }).tools({ knowledge: true });
  assert.deepEqual(kit.names, ["search_knowledge"]);
  const byDefault = await kit.dispatch({ id: "call_k", type: "function", function: { name: "search_knowledge", arguments: JSON.stringify({ query: "refund to the original card" }) } });
  assert.equal(byDefault.isError, false, byDefault.content);
  assert.equal(byDefault.toolCallId, "call_k");
  const r = byDefault.result as any;
  assert.match(r.context, /original card/);
  assert.match(r.context, /<evidence/);
  assert.ok(r.chunks.length > 0 && r.chunks.every((ch: any) => ch.kb_id === kb));
  const named = await kit.call("search_knowledge", { query: "express delivery", kbs: [kb], top_k: 1 });
  assert.equal((named.result as any).chunks.length, 1);
  assert.match((named.result as any).context, /next day/);
  const missing = await kit.call("search_knowledge", { query: "x", kbs: ["kb_missing"] });
  assert.equal(missing.isError, true);
  assert.equal((missing.result as any).error.code, "knowledge_base_not_found");
  const badType = await kit.call("search_knowledge", { query: "x", filters: "title" });
  assert.equal((badType.result as any).error.code, "invalid_member");
});
