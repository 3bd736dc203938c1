// The four framework integrations against the real binary, each driven by its framework's
// own scripted or mock model (no network): the model receives the notes block after the
// instructions and before the customer's context (and, with knowledge before_call, the
// evidence after them), and a remember tool call stores a note, read back from the server; a
// refused remember reaches the model as a tool result with its code, and the run goes on.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { generateText, stepCountIs } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { Agent, run, setTracingDisabled, Usage, type Model, type ModelRequest, type ModelResponse } from "@openai/agents";
import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { ChatResult } from "@langchain/core/outputs";
import { convertToOpenAITool } from "@langchain/core/utils/function_calling";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { AgentMemoryClient, rememberTool, searchAgentMemoryTool, searchKnowledgeTool } from "../src/index.js";
import { agentMemoryForAI } from "../src/ai.js";
import { agentMemoryForOpenAIAgents } from "../src/openai-agents.js";
import { agentMemoryForLangChain } from "../src/langchain.js";
import { agentMemoryForClaudeAgent } from "../src/claude-agent-sdk.js";
import { query } from "@anthropic-ai/claude-agent-sdk";
import { integrationServer, inOrder, INTEGRATION_SCOPES, type Server } from "./harness.js";
import { claudeCodeStandIn } from "./claude-code-standin.js";

const INSTRUCTIONS = "You are the shop's assistant.";
const CUSTOMER = "CUSTOMER CONTEXT: Ana, order 1001.";
/** A lesson each framework's model writes (its own words: the same note twice is a duplicate). */
const lesson = (framework: string) => ({ kind: "pitfall", title: `Gift card balance (${framework})`, body: `The balance shows only after the nightly sync; seen with ${framework}.`, tags: ["refund"] });
const WITH_PHONE = { kind: "pitfall", title: "Call back", body: "ligar para suporte(11)91234-5678" };

let server: Server;
let kb: string;
let key: string;

before(async () => {
  setTracingDisabled(true);
  ({ server, kb } = await integrationServer());
  key = await server.mintKey({ kind: "agent", agent: "framework-bot", vendor: "acme-ai", scopes: INTEGRATION_SCOPES });
  const seeded = await new AgentMemoryClient({ baseUrl: server.url, key }).remember({
    kind: "procedure",
    title: "Refund to a gift card",
    body: "Ask for the mailing address, then use Record Reason.",
    tags: ["refund"],
  });
  assert.equal(seeded.error, null);
});

after(async () => {
  await server?.stop();
});

/** A fresh client (its own cache) on a conversation. */
function conversation(id: string) {
  return new AgentMemoryClient({ baseUrl: server.url, key }).conversation(id);
}

/** The note a remember result names, as the server keeps it. */
async function storedNote(result: unknown): Promise<any> {
  const r = typeof result === "string" ? JSON.parse(result) : result;
  assert.equal(r.status, "stored", JSON.stringify(r));
  const got = await server.admin("GET", "/v1/agent-memory/notes/" + r.note_id);
  assert.equal(got.status, 200);
  return got.json;
}

/** Instructions, the block, the customer's context in this order; the block holds the seeded note. */
function assertPlaced(system: string, evidence?: RegExp): void {
  inOrder(system, [INSTRUCTIONS, "<agent_notes>", "Refund to a gift card", "</agent_notes>", CUSTOMER]);
  if (evidence) {
    const m = evidence.exec(system);
    assert.ok(m, "the knowledge evidence is in the system prompt");
    assert.ok(m.index > system.indexOf(CUSTOMER), "the evidence comes after the block and the customer's context");
  }
}

