// Reading the continuous export feed through the TypeScript SDK against the real binary
// (issue 33): exportFeed pages a table with strictly increasing cursors and finds a note just
// written as an upsert with its row, every exchange checked against api/openapi.json; an
// unknown table is AgentMemoryError 400 invalid_query; a key without scope export is refused.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { AgentMemoryClient, AgentMemoryError, type FeedRecord, type FeedTable } from "../src/index.js";
import { Server } from "./harness.js";
import { recordingFetch, checkExchanges, type Exchange } from "./openapi.js";

let server: Server;
let key: string;
let noteId: string;
const exchanges: Exchange[] = [];

before(async () => {
  server = await Server.start();
  await server.createSpace("sdk-ts-feed");
  await server.putDocument("features", { agent_memory: { enabled: true, writes: "agents" } });
  key = await server.mintKey({ kind: "agent", agent: "feeder", vendor: "ts", scopes: ["export", "agent_memory", "agent_memory:write"] });
  const r = await fetch(server.url + "/v1/agent-memory/notes", {
    method: "POST",
    headers: { Authorization: "Bearer " + key, "Content-Type": "application/json" },
    body: JSON.stringify({ kind: "procedure", title: "Feed note", body: "Exported by the feed." }),
  });
  assert.equal(r.status, 201);
  noteId = ((await r.json()) as { id: string }).id;
});

after(async () => {
  await server?.stop();
});

test("exportFeed pages the notes table", async () => {
  const c = new AgentMemoryClient({ baseUrl: server.url, key, fetch: recordingFetch(exchanges) });
  let cursor = 0;
  let found: FeedRecord | undefined;
  for (let i = 0; i < 100; i++) {
    const page = await c.exportFeed({ tables: ["notes"], after: cursor, limit: 2 });
    if (page.records.length === 0) {
      assert.equal(page.next_after, cursor);
      break;
    }
    for (const r of page.records) {
      assert.ok(r.cursor > cursor, `cursor ${r.cursor} after ${cursor}`);
      assert.equal(r.table, "notes");
      if (r.key === noteId) found = r;
      cursor = r.cursor;
    }
    assert.equal(page.next_after, cursor);
  }
  assert.ok(found, "the note is in the feed");
  assert.equal(found.op, "upsert");
  assert.equal(typeof found.row, "object");
  assert.ok(found.changed_at);
  await assert.rejects(c.exportFeed({ tables: ["nope" as FeedTable] }), (e: unknown) => {
    assert.ok(e instanceof AgentMemoryError);
    assert.equal(e.status, 400);
    assert.equal(e.code, "invalid_query");
    return true;
  });
  const other = await server.mintKey({ kind: "agent", agent: "nofeed", vendor: "ts", scopes: ["context"] });
  await assert.rejects(new AgentMemoryClient({ baseUrl: server.url, key: other }).exportFeed(), (e: unknown) => {
    assert.ok(e instanceof AgentMemoryError);
    assert.equal(e.status, 403);
    return true;
  });
  assert.deepEqual(checkExchanges(exchanges), []);
});

test("an admin requests, polls and downloads an agent's export file", async () => {
  const n = await (await fetch(server.url + "/v1/agent-memory/notes/" + noteId, { headers: { Authorization: "Bearer " + key } })).json();
  const source = (n as { source_id: string }).source_id;
  await assert.rejects(new AgentMemoryClient({ baseUrl: server.url, key }).requestAgentMemoryExport(source), (e: unknown) => {
    assert.ok(e instanceof AgentMemoryError);
    assert.equal(e.status, 403);
    return true;
  });
  const admin = new AgentMemoryClient({ baseUrl: server.url, key: server.adminKey, fetch: recordingFetch(exchanges) });
  const id = await admin.requestAgentMemoryExport(source);
  const deadline = Date.now() + 60_000;
  let st = await admin.agentMemoryExport(id);
  while (st.status === "running" && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    st = await admin.agentMemoryExport(id);
  }
  assert.equal(st.status, "completed");
  assert.equal(st.counts?.notes, 1);
  const file = await admin.agentMemoryExportFile(id);
  assert.equal(file.source_id, source);
  assert.ok(JSON.stringify(file).includes(noteId));
  assert.deepEqual(checkExchanges(exchanges), []);
});
