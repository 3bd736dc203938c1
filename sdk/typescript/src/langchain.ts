/**
 * The LangChain.js integration (`@langchain/core` on npm, an optional peer dependency): the
 * tool kit as `@langchain/core/tools` tools, and a prompt step, a Runnable that puts the
 * system message (instructions, the notes block, the customer's context, the knowledge
 * evidence) in front of the conversation before each model call. It works as LangGraph.js's
 * prompt too (a Runnable over the messages).
 *
 * ```ts
 * import { agentMemoryForLangChain } from "@agentmemory/sdk/langchain";
 * const mem = await agentMemoryForLangChain(client.conversation("c-1"), { instructions: AGENT_INSTRUCTIONS });
 * const chain = mem.prompt.pipe(model.bindTools(mem.tools));
 * const reply = await chain.invoke([new HumanMessage("My gift card refund?")]);
 * for (const call of reply.tool_calls ?? []) messages.push(await mem.toolsByName[call.name].invoke(call));
 * ```
 *
 * @module
 */
import { SystemMessage, type BaseMessage } from "@langchain/core/messages";
import { RunnableLambda } from "@langchain/core/runnables";
import { tool, type StructuredToolInterface } from "@langchain/core/tools";
import type { AgentMemoryClient, ScopeHandle } from "./client.js";
import { agentMemorySession, textOf, type AgentMemorySession, type IntegrationOptions } from "./integration.js";
import type { ToolKit } from "./tools.js";

/** What {@link agentMemoryForLangChain} gives a chain or a graph. */
export interface AgentMemoryForLangChain {
  /**
   * The prompt step: messages in, the same messages out behind one system message built for
   * the latest human message (its text is the knowledge query of `before_call`). System
   * messages already in the input are dropped (the step owns the system prompt).
   */
  prompt: RunnableLambda<BaseMessage[], BaseMessage[]>;
  /** The offered tools (`search_agent_memory`, `remember`, `search_knowledge`). */
  tools: StructuredToolInterface[];
  /** The same tools by name, to run a model's tool calls (`invoke(toolCall)` answers a ToolMessage). */
  toolsByName: Record<string, StructuredToolInterface>;
  /** The session behind them (the kit, `prompt`). */
  session: AgentMemorySession;
}

/**
 * The kit's tools as LangChain tools: the MCP server's names, descriptions and JSON Schemas;
 * each returns the tool's answer as JSON text (a refusal `{"error": {"code", ...}}` is the
 * tool's output for the model to read, never a throw).
 */
export function langChainTools(kit: ToolKit): StructuredToolInterface[] {
  return kit.definitions.map(
    (def) =>
      tool(async (input: unknown, config?: { toolCall?: { id?: string } }) => (await kit.call(def.name, input, config?.toolCall?.id)).content, {
        name: def.name,
        description: def.description,
        schema: def.inputSchema as never,
      }) as unknown as StructuredToolInterface,
  );
}

/**
 * Builds the prompt step and tools for a client or a scope handle (whose `remember` then
 * sends its conversation or task id as evidence). `agentMemory` defaults to
 * true and `writeAgentMemory` to false (opt in to offer it); `remember` is offered only when the key has `agent_memory:write`. Throws
 * the SDK's {@link AgentMemoryError}s (the tool list could not be read); the prompt step
 * throws them when the context call fails.
 */
export async function agentMemoryForLangChain(target: AgentMemoryClient | ScopeHandle, opts: IntegrationOptions): Promise<AgentMemoryForLangChain> {
  const session = await agentMemorySession(target, opts);
  const prompt = RunnableLambda.from(async (messages: BaseMessage[]): Promise<BaseMessage[]> => {
    const rest = messages.filter((m) => m.getType() !== "system");
    const { system } = await session.prompt(latestHumanText(rest));
    return [new SystemMessage(system), ...rest];
  });
  const tools = langChainTools(session.kit);
  return { prompt, tools, toolsByName: Object.fromEntries(tools.map((t) => [t.name, t])), session };
}

/** The text of the last human message, or undefined. */
function latestHumanText(messages: BaseMessage[]): string | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.getType() === "human") return textOf(m.content);
  }
  return undefined;
}
