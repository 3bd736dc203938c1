// Reading a conversation's masked turns through the TypeScript SDK against the real binary
// (issue 33): readTurns pages them oldest first without a gap or repeat, masked, every
// exchange checked against api/openapi.json; a bad cursor is AgentMemoryError 400
// invalid_member.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { AgentMemoryClient, AgentMemoryError, type Turn } from "../src/index.js";
import { Server } from "./harness.js";
import { recordingFetch, checkExchanges, type Exchange } from "./openapi.js";

let server: Server;
let key: string;
const exchanges: Exchange[] = [];

before(async () => {
  server = await Server.start();
  await server.createSpace("sdk-ts-turns");
  key = await server.mintKey({ kind: "agent", agent: "reader", vendor: "ts", scopes: ["context"] });
  const turns = [0, 1, 2, 3, 4].map((i) => ({ conversation_id: "ts-conv-1", speaker: "customer", text: `turn ${i}: mail me at bia${i}@example.com` }));
  const r = await fetch(server.url + "/v1/turns", {
    method: "POST",
    headers: { Authorization: "Bearer " + key, "Content-Type": "application/json" },
    body: JSON.stringify({ turns }),
  });
  assert.equal(r.status, 201, await r.text());
});

after(async () => {
  await server?.stop();
});

test("readTurns pages masked turns oldest first", async () => {
  const c = new AgentMemoryClient({ baseUrl: server.url, key, fetch: recordingFetch(exchanges) });
  const got: Turn[] = [];
  let after = "";
  for (let i = 0; i < 10; i++) {
    const page = await c.readTurns({ conversation_id: "ts-conv-1", after, limit: 2 });
    assert.ok(page.turns.length <= 2);
    got.push(...page.turns);
    if (!page.next_after) break;
    after = page.next_after;
  }
  assert.deepEqual(got.map((t) => t.text.split(":")[0]), ["turn 0", "turn 1", "turn 2", "turn 3", "turn 4"]);
  for (const t of got) {
    assert.ok(!t.text.includes("@example.com") && t.text.includes("<email>"), t.text);
    assert.equal(t.conversation_id, "ts-conv-1");
  }
  const whole = await c.readTurns({ conversation_id: "ts-conv-1" });
  assert.deepEqual(whole, { turns: got, next_after: "" });
  assert.deepEqual((await c.readTurns({ conversation_id: "ts-never" })).turns, []);
  await assert.rejects(c.readTurns({ conversation_id: "ts-conv-1", after: "nonsense" }), (e: unknown) => {
    assert.ok(e instanceof AgentMemoryError);
    assert.equal(e.status, 400);
    assert.equal(e.code, "invalid_member");
    return true;
  });
  assert.deepEqual(checkExchanges(exchanges), []);
});
