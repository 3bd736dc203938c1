// The framework examples (examples/*.mjs) run as written against the real binary, each with
// its framework's scripted model (no network, no provider key): the printed system prompt
// holds the notes block after the instructions, and the model's remember stored a note (read
// back from the server).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { AgentMemoryClient } from "../src/index.js";
import { integrationServer, inOrder, repoRoot, INTEGRATION_SCOPES, type Server } from "./harness.js";

let server: Server;

before(async () => {
  ({ server } = await integrationServer());
});

after(async () => {
  await server?.stop();
});

for (const example of ["ai", "openai-agents", "langchain", "claude-agent-sdk"]) {
  test(`examples/${example}.mjs runs as written and stores the model's note`, async () => {
    const key = await server.mintKey({ kind: "agent", agent: `example-${example}`, vendor: "acme-ai", scopes: INTEGRATION_SCOPES });
    const seeded = await new AgentMemoryClient({ baseUrl: server.url, key }).remember({ kind: "procedure", title: "Refund to a gift card", body: "Ask for the mailing address, then use Record Reason.", tags: ["refund"] });
    assert.equal(seeded.error, null);
    const env: NodeJS.ProcessEnv = { ...process.env, AGENTMEMORY_URL: server.url, AGENTMEMORY_KEY: key };
    delete env.OPENAI_API_KEY;
    delete env.ANTHROPIC_API_KEY;
    const { stdout } = await promisify(execFile)(process.execPath, [`examples/${example}.mjs`], { cwd: join(repoRoot, "sdk", "typescript"), env });
    const out = JSON.parse(stdout);
    inOrder(out.system, ["You are the shop's assistant.", "<agent_notes>", "Refund to a gift card", "</agent_notes>"]);
    const first = typeof out.toolResults[0] === "string" ? JSON.parse(out.toolResults[0]) : out.toolResults[0];
    assert.equal(first.status, "stored", stdout);
    const note = await server.admin("GET", "/v1/agent-memory/notes/" + first.note_id);
    assert.equal(note.json.title, "Refund status API");
    assert.equal(note.json.source_id, `example-${example}`);
  });
}
