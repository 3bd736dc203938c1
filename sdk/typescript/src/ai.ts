/**
 * The Vercel AI SDK integration (`ai` on npm, a peer dependency: the core never imports it).
 *
 * ```ts
 * import { generateText } from "ai";
 * import { agentMemoryForAI } from "@agentmemory/sdk/ai";
 * const { system, tools } = await agentMemoryForAI(client.conversation("c-1"), {
 *   instructions: AGENT_INSTRUCTIONS, context: customerContext, block: { max_tokens: 300, tags: ["refund"] },
 * });
 * const res = await generateText({ model, system, tools, prompt, stopWhen: stepCountIs(3) });
 * ```
 *
 * @module
 */
import { jsonSchema, tool, type Tool } from "ai";
import type { AgentMemoryClient, BlockOptions, ScopeHandle, AgentMemoryBlock } from "./client.js";
import { systemPrompt, type ToolKit, type ToolKitOptions } from "./tools.js";

/**
 * The kit's tools as AI SDK tools, keyed by name: the same JSON Schema arguments as the MCP
 * server, and an `execute` that runs the call through the SDK and returns the tool's answer
 * object (a refusal is `{ error: { code, message, kinds? } }`, never a throw).
 */
export function aiTools(kit: ToolKit): Record<string, Tool> {
  const out: Record<string, Tool> = {};
  for (const def of kit.definitions) {
    out[def.name] = tool<unknown, unknown>({
      description: def.description,
      inputSchema: jsonSchema(def.inputSchema as Parameters<typeof jsonSchema>[0]),
      execute: async (input: unknown, options?: { toolCallId?: string }) => (await kit.call(def.name, input, options?.toolCallId)).result,
    });
  }
  return out;
}

/** Options of {@link agentMemoryForAI}. */
export interface AgentMemoryForAIOptions extends ToolKitOptions {
  /** The agent's instructions: first in `system`. */
  instructions: string;
  /** The customer context: last in `system`, after the notes block. */
  context?: string | null;
  /** Selects the notes block (`max_tokens`, `tags`, `view`). */
  block?: BlockOptions;
}

/**
 * `system` with the notes block placed after the instructions and before the customer
 * context, and `tools` for `generateText`/`streamText`. `agentMemory` and `writeAgentMemory`
 * default to true; `remember` is offered only when the key has `agent_memory:write`. With a
 * scope handle, `remember` sends its conversation or task id as evidence. Throws the SDK's
 * {@link AgentMemoryError}s (the block or the tool list could not be read).
 */
export async function agentMemoryForAI(
  target: AgentMemoryClient | ScopeHandle,
  opts: AgentMemoryForAIOptions,
): Promise<{ system: string; tools: Record<string, Tool>; block: AgentMemoryBlock; kit: ToolKit }> {
  const kitOpts: ToolKitOptions = { agentMemory: opts.agentMemory ?? true, writeAgentMemory: opts.writeAgentMemory ?? true };
  if (opts.offered) kitOpts.offered = opts.offered;
  const [block, kit] = await Promise.all([target.agentMemory(opts.block), target.tools(kitOpts)]);
  return { system: systemPrompt(opts.instructions, block, opts.context), tools: aiTools(kit), block, kit };
}
