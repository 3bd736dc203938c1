// Memory in a Claude Agent SDK agent. Run `make run`, then in sdk/typescript:
//   npm ci && npm run build && AGENTMEMORY_KEY=<an agent key> node examples/claude-agent-sdk.mjs
// With ANTHROPIC_API_KEY set it runs query() with Claude Code; without it (no model here) it
// calls the in-process MCP server's remember tool itself, as the model would, and prints the options.
import { query } from "@anthropic-ai/claude-agent-sdk";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { AgentMemoryClient } from "@agentmemory/sdk";
import { agentMemoryForClaudeAgent } from "@agentmemory/sdk/claude-agent-sdk";
import { LESSON } from "./scripted-models.mjs";

export async function main({ conversation = "c-example-claude", withModel = !!process.env.ANTHROPIC_API_KEY } = {}) {
  const client = new AgentMemoryClient({ baseUrl: process.env.AGENTMEMORY_URL ?? "http://127.0.0.1:8080", key: process.env.AGENTMEMORY_KEY });
  const prompt = "How do refunds to a gift card work?";
  // The 5 lines: the block in systemPrompt, the tools through the SDK's in-process MCP server.
  const mem = await agentMemoryForClaudeAgent(client.conversation(conversation), { instructions: "You are the shop's assistant.", writeAgentMemory: true, prompt });
  if (withModel) {
    for await (const m of query({ prompt, options: mem.options })) if (m.type === "result") return { text: m.result, system: mem.options.systemPrompt, toolResults: [] };
  }
  const [c, s] = InMemoryTransport.createLinkedPair();
  await mem.server.instance.connect(s);
  const mcp = new Client({ name: "example", version: "1" });
  await mcp.connect(c);
  const res = await mcp.callTool({ name: "remember", arguments: LESSON });
  await mcp.close();
  return { text: "(no model: called remember directly)", system: mem.options.systemPrompt, allowedTools: mem.options.allowedTools, toolResults: [JSON.parse(res.content[0].text)] };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(JSON.stringify(await main(), null, 2));
