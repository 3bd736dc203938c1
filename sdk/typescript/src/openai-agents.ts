/**
 * The OpenAI Agents SDK integration (`@openai/agents` on npm, an optional peer dependency):
 * dynamic `instructions` holding the notes block, the tool kit as the SDK's function tools,
 * and a `callModelInputFilter` that rebuilds the instructions before each model call.
 *
 * ```ts
 * import { Agent, run } from "@openai/agents";
 * import { agentMemoryForOpenAIAgents } from "@agentmemory/sdk/openai-agents";
 * const mem = await agentMemoryForOpenAIAgents(client.conversation("c-1"), { instructions: AGENT_INSTRUCTIONS });
 * const agent = new Agent({ name: "shop", instructions: mem.instructions, tools: mem.tools });
 * const result = await run(agent, "My gift card refund?", { callModelInputFilter: mem.callModelInputFilter });
 * ```
 *
 * @module
 */
import { tool, type CallModelInputFilter, type FunctionTool } from "@openai/agents";
import type { AgentMemoryClient, ScopeHandle } from "./client.js";
import { agentMemorySession, textOf, type AgentMemorySession, type IntegrationOptions } from "./integration.js";
import type { ToolKit } from "./tools.js";

/** Options of {@link agentMemoryForOpenAIAgents}: the integrations' options, and the first user message. */
export interface AgentMemoryForOpenAIAgentsOptions extends IntegrationOptions {
  /** The user message `instructions` is built for when no input is known (the knowledge query of `before_call`). */
  prompt?: string;
}

/** What {@link agentMemoryForOpenAIAgents} gives an `Agent` and `run`. */
export interface AgentMemoryForOpenAIAgents {
  /**
   * The agent's `instructions`, a function: the system prompt with the notes block after the
   * instructions and before the customer's context (the block from the client's cache inside
   * its freshness period).
   */
  instructions: () => Promise<string>;
  /** The offered tools as function tools (`search_agent_memory`, `remember`, `search_knowledge`). */
  tools: FunctionTool[];
  /**
   * For `run(..., { callModelInputFilter })` (or the Runner's config): before each model call,
   * rebuilds the instructions from the latest user message of the input, so that
   * `knowledge: "before_call"` brings evidence for it. Without it `instructions` still holds
   * the block.
   */
  callModelInputFilter: CallModelInputFilter;
  /** The session behind them (the kit, `prompt`). */
  session: AgentMemorySession;
}

/**
 * The kit's tools as Agents SDK function tools: the MCP server's names, descriptions and JSON
 * Schemas (not strict: the schemas stay as the service declares them), and an `execute`
 * that returns the tool's answer as JSON text (a refusal `{"error": {"code", ...}}` goes back
 * to the model as the tool's output, never a throw).
 */
export function openAIAgentsTools(kit: ToolKit): FunctionTool[] {
  return kit.definitions.map(
    (def) =>
      tool({
        name: def.name,
        description: def.description,
        parameters: def.inputSchema as never,
        strict: false,
        execute: async (input: unknown, _ctx?: unknown, details?: { toolCall?: { callId?: string } }) =>
          (await kit.call(def.name, input, details?.toolCall?.callId)).content,
      }) as unknown as FunctionTool,
  );
}

/**
 * Builds the instructions, tools and input filter of an OpenAI Agents SDK agent for a client
 * or a scope handle (whose `remember` then sends its conversation or task id as evidence).
 * `agentMemory` defaults to true and `writeAgentMemory` to false; `remember` is offered only when the
 * key has `agent_memory:write`. Throws the SDK's {@link AgentMemoryError}s (the tool list
 * could not be read); the instructions function throws them when the context call fails.
 */
export async function agentMemoryForOpenAIAgents(
  target: AgentMemoryClient | ScopeHandle,
  opts: AgentMemoryForOpenAIAgentsOptions,
): Promise<AgentMemoryForOpenAIAgents> {
  const session = await agentMemorySession(target, opts);
  const filter: CallModelInputFilter = async ({ modelData }) => {
    const latest = latestUserText(modelData.input) ?? opts.prompt;
    return { ...modelData, instructions: (await session.prompt(latest)).system };
  };
  return {
    instructions: async () => (await session.prompt(opts.prompt)).system,
    tools: openAIAgentsTools(session.kit),
    callModelInputFilter: filter,
    session,
  };
}

/** The text of the last user message of an Agents SDK input (items or a string). */
function latestUserText(input: unknown): string | undefined {
  if (typeof input === "string") return input;
  if (!Array.isArray(input)) return undefined;
  for (let i = input.length - 1; i >= 0; i--) {
    const item = input[i] as { role?: unknown; content?: unknown };
    if (item && item.role === "user") return textOf(item.content);
  }
  return undefined;
}
