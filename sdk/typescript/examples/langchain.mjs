// Memory in a LangChain.js agent loop. Run `make run`, then in sdk/typescript:
//   npm ci && npm run build && AGENTMEMORY_KEY=<an agent key> node examples/langchain.mjs
// It uses a scripted chat model (no provider needed); put your own in `model` (e.g. new ChatOpenAI()).
import { HumanMessage } from "@langchain/core/messages";
import { AgentMemoryClient } from "@agentmemory/sdk";
import { agentMemoryForLangChain } from "@agentmemory/sdk/langchain";
import { ScriptedChatModel } from "./scripted-models.mjs";

export async function main({ model = new ScriptedChatModel(), conversation = "c-example-langchain" } = {}) {
  const client = new AgentMemoryClient({ baseUrl: process.env.AGENTMEMORY_URL ?? "http://127.0.0.1:8080", key: process.env.AGENTMEMORY_KEY });
  // The 5 lines: a prompt step that prepends the system message, the tools bound to the model.
  const mem = await agentMemoryForLangChain(client.conversation(conversation), { instructions: "You are the shop's assistant.", writeAgentMemory: true });
  const chain = mem.prompt.pipe(model.bindTools(mem.tools));
  const messages = [new HumanMessage("How do refunds to a gift card work?")];
  const toolResults = [];
  for (let turn = 0; turn < 5; turn++) {
    const reply = await chain.invoke(messages);
    messages.push(reply);
    if (!reply.tool_calls?.length) break;
    for (const call of reply.tool_calls) {
      const out = await mem.toolsByName[call.name].invoke(call);
      toolResults.push(JSON.parse(out.content));
      messages.push(out);
    }
  }
  const [system] = await mem.prompt.invoke(messages);
  return { text: messages.at(-1).content, system: system.content, toolResults };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(JSON.stringify(await main(), null, 2));
