// The README's TypeScript quick start: run it after `npm ci && npm run build` in
// sdk/typescript, with AGENTMEMORY_KEY from the walk-through (and AGENTMEMORY_URL when the
// service is not on 127.0.0.1:8080).
import { AgentMemoryClient, DELETE, systemPrompt } from "@agentmemory/sdk";

const client = new AgentMemoryClient({
  baseUrl: process.env.AGENTMEMORY_URL ?? "http://127.0.0.1:8080",
  key: process.env.AGENTMEMORY_KEY,
  agentVersion: "shop-bot/1.4",
});
const conv = client.conversation("c-ts");

// Working memory: written by code, never by a model.
await conv.agentState.put({ step: "sizes", offer: "familia-plus" }); // merge_by_key (the default)
const state = await conv.agentState.get(); // never older than what this client wrote
const written = await conv.agentState.put({ step: "checkout" }, { mode: "cas", ifVersion: state.version });
const late = await conv.agentState.put({ step: "late" }, { mode: "cas", ifVersion: state.version });
await conv.agentState.put({ offer: DELETE }); // remove one field, keep the others
console.log("cas:", written.stored, written.version, "| stale cas:", late.reason, "| now:", JSON.stringify((await conv.agentState.get()).body));

// Agent memory: what the agent learned about its trade, never about a customer.
const { data, error } = await conv.remember({
  kind: "pitfall",
  title: "Scheduling API",
  body: "Dates without a time zone are refused; send the offset the region uses.",
  tags: ["scheduling"],
});
console.log("remember:", error ? error.code : data.status);
const refused = await conv.remember({ kind: "pitfall", title: "Call back", body: "ligar para suporte(11)91234-5678" });
console.log("refused:", refused.error?.code, refused.error?.kinds);

const notes = await conv.agentMemory({ max_tokens: 300, tags: ["scheduling"] });
const again = await conv.agentMemory({ max_tokens: 300, tags: ["scheduling"] }); // revalidated: 304
console.log("block cached:", again.notModified);
console.log(systemPrompt("You are the shop's assistant.", notes, "(the customer context)"));

// The model tool kit (search_agent_memory, and remember with agent_memory:write).
const kit = await conv.tools({ agentMemory: true, writeAgentMemory: true });
console.log("tools:", kit.names.join(", "));
