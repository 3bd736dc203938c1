/**
 * The Claude Agent SDK integration (`@anthropic-ai/claude-agent-sdk` on npm, an optional peer
 * dependency, with its peer `zod`): the tool kit served by the SDK's in-process MCP server
 * (`createSdkMcpServer` and `tool`), and the notes block in the `systemPrompt` option, after
 * the instructions and before the customer's context.
 *
 * ```ts
 * import { query } from "@anthropic-ai/claude-agent-sdk";
 * import { agentMemoryForClaudeAgent } from "@agentmemory/sdk/claude-agent-sdk";
 * const prompt = "My gift card refund?";
 * const mem = await agentMemoryForClaudeAgent(client.conversation("c-1"), { instructions: AGENT_INSTRUCTIONS, prompt });
 * for await (const m of query({ prompt, options: mem.options })) console.log(m);
 * ```
 *
 * `query()` runs the Claude Code executable, which needs a model: the tests exercise the
 * in-process MCP server through an MCP client and the options object, not a whole `query()`.
 *
 * @module
 */
import { createSdkMcpServer, tool, type McpSdkServerConfigWithInstance } from "@anthropic-ai/claude-agent-sdk";
import { z } from "zod";
import type { AgentMemoryClient, ScopeHandle } from "./client.js";
import { agentMemorySession, type AgentMemorySession, type IntegrationOptions } from "./integration.js";
import type { JsonSchema, ToolKit } from "./tools.js";

/** Options of {@link agentMemoryForClaudeAgent}: the integrations' options, the user's prompt and the MCP server's name. */
export interface AgentMemoryForClaudeAgentOptions extends IntegrationOptions {
  /** The prompt `query()` gets: the knowledge query of `before_call`. */
  prompt?: string;
  /** The in-process MCP server's name (default `agentmemory`): its tools are `mcp__<name>__<tool>`. */
  serverName?: string;
}

/** The `query()` options this integration sets. */
export interface ClaudeAgentMemoryOptions {
  /** Instructions, the notes block, the customer's context, the knowledge evidence. */
  systemPrompt: string;
  /** The in-process MCP server serving the tool kit. */
  mcpServers: Record<string, McpSdkServerConfigWithInstance>;
  /** The kit's tools as `mcp__<server>__<tool>`, so they run without a permission prompt. */
  allowedTools: string[];
}

/** What {@link agentMemoryForClaudeAgent} gives `query()`. */
export interface AgentMemoryForClaudeAgent {
  /** Spread into (or pass as) `query({ prompt, options })`'s options. */
  options: ClaudeAgentMemoryOptions;
  /** The in-process MCP server (its `instance` is the MCP SDK's McpServer). */
  server: McpSdkServerConfigWithInstance;
  /** The session behind them (the kit, `prompt`). */
  session: AgentMemorySession;
}

/**
 * The kit's tools as an in-process MCP server of the Claude Agent SDK: the MCP server's names
 * and descriptions, the arguments as zod shapes of the same JSON Schemas; each answers the
 * tool's JSON text, a refusal with `isError` (the model reads `{"error": {"code", ...}}`; the
 * run goes on).
 */
export function claudeAgentMcpServer(kit: ToolKit, name = "agentmemory"): McpSdkServerConfigWithInstance {
  return createSdkMcpServer({
    name,
    version: "1",
    tools: kit.definitions.map((def) =>
      tool(def.name, def.description, zodShape(def.inputSchema), async (args: unknown) => {
        const r = await kit.call(def.name, args);
        return { content: [{ type: "text" as const, text: r.content }], isError: r.isError };
      }),
    ),
  });
}

/**
 * Builds the `query()` options for a client or a scope handle (whose `remember` then sends its
 * conversation or task id as evidence): the system prompt for `prompt`, and the kit as an
 * in-process MCP server. `agentMemory` defaults to true and `writeAgentMemory` to false; `remember` is
 * offered only when the key has `agent_memory:write`. Throws the SDK's
 * {@link AgentMemoryError}s (the context or the tool list could not be read).
 */
export async function agentMemoryForClaudeAgent(
  target: AgentMemoryClient | ScopeHandle,
  opts: AgentMemoryForClaudeAgentOptions,
): Promise<AgentMemoryForClaudeAgent> {
  const session = await agentMemorySession(target, opts);
  const name = opts.serverName ?? "agentmemory";
  const server = claudeAgentMcpServer(session.kit, name);
  const { system } = await session.prompt(opts.prompt);
  return {
    options: { systemPrompt: system, mcpServers: { [name]: server }, allowedTools: session.kit.names.map((n) => `mcp__${name}__${n}`) },
    server,
    session,
  };
}

/** The zod shape of an object JSON Schema's properties (the subset the kit's schemas use). */
export function zodShape(schema: JsonSchema): Record<string, z.ZodType> {
  const props = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((schema.required ?? []) as string[]);
  const shape: Record<string, z.ZodType> = {};
  for (const [k, p] of Object.entries(props)) shape[k] = required.has(k) ? zodOf(p) : zodOf(p).optional();
  return shape;
}

/** The zod type of one JSON Schema: string (enum, maxLength), integer (minimum, maximum), array of one item type (maxItems), object; a `null` type makes it nullable. */
function zodOf(s: JsonSchema): z.ZodType {
  const types = (Array.isArray(s.type) ? s.type : [s.type]) as string[];
  const t = types.find((x) => x !== "null");
  let out: z.ZodType;
  if (t === "string" && Array.isArray(s.enum)) out = z.enum(s.enum as [string, ...string[]]);
  else if (t === "string") out = typeof s.maxLength === "number" ? z.string().max(s.maxLength) : z.string();
  else if (t === "integer") {
    let n = z.number().int();
    if (typeof s.minimum === "number") n = n.min(s.minimum);
    if (typeof s.maximum === "number") n = n.max(s.maximum);
    out = n;
  } else if (t === "array") {
    const a = z.array(zodOf((s.items ?? {}) as JsonSchema));
    out = typeof s.maxItems === "number" ? a.max(s.maxItems) : a;
  } else if (t === "object") {
    const o = z.object(zodShape(s));
    out = s.additionalProperties === false ? o.strict() : o;
  } else out = z.unknown();
  if (typeof s.description === "string") out = out.describe(s.description);
  return types.includes("null") ? out.nullable() : out;
}
