/**
 * `@agentmemory/sdk`: the TypeScript client of agentmemory (ESM, `fetch` only, no runtime
 * dependency; Node 18+, Deno, Bun, browsers and edge runtimes).
 *
 * ```ts
 * import { AgentMemoryClient, DELETE, systemPrompt } from "@agentmemory/sdk";
 * const client = new AgentMemoryClient({ baseUrl: "http://127.0.0.1:8080", key: process.env.AGENTMEMORY_KEY });
 * const conv = client.conversation("c-1");
 * const state = await conv.agentState.get();
 * await conv.agentState.put({ step: "checkout" }, { mode: "cas", ifVersion: state.version });
 * const notes = await conv.agentMemory({ max_tokens: 300, tags: ["refund"] });
 * const { data, error } = await conv.remember({ kind: "pitfall", title: "...", body: "..." });
 * const found = await client.retrieve("Can I get a refund to my card?", ["kb_..."], { top_k: 5 }); // found.context, found.chunks
 * ```
 *
 * @module
 */
export {
  AgentMemoryClient,
  AgentStateHandle,
  ScopeHandle,
  DELETE,
  newId,
  freshSeconds,
  type AgentContext,
  type AgentMemoryBlock,
  type AgentState,
  type BlockOptions,
  type ClientOptions,
  type Conflict,
  type HandleOptions,
  type PutOptions,
  type Rejected,
  type Remembered,
  type RememberNote,
  type RememberOptions,
  type RememberResult,
  type RetrieveOptions,
  type SearchOptions,
  type WriteResult,
} from "./client.js";
export {
  AgentMemoryError,
  ConflictError,
  PersonalDataError,
  RateLimitedError,
  UnavailableError,
  UnreachableError,
  type AgentMemoryErrorInit,
} from "./errors.js";
export { MAX_ANSWER_DEPTH, type AbortSignalLike, type FetchLike, type FetchResponse, type LogEvent, type Logger, type RetryOptions } from "./http.js";
export { fileQueue, memoryQueue, type QueueStore, type QueuedWrite } from "./queue.js";
export {
  REMEMBER_TOOL,
  SEARCH_KNOWLEDGE_TOOL,
  SEARCH_TOOL,
  rememberTool,
  searchAgentMemoryTool,
  searchKnowledgeTool,
  systemPrompt,
  type AnthropicTool,
  type JsonSchema,
  type OpenAITool,
  type ToolCall,
  type ToolDefinition,
  type ToolKit,
  type ToolKitOptions,
  type ToolResult,
} from "./tools.js";
export type * from "./types.js";
export { BoardHandle, BoardLease, BridgedBoardHandle } from "./boards.js";
export { StateLease } from "./client.js";

import { AgentMemoryClient as Client, type ClientOptions as Options } from "./client.js";

/** Creates an {@link AgentMemoryClient}; throws `TypeError` without `baseUrl` outside replay mode. */
export function createClient(options: Options): Client {
  return new Client(options);
}
export {
  agentMemorySession,
  MAX_KNOWLEDGE_QUERY,
  type AgentMemorySession,
  type IntegrationOptions,
  type KnowledgeMode,
  type PreparedPrompt,
} from "./integration.js";
