/**
 * The Vercel AI SDK integration (`ai` on npm, an optional peer dependency: the core never
 * imports it).
 *
 * ```ts
 * import { generateText, stepCountIs } from "ai";
 * import { agentMemoryForAI } from "@agentmemory/sdk/ai";
 * const mem = await agentMemoryForAI(client.conversation("c-1"), { instructions: AGENT_INSTRUCTIONS, context: customerContext });
 * const res = await generateText({ model, system: mem.system, tools: mem.tools, prepareStep: mem.prepareStep, prompt, stopWhen: stepCountIs(5) });
 * ```
 *
 * @module
 */
import { jsonSchema, tool, type ModelMessage, type Tool } from "ai";
import type { AgentMemoryClient, AgentContext, BlockOptions, ScopeHandle } from "./client.js";
import { agentMemorySession, textOf, type IntegrationOptions } from "./integration.js";
import type { ToolKit } from "./tools.js";

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

/** Options of {@link agentMemoryForAI}: the integrations' options, and the first user message. */
export interface AgentMemoryForAIOptions extends IntegrationOptions {
  /** The user message `system` is built for (the knowledge query with `knowledge: "before_call"`). */
  prompt?: string;
  /**
   * The earlier shape of this helper's block selection, still accepted: `max_tokens` is
   * `blockMaxTokens`, `tags` the task's `object_types`, `view` is `view` (options given
   * directly win).
   * @deprecated use `blockMaxTokens`, `task` and `view`.
   */
  block?: BlockOptions;
}

/** What {@link agentMemoryForAI} gives `generateText`/`streamText`. */
export interface AgentMemoryForAI {
  /** The system prompt: instructions, the notes block, the customer's context, the knowledge evidence. */
  system: string;
  /** The offered tools (`search_agent_memory`, `remember`, `search_knowledge`). */
  tools: Record<string, Tool>;
  /**
   * Rebuilds `system` before each model call (step) from the latest user message in the
   * step's messages: with `knowledge: "before_call"` each call gets evidence for it. The
   * block comes from the client's cache inside its freshness period.
   */
  prepareStep: (step: { messages: ModelMessage[] }) => Promise<{ system: string }>;
  /** The context answer `system` was built from (null when none was needed). */
  context: AgentContext | null;
  /** The tool kit behind `tools`. */
  kit: ToolKit;
}

/**
 * `system` with the notes block placed after the instructions and before the customer's
 * context (AM-4), `tools` and `prepareStep` for `generateText`/`streamText`. `agentMemory` defaults to true and
 * `writeAgentMemory` to false; `remember` is offered only when the key has
 * `agent_memory:write`. With a scope handle, `remember` sends its conversation or task id as
 * evidence. Throws the SDK's {@link AgentMemoryError}s (the context or the tool list could
 * not be read).
 */
export async function agentMemoryForAI(target: AgentMemoryClient | ScopeHandle, opts: AgentMemoryForAIOptions): Promise<AgentMemoryForAI> {
  const session = await agentMemorySession(target, fromBlockOptions(opts));
  const first = await session.prompt(opts.prompt);
  return {
    system: first.system,
    tools: aiTools(session.kit),
    context: first.context,
    kit: session.kit,
    prepareStep: async ({ messages }) => ({ system: (await session.prompt(latestUserText(messages) ?? opts.prompt)).system }),
  };
}

/** The options with the deprecated `block` mapped onto the context call's members. */
function fromBlockOptions(opts: AgentMemoryForAIOptions): IntegrationOptions {
  const { block, ...rest } = opts;
  if (!block) return rest;
  const out: IntegrationOptions = { ...rest };
  if (out.blockMaxTokens === undefined && block.max_tokens !== undefined) out.blockMaxTokens = block.max_tokens;
  if (out.view === undefined && block.view !== undefined) out.view = block.view;
  if (out.task === undefined && block.tags && block.tags.length > 0) out.task = { object_types: [...block.tags] };
  return out;
}

/** The text of the last user message among messages, or undefined. */
function latestUserText(messages: ModelMessage[]): string | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === "user") return textOf(m.content);
  }
  return undefined;
}
