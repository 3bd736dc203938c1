// Memory in a Vercel AI SDK agent. Run `make run`, then in sdk/typescript:
//   npm ci && npm run build && AGENTMEMORY_KEY=<an agent key> node examples/ai.mjs
// It uses a scripted model (no provider needed); put your own in `model` (e.g. openai("gpt-4.1")).
import { generateText, stepCountIs } from "ai";
import { AgentMemoryClient } from "@agentmemory/sdk";
import { agentMemoryForAI } from "@agentmemory/sdk/ai";
import { scriptedAIModel } from "./scripted-models.mjs";

export async function main({ model = scriptedAIModel(), conversation = "c-example-ai" } = {}) {
  const client = new AgentMemoryClient({ baseUrl: process.env.AGENTMEMORY_URL ?? "http://127.0.0.1:8080", key: process.env.AGENTMEMORY_KEY });
  const prompt = "How do refunds to a gift card work?";
  // The 5 lines: the block after the instructions, remember/search as tools.
  const mem = await agentMemoryForAI(client.conversation(conversation), { instructions: "You are the shop's assistant.", writeAgentMemory: true, prompt });
  const res = await generateText({ model, system: mem.system, tools: mem.tools, prepareStep: mem.prepareStep, prompt, stopWhen: stepCountIs(5) });
  return { text: res.text, system: mem.system, toolResults: res.steps.flatMap((s) => s.toolResults.map((r) => r.output)) };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(JSON.stringify(await main(), null, 2));
