/**
 * The tool kit's types (AM-5, KN-4): the shapes of a tool, of the kit and of a tool call and
 * its result. A leaf module: the client (`client.ts`) names the kit's type from here, while
 * the kit itself (`tools.ts`) depends on the client and never the reverse.
 *
 * @module
 */
/** A JSON Schema object. */
export type JsonSchema = { [member: string]: unknown };

/** A tool: name, description for the model, and the JSON Schema of its arguments. */
export interface ToolDefinition {
  name: "search_agent_memory" | "remember" | "search_knowledge";
  description: string;
  inputSchema: JsonSchema;
}

/** The OpenAI (Chat Completions) function-tool shape. */
export interface OpenAITool {
  type: "function";
  function: { name: string; description: string; parameters: JsonSchema };
}

/** The Anthropic Messages tool shape. */
export interface AnthropicTool {
  name: string;
  description: string;
  input_schema: JsonSchema;
}

/**
 * Options of the kit: `agentMemory` offers `search_agent_memory`, `writeAgentMemory` offers
 * `remember` (only when the key has `agent_memory:write`), `knowledge` offers
 * `search_knowledge` (only where the key may read knowledge: scope `knowledge:read` and the
 * feature on). `knowledgeBases` are the base ids `search_knowledge` searches when the model
 * names none (default: every base the key may read, at most 10). `offered` skips asking the
 * service which tools the key may use (the names, e.g. from your own configuration).
 */
export interface ToolKitOptions {
  agentMemory?: boolean;
  writeAgentMemory?: boolean;
  knowledge?: boolean;
  knowledgeBases?: string[];
  offered?: string[];
}

/**
 * What a tool call returns to the model: `content` is JSON text, the same as the MCP tool's:
 * a search `{"enabled", "notes": [{id, kind, title, body, tags, version, source_id}]}`; a
 * remember `{"status": "stored", "note_id", "version"}`, `{"status": "proposed",
 * "proposal_id"}` or `{"status": "duplicate", "note_id", "version", "duplicate_of"}`; a
 * knowledge search `{"mode", "chunks": [...], "context", "context_tokens"}` (`context` is the
 * fenced evidence for the model to read); a
 * refusal `{"error": {"code", "message", "kinds"?, "retry_after_seconds"?}}` with `isError`
 * true (e.g. `personal_data_in_agent_memory` with the kinds, for the model to rewrite).
 */
export interface ToolResult {
  name: string;
  /** The tool call's id when the call carried one (OpenAI `id`, Anthropic `id`). */
  toolCallId?: string;
  isError: boolean;
  /** The answer as an object. */
  result: { [member: string]: unknown };
  /** The answer as JSON text, to hand back to the model. */
  content: string;
}

/**
 * A model's tool call, in any of these shapes: `{ name, arguments }` (an object or JSON
 * text), OpenAI `{ id, function: { name, arguments } }`, Anthropic `{ id, name, input }`.
 */
export type ToolCall =
  | { name: string; arguments?: unknown; id?: string }
  | { id?: string; type?: string; function: { name: string; arguments?: unknown } }
  | { id?: string; type?: string; name: string; input?: unknown };

/** The kit: the offered tools in each shape and a dispatcher. */
export interface ToolKit {
  /** The offered tools' names, search first. */
  names: string[];
  /** The offered tools (name, description, inputSchema). */
  definitions: ToolDefinition[];
  /** OpenAI function tools. */
  openai: OpenAITool[];
  /** Anthropic tools. */
  anthropic: AnthropicTool[];
  /** Runs a tool by name; a refusal is a result with `isError`, never a throw. An unknown or not offered tool is `unknown_tool`. */
  call(name: string, args: unknown, toolCallId?: string): Promise<ToolResult>;
  /** Runs a model's tool call in any of the {@link ToolCall} shapes. */
  dispatch(call: ToolCall): Promise<ToolResult>;
}
