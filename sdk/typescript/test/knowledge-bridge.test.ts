// Issue 31: a retrieval across a bridge against the real binary: client.retrieve(query, kbs,
// { space }) and the kit's search_knowledge with space read another space's base only once
// both spaces approved a bridge listing it and the agent, in a run of the reader's space;
// before it, 404 knowledge_base_not_found, as a base that does not exist.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { AgentMemoryClient, AgentMemoryError } from "../src/index.js";
import { integrationServer, type Server } from "./harness.js";

let server: Server;
let kb: string;

before(async () => {
  ({ server, kb } = await integrationServer());
});

after(async () => {
  await server?.stop();
});

test("a bridged retrieval reads only through a bridge both spaces approved", async () => {
  const source = await server.newSpace("kb-bridge-source");
  await server.call(source.adminKey, "PUT", "/v1/documents/features", { knowledge: { enabled: true } }, 200);
  const base = await server.call(source.adminKey, "POST", "/v1/knowledge", { name: "partner", settings: { embedding_model: "sdk-ts-embed", readers: { space: true } } }, 201);
  const sub = await server.call(source.adminKey, "POST", `/v1/knowledge/${base.id}/documents`,
    { source_uri: "kb://partner/returns", title: "Returns", format: "markdown", text: "# Returns\n\nPartner returns are collected by courier within two days." }, 202);
  for (const deadline = Date.now() + 60_000; ; await new Promise((r) => setTimeout(r, 100))) {
    const got = await server.call(source.adminKey, "GET", `/v1/knowledge/${base.id}/documents/${sub.document_id}`, undefined, 200);
    if (got.status === "ready") break;
    assert.ok(got.status === "pending" && Date.now() < deadline, `document status ${got.status}`);
  }
  const key = await server.mintKey({ kind: "agent", agent: "kb-bridge-reader", vendor: "ts", scopes: ["knowledge:read"] });
  const client = new AgentMemoryClient({ baseUrl: server.url, key });
  const kit = await client.tools({ knowledge: true, knowledgeBases: [kb] });
  const args = { query: "partner returns courier", kbs: ["partner"], space: source.spaceId };
  await assert.rejects(client.retrieve("partner returns courier", ["partner"], { space: source.spaceId }),
    (err: unknown) => err instanceof AgentMemoryError && err.status === 404 && err.code === "knowledge_base_not_found");
  assert.equal(((await kit.call("search_knowledge", args)).result as any).error.code, "knowledge_base_not_found");

  const self = await server.call(server.adminKey, "GET", "/v1/keys/self", undefined, 200);
  await server.openBridge(source, { spaceId: self.space_id, adminKey: server.adminKey }, ["kb-bridge-reader"], [], ["partner"]);
  const got = await client.retrieve("partner returns courier", ["partner"], { space: source.spaceId, run: { id: "ts-bridged", budget_tokens: 5000 } });
  assert.deepEqual(got.chunks.map((c) => c.source_uri), ["kb://partner/returns"]);
  assert.equal(got.run?.id, "ts-bridged");
  assert.equal(got.run?.used_tokens, got.context_tokens);
  const found = await kit.call("search_knowledge", args);
  assert.equal(found.isError, false, JSON.stringify(found.result));
  assert.match((found.result as any).context, /collected by courier/);
  assert.doesNotMatch((found.result as any).context, /original card/, "the kit's own bases never cross");
  const noKbs = await kit.call("search_knowledge", { query: "partner", space: source.spaceId });
  assert.equal((noKbs.result as any).error.code, "invalid_member", "with space, kbs is the model's, never defaulted");
});