test("Vercel AI SDK: knowledge before_call per step; remember stores a note; a refusal is a tool result", async () => {
  const conv = conversation("c-ai-int");
  const prompt = "How does a refund to my card work?";
  const mem = await agentMemoryForAI(conv, { instructions: INSTRUCTIONS, writeAgentMemory: true, context: CUSTOMER, knowledge: "before_call", knowledgeBases: [kb], task: { object_types: ["refund"] }, prompt });
  assertPlaced(mem.system, /original card/);
  assert.deepEqual(Object.keys(mem.tools).sort(), ["remember", "search_agent_memory"]);
  const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
  const call = (id: string, toolName: string, input: unknown) => ({
    content: [{ type: "tool-call" as const, toolCallId: id, toolName, input: JSON.stringify(input) }],
    finishReason: { unified: "tool-calls" as const, raw: "tool_calls" },
    usage,
    warnings: [],
  });
  const model = new MockLanguageModelV3({
    doGenerate: [
      call("t1", "remember", lesson("ai")),
      call("t2", "remember", WITH_PHONE),
      { content: [{ type: "text" as const, text: "done" }], finishReason: { unified: "stop" as const, raw: "stop" }, usage, warnings: [] },
    ],
  });
  const res = await generateText({ model, system: mem.system, tools: mem.tools, prepareStep: mem.prepareStep, prompt, stopWhen: stepCountIs(5) });
  assert.equal(res.text, "done");
  assert.equal(model.doGenerateCalls.length, 3);
  for (const c of model.doGenerateCalls) {
    const sys = c.prompt.find((m) => m.role === "system");
    assertPlaced(String(sys?.content), /original card/);
  }
  const results = res.steps.flatMap((s) => s.toolResults).map((r: any) => r.output);
  const note = await storedNote(results[0]);
  assert.equal(note.title, lesson("ai").title);
  assert.deepEqual(note.evidence, { conversation_id: "c-ai-int" });
  assert.equal(results[1].error.code, "personal_data_in_agent_memory");
  assert.match(JSON.stringify(model.doGenerateCalls[2]!.prompt), /personal_data_in_agent_memory/);
});

/** An Agents SDK Model that answers from a script and records every request. */
class ScriptedModel implements Model {
  readonly requests: ModelRequest[] = [];
  constructor(private readonly script: ModelResponse["output"][]) {}
  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(JSON.parse(JSON.stringify(request)) as ModelRequest);
    const output = this.script.shift();
    assert.ok(output, "the model was called more often than scripted");
    return { usage: new Usage(), output };
  }
  // eslint-disable-next-line require-yield
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error("not scripted: the test runs without streaming");
  }
}

const fnCall = (callId: string, name: string, args: unknown) => ({ type: "function_call" as const, callId, name, arguments: JSON.stringify(args), status: "completed" as const });

test("OpenAI Agents SDK: dynamic instructions hold the block; tools include search_knowledge; remember stores a note", async () => {
  const conv = conversation("c-oai-int");
  const mem = await agentMemoryForOpenAIAgents(conv, { instructions: INSTRUCTIONS, writeAgentMemory: true, context: CUSTOMER, knowledge: "tool", task: { object_types: ["refund"] } });
  const model = new ScriptedModel([
    [fnCall("call_1", "remember", lesson("openai-agents"))],
    [fnCall("call_2", "remember", WITH_PHONE)],
    [fnCall("call_3", "search_knowledge", { query: "refund to the original card" })],
    [{ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "done" }] }],
  ]);
  const agent = new Agent({ name: "shop", instructions: mem.instructions, tools: mem.tools, model });
  const result = await run(agent, "How does a refund to my card work?", { callModelInputFilter: mem.callModelInputFilter, maxTurns: 6 });
  assert.equal(result.finalOutput, "done");
  assert.equal(model.requests.length, 4);
  for (const r of model.requests) assertPlaced(r.systemInstructions ?? "");
  const offered = Object.fromEntries(model.requests[0]!.tools.map((t: any) => [t.name, t]));
  assert.deepEqual(Object.keys(offered).sort(), ["remember", "search_agent_memory", "search_knowledge"]);
  assert.deepStrictEqual(offered.remember.parameters, rememberTool.inputSchema);
  assert.equal(offered.search_knowledge.description, searchKnowledgeTool.description);

  const outputs = (i: number) => (model.requests[i]!.input as any[]).filter((x) => x.type === "function_call_result");
  const first = outputs(1)[0];
  await storedNote(first.output.text ?? first.output);
  assert.match(JSON.stringify(outputs(2)), /personal_data_in_agent_memory/);
  assert.match(JSON.stringify(outputs(3)), /original card/, "search_knowledge's fenced context reached the model");
});

