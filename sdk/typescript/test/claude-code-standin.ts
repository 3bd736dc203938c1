// A stand-in for the Claude Code executable, through the Claude Agent SDK's documented
// `spawnClaudeCodeProcess` option: it speaks the SDK's stream-json control protocol over
// in-memory streams (no process, no model). It records the `initialize` request (where the
// SDK delivers `systemPrompt` and the in-process MCP servers' tool manifests) and the user
// message, then calls the scripted tools through the SDK's `mcp_message` control requests —
// the path Claude Code uses to reach an in-process MCP server — and ends with a result.
// What it does not replace: Claude Code's own prompt assembly and its model call.
import { PassThrough } from "node:stream";
import { EventEmitter } from "node:events";

/** What the stand-in saw and what the tools answered. */
export interface StandInRecord {
  args: string[];
  initialize: any;
  user: any;
  toolResults: { name: string; result: any }[];
}

/** One scripted tool call of the stand-in "model". */
export interface ScriptedToolCall {
  server: string;
  name: string;
  arguments: unknown;
}

/** The `spawnClaudeCodeProcess` function of a stand-in that runs script, and its record. */
export function claudeCodeStandIn(script: ScriptedToolCall[], finalText = "done"): { spawn: (o: { args: string[] }) => any; record: StandInRecord } {
  const record: StandInRecord = { args: [], initialize: null, user: null, toolResults: [] };
  const spawn = (o: { args: string[] }) => {
    record.args = o.args;
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const events = new EventEmitter();
    const send = (m: unknown) => stdout.write(JSON.stringify(m) + "\n");
    const steps = [...script];
    let n = 0;
    const pending = new Map<string, ScriptedToolCall>();
    const next = () => {
      const step = steps.shift();
      if (!step) {
        send({ type: "result", subtype: "success", is_error: false, result: finalText, session_id: "standin", duration_ms: 0, duration_api_ms: 0, num_turns: 1, total_cost_usd: 0, usage: {}, uuid: "00000000-0000-4000-8000-000000000001" });
        return;
      }
      const id = `standin-${++n}`;
      pending.set(id, step);
      const message = { jsonrpc: "2.0", id: n, method: "tools/call", params: { name: step.name, arguments: step.arguments } };
      send({ type: "control_request", request_id: id, request: { subtype: "mcp_message", server_name: step.server, message } });
    };
    let buf = "";
    stdin.on("data", (d: Buffer) => {
      buf += d.toString("utf8");
      for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
        const m = JSON.parse(buf.slice(0, i));
        buf = buf.slice(i + 1);
        if (m.type === "control_request" && m.request?.subtype === "initialize") {
          record.initialize = m.request;
          send({ type: "control_response", response: { subtype: "success", request_id: m.request_id, response: {} } });
        } else if (m.type === "user") {
          record.user = m.message;
          next();
        } else if (m.type === "control_response" && pending.has(m.response?.request_id)) {
          const step = pending.get(m.response.request_id)!;
          pending.delete(m.response.request_id);
          record.toolResults.push({ name: step.name, result: m.response.response?.mcp_response?.result });
          next();
        }
      }
    });
    let exitCode: number | null = null;
    // The SDK closes stdin when the run is over: exit as Claude Code does.
    stdin.on("finish", () => {
      if (exitCode !== null) return;
      exitCode = 0;
      stdout.end();
      setImmediate(() => events.emit("exit", 0, null));
    });
    return {
      stdin,
      stdout,
      get killed() {
        return exitCode !== null;
      },
      get exitCode() {
        return exitCode;
      },
      kill() {
        if (exitCode === null) {
          exitCode = 0;
          stdout.end();
          setImmediate(() => events.emit("exit", 0, null));
        }
        return true;
      },
      on: (e: string, l: (...a: any[]) => void) => events.on(e, l),
      once: (e: string, l: (...a: any[]) => void) => events.once(e, l),
      off: (e: string, l: (...a: any[]) => void) => events.off(e, l),
    };
  };
  return { spawn, record };
}
