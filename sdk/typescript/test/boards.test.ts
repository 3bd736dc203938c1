// Boards through the TypeScript SDK against the real binary (issue 31): a stale put merged by
// the fields' rules names each field's rule; a lease held with `await using` semantics keeps
// the other handler out and is released when disposed; a released lease's renewal is lease_lost.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { AgentMemoryClient, AgentMemoryError } from "../src/index.js";
import { Server } from "./harness.js";

let server: Server;

before(async () => {
  server = await Server.start();
  await server.createSpace("boards");
  await server.putDocument("object-types", {
    types: [{ type: "findings", ownership: "shared", fields: { hits: { type: "integer", conflict: { rule: "sum" } }, tags: { type: "array", conflict: { rule: "union" } } } }],
  });
  const g = await server.admin("POST", "/v1/boards/findings/grants", { vendor: "ts", access: "read_write" });
  assert.equal(g.status, 201);
});

after(async () => {
  await server?.stop();
});

test("a stale put is merged by rule and a lease fences the other handler", async () => {
  const client = async (agent: string) => new AgentMemoryClient({ baseUrl: server.url, key: await server.mintKey({ kind: "agent", agent, vendor: "ts", scopes: [] }) });
  const a = (await client("a")).board("findings", "inc-1");
  const b = (await client("b")).board("findings", "inc-1");
  assert.equal((await a.put({ hits: 1, tags: ["a"] }, 0)).stored, true);
  const res = await b.put({ hits: 1, tags: ["b"] }, 0);
  assert.deepEqual(res.settled, [{ field: "hits", rule: "sum" }, { field: "tags", rule: "union" }]);
  const got = await a.get();
  assert.deepEqual([got.body, got.version], [{ hits: 2, tags: ["a", "b"] }, 2]);

  const lease = await a.lease(30);
  try {
    await assert.rejects(b.put({ hits: 3 }, 2), (e: unknown) => e instanceof AgentMemoryError && e.code === "lease_held");
    assert.equal((await lease.put({ hits: 3 }, 2)).stored, true);
  } finally {
    await (lease as unknown as { [k: symbol]: () => Promise<void> })[(Symbol as any).asyncDispose ?? Symbol.for("Symbol.asyncDispose")]();
  }
  await assert.rejects(lease.renew(30), (e: unknown) => e instanceof AgentMemoryError && e.code === "lease_lost");
  assert.equal((await b.put({ hits: 4 }, 3)).stored, true);
});

test("a working-state lease fences the other run and is released by await using semantics", async () => {
  await server.putDocument("features", { agent_state: { enabled: true } });
  await server.putDocument("object-types", {
    types: [
      { type: "findings", ownership: "shared", fields: { hits: { type: "integer", conflict: { rule: "sum" } }, tags: { type: "array", conflict: { rule: "union" } } } },
      { type: "planner", ownership: "agent", fields: { plan: { type: "string" } }, agent_state: { scope: "agent" } },
    ],
  });
  const run = async () => new AgentMemoryClient({ baseUrl: server.url, key: await server.mintKey({ kind: "agent", agent: "planner", vendor: "ts", scopes: ["agent_state"] }) });
  const one = (await run()).agentState({ kind: "agent", id: "planner-1" });
  const two = (await run()).agentState({ kind: "agent", id: "planner-1" });
  const lease = await one.lease(30);
  assert.equal(lease.token, 1);
  try {
    await assert.rejects(two.put({ plan: "two" }), (e: unknown) => e instanceof AgentMemoryError && e.code === "lease_held");
    assert.equal((await lease.put({ plan: "one" })).stored, true);
  } finally {
    await (lease as unknown as { [k: symbol]: () => Promise<void> })[(Symbol as any).asyncDispose ?? Symbol.for("Symbol.asyncDispose")]();
  }
  await assert.rejects(lease.put({ plan: "late" }), (e: unknown) => e instanceof AgentMemoryError && e.code === "lease_lost");
  assert.equal((await two.put({ plan: "two" })).stored, true);
  assert.equal((await two.lease(30)).token, 2);
});

test("a bridged board reads only through a bridge both spaces approved", async () => {
  const source = await server.newSpace("bridge-source");
  await server.call(source.adminKey, "PUT", "/v1/documents/object-types", { types: [{ type: "findings", ownership: "shared", fields: { title: { type: "string" } } }] }, 200);
  await server.call(source.adminKey, "POST", "/v1/boards/findings/grants", { agent: "w", access: "read_write" }, 201);
  const writer = (await server.call(source.adminKey, "POST", "/v1/keys", { kind: "agent", agent: "w", vendor: "ts", scopes: [] }, 201)).key as string;
  await new AgentMemoryClient({ baseUrl: server.url, key: writer }).board("findings", "inc-7").put({ title: "disk full" }, 0);
  const reader = new AgentMemoryClient({ baseUrl: server.url, key: await server.mintKey({ kind: "agent", agent: "reader", vendor: "ts", scopes: [] }) });
  const board = reader.bridgedBoard(source.spaceId, "findings", "inc-7");
  await assert.rejects(board.get(), (e: unknown) => e instanceof AgentMemoryError && e.status === 404 && e.code === "board_not_found");
  await server.openBridge(source, { spaceId: server.spaceId, adminKey: server.adminKey }, ["reader"], [{ type: "findings", ids: "inc-*" }]);
  const got = await board.get();
  assert.deepEqual([got.body, got.version, got.space], [{ title: "disk full" }, 1, source.spaceId]);
});