/** A LangChain chat model that answers from a script and records the messages and tools it got. */
class ScriptedChatModel extends BaseChatModel {
  readonly received: BaseMessage[][] = [];
  boundTools: any[] = [];
  constructor(private readonly script: AIMessage[]) {
    super({});
  }
  _llmType(): string {
    return "scripted";
  }
  override bindTools(tools: any[]): any {
    this.boundTools = tools.map((t) => convertToOpenAITool(t));
    return this;
  }
  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    this.received.push([...messages]);
    const message = this.script.shift();
    assert.ok(message, "the model was called more often than scripted");
    return { generations: [{ text: typeof message.content === "string" ? message.content : "", message }] };
  }
}

test("LangChain.js: the prompt step prepends the system message each call; remember through a tool-calling loop", async () => {
  const conv = conversation("c-lc-int");
  const mem = await agentMemoryForLangChain(conv, { instructions: INSTRUCTIONS, writeAgentMemory: true, context: CUSTOMER, knowledge: "before_call", task: { object_types: ["refund"] } });
  const model = new ScriptedChatModel([
    new AIMessage({ content: "", tool_calls: [{ id: "lc_1", name: "remember", args: lesson("langchain"), type: "tool_call" }] }),
    new AIMessage({ content: "", tool_calls: [{ id: "lc_2", name: "remember", args: WITH_PHONE, type: "tool_call" }] }),
    new AIMessage({ content: "done" }),
  ]);
  const chain = mem.prompt.pipe(model.bindTools(mem.tools));
  const messages: BaseMessage[] = [new HumanMessage("How does a refund to my card work?")];
  const toolOutputs: string[] = [];
  for (let turn = 0; turn < 5; turn++) {
    const reply = (await chain.invoke(messages)) as AIMessage;
    messages.push(reply);
    if (!reply.tool_calls?.length) break;
    for (const call of reply.tool_calls) {
      const out = await mem.toolsByName[call.name]!.invoke(call);
      toolOutputs.push(String(out.content));
      messages.push(out);
    }
  }
  assert.equal(messages.at(-1)!.content, "done");
  assert.equal(model.received.length, 3);
  for (const got of model.received) {
    assert.equal(got[0]!.getType(), "system");
    assert.equal(got.filter((m) => m.getType() === "system").length, 1);
    assertPlaced(String(got[0]!.content), /original card/);
  }
  assert.deepEqual(model.boundTools.map((t) => t.function.name).sort(), ["remember", "search_agent_memory"]);
  assert.deepEqual(model.boundTools.find((t) => t.function.name === "search_agent_memory").function.description, searchAgentMemoryTool.description);
  const note = await storedNote(toolOutputs[0]);
  assert.deepEqual(note.evidence, { conversation_id: "c-lc-int" });
  assert.equal(JSON.parse(toolOutputs[1]!).error.code, "personal_data_in_agent_memory");
  assert.match(String(model.received[2]!.at(-1)!.content), /personal_data_in_agent_memory/, "the model read the refusal");
});

