// Memory in an OpenAI Agents SDK agent. Run `make run`, then in sdk/typescript:
//   npm ci && npm run build && AGENTMEMORY_KEY=<an agent key> node examples/openai-agents.mjs
// It uses a scripted model (no provider needed); with OPENAI_API_KEY set, pass model: "gpt-4.1".
import { Agent, run, setTracingDisabled } from "@openai/agents";
import { AgentMemoryClient } from "@agentmemory/sdk";
import { agentMemoryForOpenAIAgents } from "@agentmemory/sdk/openai-agents";
import { scriptedAgentsModel } from "./scripted-models.mjs";

export async function main({ model = scriptedAgentsModel(), conversation = "c-example-agents" } = {}) {
  if (!process.env.OPENAI_API_KEY) setTracingDisabled(true); // no traces sent without an account
  const client = new AgentMemoryClient({ baseUrl: process.env.AGENTMEMORY_URL ?? "http://127.0.0.1:8080", key: process.env.AGENTMEMORY_KEY });
  // The 5 lines: dynamic instructions holding the block, the tools, the per-call filter.
  const mem = await agentMemoryForOpenAIAgents(client.conversation(conversation), { instructions: "You are the shop's assistant.", writeAgentMemory: true });
  const agent = new Agent({ name: "shop", instructions: mem.instructions, tools: mem.tools, model });
  const result = await run(agent, "How do refunds to a gift card work?", { callModelInputFilter: mem.callModelInputFilter });
  const toolResults = result.newItems.filter((i) => i.type === "tool_call_output_item").map((i) => i.output);
  return { text: result.finalOutput, system: await mem.instructions(), toolResults };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(JSON.stringify(await main(), null, 2));
