// The model tool kit against the real binary: the schemas equal the MCP server's tools/list,
// remember only with agent_memory:write, the dispatcher in OpenAI and Anthropic shapes, a
// refusal readable by the model; and the Vercel AI SDK integration driven by the mock
// language model `ai/test` ships, calling both tools.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { generateText, stepCountIs } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { AgentMemoryClient, rememberTool, searchAgentMemoryTool, systemPrompt } from "../src/index.js";
import { agentMemoryForAI } from "../src/ai.js";
import { walkthroughServer, ALL_SCOPES, type Server } from "./harness.js";

let server: Server;
let key: string;
let readerKey: string;

before(async () => {
  server = await walkthroughServer();
  key = await server.mintKey({ kind: "agent", agent: "tool-bot", vendor: "acme-ai", scopes: ALL_SCOPES });
  readerKey = await server.mintKey({ kind: "agent", agent: "tool-bot", vendor: "acme-ai", scopes: ["agent_state", "agent_memory"] });
});

after(async () => {
  await server?.stop();
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

test("the tool definitions equal the MCP server's tools/list (names, descriptions, input schemas)", async () => {
  const listed = await mcpTools(key);
  const byName = Object.fromEntries(listed.map((t) => [t.name, t]));
  // get_context (the context call as a tool) is the server's only: no kit carries it.
  assert.deepEqual(Object.keys(byName).sort(), ["get_context", "remember", "search_agent_memory"]);
  for (const def of [searchAgentMemoryTool, rememberTool]) {
    assert.equal(def.description, byName[def.name].description, def.name);
    assert.deepStrictEqual(def.inputSchema, byName[def.name].inputSchema, def.name);
  }
  const kit = await new AgentMemoryClient({ baseUrl: server.url, key }).tools({ agentMemory: true, writeAgentMemory: true });
  assert.deepEqual(kit.names, ["search_agent_memory", "remember"]);
  for (const t of kit.openai) {
    assert.equal(t.type, "function");
    assert.deepStrictEqual(t.function.parameters, byName[t.function.name].inputSchema);
    assert.equal(t.function.description, byName[t.function.name].description);
  }
  for (const t of kit.anthropic) assert.deepStrictEqual(t.input_schema, byName[t.name].inputSchema);
  assert.match(searchAgentMemoryTool.description, /NOTHING about customers/);
  assert.match(rememberTool.description, /NEVER write customer data/);
});

test("remember is offered only to a key with agent_memory:write", async () => {
  assert.deepEqual((await mcpTools(readerKey)).map((t) => t.name).sort(), ["get_context", "search_agent_memory"]);
  const reader = new AgentMemoryClient({ baseUrl: server.url, key: readerKey });
  const kit = await reader.tools({ agentMemory: true, writeAgentMemory: true });
  assert.deepEqual(kit.names, ["search_agent_memory"]);
  const r = await kit.call("remember", { kind: "pitfall", title: "x", body: "y" });
  assert.equal(r.isError, true);
  assert.equal((r.result as any).error.code, "unknown_tool");
  const onlySearch = await new AgentMemoryClient({ baseUrl: server.url, key }).tools({ agentMemory: true });
  assert.deepEqual(onlySearch.names, ["search_agent_memory"]);
});

test("the dispatcher runs OpenAI and Anthropic tool calls; a refusal comes back with its kinds", async () => {
  const conv = new AgentMemoryClient({ baseUrl: server.url, key }).conversation("c-tools");
  const kit = await conv.tools({ agentMemory: true, writeAgentMemory: true });
  const stored = await kit.dispatch({
    id: "call_1",
    type: "function",
    function: { name: "remember", arguments: JSON.stringify({ kind: "tool_note", title: "Invoice export", body: "The invoice export runs hourly; wait for it.", tags: ["invoice"] }) },
  });
  assert.equal(stored.isError, false);
  assert.equal(stored.toolCallId, "call_1");
  assert.equal((stored.result as any).status, "stored");
  assert.ok((stored.result as any).note_id);
  const refused = await kit.dispatch({ type: "tool_use", id: "toolu_1", name: "remember", input: { kind: "pitfall", title: "Call back", body: "ligar para suporte(11)91234-5678" } });
  assert.equal(refused.isError, true);
  assert.deepEqual(JSON.parse(refused.content).error.kinds, ["phone"]);
  assert.equal(JSON.parse(refused.content).error.code, "personal_data_in_agent_memory");
  assert.ok(!refused.content.includes("91234"), "the refusal never repeats the value");
  const found = await kit.dispatch({ name: "search_agent_memory", arguments: { query: "invoice export" } });
  assert.deepEqual((found.result as any).notes.map((n: any) => n.title), ["Invoice export"]);
  // CTX-3: a run travels to the service (as headers) and its figures come back.
  const inRun = await kit.call("search_agent_memory", { query: "invoice export", run: { id: "ts-run", budget_tokens: 1000 } });
  assert.equal(inRun.isError, false, JSON.stringify(inRun.result));
  const run = (inRun.result as any).run;
  assert.equal(run.budget_tokens, 1000);
  assert.ok(run.used_tokens > 0 && run.used_tokens + run.remaining_tokens === 1000, JSON.stringify(run));
  const unknownMember = await kit.call("search_agent_memory", { query: "x", extra: 1 });
  assert.equal((unknownMember.result as any).error.code, "unknown_member");
  const badJson = await kit.call("remember", "{not json");
  assert.equal((badJson.result as any).error.code, "invalid_json");
});

test("systemPrompt places the block after the instructions and before the customer context", () => {
  assert.equal(systemPrompt("INSTR", { text: "<agent_notes>n</agent_notes>" }, "CTX"), "INSTR\n\n<agent_notes>n</agent_notes>\n\nCTX");
  assert.equal(systemPrompt("INSTR", { text: "" }, "CTX"), "INSTR\n\nCTX");
  assert.equal(systemPrompt("INSTR", "notes"), "INSTR\n\nnotes");
});

test("Vercel AI SDK: generateText with the mock model calls remember and search_agent_memory; the block is in system", async () => {
  const client = new AgentMemoryClient({ baseUrl: server.url, key });
  const conv = client.conversation("c-ai");
  const seeded = await conv.remember({ kind: "procedure", title: "Refund to a gift card", body: "Ask for the mailing address, then use Record Reason.", tags: ["refund"] });
  assert.equal(seeded.error, null);
  const { system, tools, context } = await agentMemoryForAI(conv, {
    instructions: "You are the shop's assistant.",
    writeAgentMemory: true,
    context: "CUSTOMER CONTEXT",
    blockMaxTokens: 300,
    task: { object_types: ["refund"] },
  });
  assert.match(context!.system_block, /Refund to a gift card/);
  assert.ok(system.indexOf("You are the shop's assistant.") < system.indexOf("<agent_notes>"));
  assert.ok(system.indexOf("</agent_notes>") < system.indexOf("CUSTOMER CONTEXT"));
  assert.deepEqual(Object.keys(tools).sort(), ["remember", "search_agent_memory"]);

  const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
  const call = (id: string, toolName: string, input: unknown) => ({
    content: [{ type: "tool-call" as const, toolCallId: id, toolName, input: JSON.stringify(input) }],
    finishReason: { unified: "tool-calls" as const, raw: "tool_calls" },
    usage,
    warnings: [],
  });
  const model = new MockLanguageModelV3({
    doGenerate: [
      call("t1", "remember", { kind: "pitfall", title: "Gift card balance", body: "The balance shows only after the nightly sync.", tags: ["refund"] }),
      call("t2", "remember", { kind: "pitfall", title: "Call back", body: "ligar para suporte(11)91234-5678" }),
      call("t3", "search_agent_memory", { query: "gift card", tags: ["refund"] }),
      { content: [{ type: "text" as const, text: "done" }], finishReason: { unified: "stop" as const, raw: "stop" }, usage, warnings: [] },
    ],
  });
  const res = await generateText({ model, system, tools, prompt: "My gift card refund?", stopWhen: stepCountIs(6) });
  assert.equal(res.text, "done");
  assert.equal(res.steps.length, 4);

  const first = model.doGenerateCalls[0]!;
  const sys = first.prompt.find((m) => m.role === "system");
  assert.equal(sys?.content, system, "the block travels in system");
  const offered = (first.tools ?? []).map((t: any) => [t.name, t.inputSchema]);
  assert.deepStrictEqual(Object.fromEntries(offered), { remember: rememberTool.inputSchema, search_agent_memory: searchAgentMemoryTool.inputSchema });

  const results = res.steps.flatMap((s) => s.toolResults).map((r: any) => [r.toolName, r.output]);
  assert.equal((results[0]![1] as any).status, "stored");
  assert.equal((results[1]![1] as any).error.code, "personal_data_in_agent_memory");
  assert.deepEqual((results[1]![1] as any).error.kinds, ["phone"]);
  assert.deepEqual((results[2]![1] as any).notes.map((n: any) => n.title).sort(), ["Gift card balance", "Refund to a gift card"]);

  // The model read the refusal: the third call's prompt carries it as a tool result.
  const third = JSON.stringify(model.doGenerateCalls[2]!.prompt);
  assert.match(third, /personal_data_in_agent_memory/);
  // The note written by the model's remember carries the conversation as evidence.
  const note = await server.admin("GET", "/v1/agent-memory/notes/" + (results[0]![1] as any).note_id);
  assert.deepEqual(note.json.evidence, { conversation_id: "c-ai" });
});

test("agent memory off: no tool is offered and the block is empty with enabled false", async () => {
  await server.putDocument("features", { agent_state: { enabled: true }, agent_memory: { enabled: false } });
  const c = new AgentMemoryClient({ baseUrl: server.url, key });
  const kit = await c.tools({ agentMemory: true, writeAgentMemory: true });
  assert.deepEqual(kit.names, []);
  assert.deepEqual(kit.openai, []);
  const b = await c.agentMemory({ max_tokens: 300 });
  assert.equal(b.enabled, false);
  assert.equal(b.text, "");
});