test("Claude Agent SDK: the block in systemPrompt; the in-process MCP server's tools run against the binary", async () => {
  const conv = conversation("c-claude-int");
  const prompt = "How does a refund to my card work?";
  const mem = await agentMemoryForClaudeAgent(conv, { instructions: INSTRUCTIONS, writeAgentMemory: true, context: CUSTOMER, knowledge: "before_call", task: { object_types: ["refund"] }, prompt });
  assertPlaced(mem.options.systemPrompt, /original card/);
  assert.deepEqual(mem.options.allowedTools, ["mcp__agentmemory__search_agent_memory", "mcp__agentmemory__remember"]);
  assert.equal(mem.options.mcpServers.agentmemory, mem.server);
  assert.equal(mem.server.type, "sdk");

  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await mem.server.instance.connect(serverSide);
  const mcp = new Client({ name: "test", version: "1" });
  await mcp.connect(clientSide);
  try {
    const listed = (await mcp.listTools()).tools;
    const byName = Object.fromEntries(listed.map((t) => [t.name, t]));
    assert.deepEqual(Object.keys(byName).sort(), ["remember", "search_agent_memory"]);
    for (const def of [rememberTool, searchAgentMemoryTool]) {
      assert.equal(byName[def.name]!.description, def.description);
      assert.deepEqual(Object.keys(byName[def.name]!.inputSchema.properties ?? {}), Object.keys(def.inputSchema.properties as object));
      assert.deepEqual(byName[def.name]!.inputSchema.required, def.inputSchema.required);
    }
    const stored = (await mcp.callTool({ name: "remember", arguments: lesson("claude") })) as any;
    assert.equal(stored.isError, false);
    const note = await storedNote(stored.content[0].text);
    assert.deepEqual(note.evidence, { conversation_id: "c-claude-int" });
    const refused = (await mcp.callTool({ name: "remember", arguments: WITH_PHONE })) as any;
    assert.equal(refused.isError, true);
    assert.equal(JSON.parse(refused.content[0].text).error.code, "personal_data_in_agent_memory");
    const found = (await mcp.callTool({ name: "search_agent_memory", arguments: { query: "gift card" } })) as any;
    const titles = JSON.parse(found.content[0].text).notes.map((n: any) => n.title);
    for (const t of ["Gift card balance (claude)", "Refund to a gift card"]) assert.ok(titles.includes(t), t);
  } finally {
    await mcp.close();
  }
});

test("Claude Agent SDK: query() with a stand-in for Claude Code gets the block in systemPrompt and runs remember", async () => {
  const conv = conversation("c-claude-query");
  const prompt = "How does a refund to my card work?";
  const mem = await agentMemoryForClaudeAgent(conv, { instructions: INSTRUCTIONS, writeAgentMemory: true, context: CUSTOMER, knowledge: "tool", task: { object_types: ["refund"] }, prompt });
  const standIn = claudeCodeStandIn([
    { server: "agentmemory", name: "remember", arguments: lesson("claude-query") },
    { server: "agentmemory", name: "remember", arguments: WITH_PHONE },
    { server: "agentmemory", name: "search_knowledge", arguments: { query: "refund to the original card" } },
  ]);
  const messages: any[] = [];
  for await (const m of query({ prompt, options: { ...mem.options, spawnClaudeCodeProcess: standIn.spawn, pathToClaudeCodeExecutable: "/bin/true" } })) messages.push(m);
  assert.equal(messages.at(-1).type, "result");
  const init = standIn.record.initialize;
  assert.deepEqual(init.systemPrompt, [mem.options.systemPrompt], "the SDK hands Claude Code the system prompt as given");
  assertPlaced(init.systemPrompt[0]);
  const manifest = init.sdkMcpServerManifests.agentmemory.toolsListResult.tools.map((t: any) => t.name).sort();
  assert.deepEqual(manifest, ["remember", "search_agent_memory", "search_knowledge"]);
  assert.deepEqual(standIn.record.user.content, [{ type: "text", text: prompt }]);
  const [stored, refused, found] = standIn.record.toolResults;
  assert.equal(stored!.result.isError, false);
  await storedNote(stored!.result.content[0].text);
  assert.equal(refused!.result.isError, true);
  assert.equal(JSON.parse(refused!.result.content[0].text).error.code, "personal_data_in_agent_memory");
  assert.match(JSON.parse(found!.result.content[0].text).context, /original card/);
});

test("every integration offers remember only when asked (writeAgentMemory defaults to false, as in Python and Go)", async () => {
  const ai = await agentMemoryForAI(conversation("c-defaults"), { instructions: INSTRUCTIONS, prompt: "hi" });
  assert.deepEqual(Object.keys(ai.tools).sort(), ["search_agent_memory"]);
  const lc = await agentMemoryForLangChain(conversation("c-defaults"), { instructions: INSTRUCTIONS });
  assert.deepEqual(lc.tools.map((t: any) => t.name).sort(), ["search_agent_memory"]);
  const claude = await agentMemoryForClaudeAgent(conversation("c-defaults"), { instructions: INSTRUCTIONS, prompt: "hi" });
  assert.deepEqual(claude.options.allowedTools, ["mcp__agentmemory__search_agent_memory"]);
});
