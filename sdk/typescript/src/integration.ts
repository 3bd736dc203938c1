/**
 * What every framework integration shares (CTX-4, AM-4, KN-4): the three options
 * (`agentMemory`, `writeAgentMemory`, `knowledge`), the system prompt in the spec's order
 * (the agent's instructions, the notes block, then the customer's context and the knowledge
 * evidence) built through the cached context call, and the tool kit. The framework modules
 * (`./ai`, `./openai-agents`, `./langchain`, `./claude-agent-sdk`) only translate this into
 * their framework's shapes.
 *
 * @module
 */
import { AgentMemoryClient, ScopeHandle, type AgentContext } from "./client.js";
import { readableBases, systemPrompt, type ToolKit, type ToolKitOptions } from "./tools.js";
import type { ContextRequest } from "./types.js";

/**
 * Where knowledge reaches the model: `off` (default, none), `before_call` (a context call
 * with `knowledge: {kbs, query: <the latest user message>}` before each model call, its
 * evidence placed after the block), or `tool` (the model may call `search_knowledge`).
 */
export type KnowledgeMode = "off" | "before_call" | "tool";

/**
 * The options every integration takes.
 *
 * | option | default | meaning |
 * |---|---|---|
 * | `instructions` | (required) | the agent's instructions: first in the system prompt |
 * | `context` | none | the customer's context: after the notes block |
 * | `agentMemory` | `true` | fetch the notes block (through the context call), place it after the instructions; offer `search_agent_memory` |
 * | `writeAgentMemory` | `false` | offer `remember` (an explicit opt-in, as in Python and Go), only when the key has `agent_memory:write` (the service's `/mcp` lists it) |
 * | `knowledge` | `"off"` | see {@link KnowledgeMode} |
 * | `knowledgeBases` | every base the key may read (at most 10) | the base ids of `before_call` and of `search_knowledge` |
 * | `view`, `task`, `maxTokens`, `blockMaxTokens`, `includeAgentMemory` | the service's | passed to `POST /v1/context` as `view`, `task`, `max_tokens`, `block_max_tokens`, `include_agent_memory` |
 * | `offered` | asked from `/mcp` | the tool names the key may use, when you know them |
 */
export interface IntegrationOptions {
  instructions: string;
  context?: string | null;
  agentMemory?: boolean;
  writeAgentMemory?: boolean;
  knowledge?: KnowledgeMode;
  knowledgeBases?: string[];
  view?: string;
  task?: { id?: string; object_types?: string[] };
  maxTokens?: number;
  blockMaxTokens?: number;
  includeAgentMemory?: boolean;
  offered?: string[];
}

/** A system prompt built for one model call, with the context answer it came from (null when no call was needed). */
export interface PreparedPrompt {
  system: string;
  context: AgentContext | null;
}

/** An integration's state: the tool kit, and `prompt` building the system prompt for a model call. */
export interface AgentMemorySession {
  /** The offered tools (see {@link ToolKit}); `remember` and `search_knowledge` only where the key may use them. */
  kit: ToolKit;
  /** The options, with the defaults applied. */
  options: Required<Pick<IntegrationOptions, "agentMemory" | "writeAgentMemory" | "knowledge">> & IntegrationOptions;
  /**
   * The system prompt for a model call whose latest user message is `latestUserMessage`
   * (used as the knowledge query with `knowledge: "before_call"`; its first 1000 characters).
   * Answers come from the client's cache inside their freshness period. Throws the SDK's
   * {@link AgentMemoryError}s.
   */
  prompt(latestUserMessage?: string | null): Promise<PreparedPrompt>;
}

/** The largest knowledge query the context call takes, in characters. */
export const MAX_KNOWLEDGE_QUERY = 1000;

/**
 * Builds an {@link AgentMemorySession} for a client or a scope handle (whose `remember` then
 * sends its conversation or task id as evidence). Asks `/mcp` which tools the key may use
 * (unless `offered` is given). Throws the SDK's {@link AgentMemoryError}s.
 */
export async function agentMemorySession(target: AgentMemoryClient | ScopeHandle, opts: IntegrationOptions): Promise<AgentMemorySession> {
  const options = { ...opts, agentMemory: opts.agentMemory ?? true, writeAgentMemory: opts.writeAgentMemory ?? false, knowledge: opts.knowledge ?? "off" };
  const client = target instanceof ScopeHandle ? target.agentMemoryClient : target;
  const kitOpts: ToolKitOptions = { agentMemory: options.agentMemory, writeAgentMemory: options.writeAgentMemory, knowledge: options.knowledge === "tool" };
  if (opts.knowledgeBases) kitOpts.knowledgeBases = opts.knowledgeBases;
  if (opts.offered) kitOpts.offered = opts.offered;
  const kit = await target.tools(kitOpts);
  let bases: Promise<string[]> | undefined;
  const kbs = () => (bases ??= opts.knowledgeBases && opts.knowledgeBases.length > 0 ? Promise.resolve(opts.knowledgeBases) : readableBases(client));
  return {
    kit,
    options,
    async prompt(latestUserMessage) {
      const query = [...(latestUserMessage ?? "").trim()].slice(0, MAX_KNOWLEDGE_QUERY).join("");
      const withKnowledge = options.knowledge === "before_call" && query.length > 0;
      if (!options.agentMemory && !withKnowledge) return { system: systemPrompt(options.instructions, null, options.context), context: null };
      const req = contextRequest(options);
      if (withKnowledge) {
        const ids = await kbs();
        if (ids.length > 0) req.knowledge = { kbs: ids, query };
      }
      const ctx = await target.context(req);
      const block = options.agentMemory ? ctx.system_block : "";
      const after = [options.context ?? "", ctx.context].filter((p) => p.length > 0).join("\n\n");
      return { system: systemPrompt(options.instructions, block, after), context: ctx };
    },
  };
}

/** The context request of the pass-through options (without knowledge). */
function contextRequest(o: IntegrationOptions): ContextRequest {
  const req: ContextRequest = {};
  if (o.view !== undefined) req.view = o.view;
  if (o.task !== undefined) req.task = { ...o.task };
  if (o.maxTokens !== undefined) req.max_tokens = o.maxTokens;
  if (o.blockMaxTokens !== undefined) req.block_max_tokens = o.blockMaxTokens;
  if (o.includeAgentMemory !== undefined) req.include_agent_memory = o.includeAgentMemory;
  return req;
}

/** The text of a message's content: a string, or the text parts of an array of parts (`{type: "text", text}`, `{type: "input_text", text}`). */
export function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((p) => (p && typeof p === "object" && typeof (p as { text?: unknown }).text === "string" ? (p as { text: string }).text : ""))
    .filter((t) => t.length > 0)
    .join("\n");
}
