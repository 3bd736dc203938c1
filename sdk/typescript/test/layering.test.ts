// Issue 30 §5: the SDK's modules import one another without a cycle (type-only imports
// included), and the client never imports the tool kit: tools.ts depends on client.ts, and
// the client builds its kit through the builder tools.ts registers.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "./harness.js";
import { AgentMemoryClient } from "../src/index.js";

const src = join(repoRoot, "sdk", "typescript", "src");

/** Each module of src and the modules of src it imports or re-exports from. */
function graph(): Map<string, string[]> {
  const g = new Map<string, string[]>();
  for (const f of readdirSync(src).filter((f) => f.endsWith(".ts"))) {
    const text = readFileSync(join(src, f), "utf8");
    const deps = [...text.matchAll(/(?:import|export)[^;]*?from\s+"\.\/([\w-]+)\.js"/gs)].map((m) => m[1] + ".ts");
    g.set(f, deps);
  }
  return g;
}

/** The first import cycle found, or undefined. */
function cycle(g: Map<string, string[]>): string[] | undefined {
  const done = new Set<string>();
  const visit = (n: string, path: string[]): string[] | undefined => {
    if (path.includes(n)) return [...path.slice(path.indexOf(n)), n];
    if (done.has(n)) return undefined;
    for (const d of g.get(n) ?? []) {
      const c = visit(d, [...path, n]);
      if (c) return c;
    }
    done.add(n);
    return undefined;
  };
  for (const n of g.keys()) {
    const c = visit(n, []);
    if (c) return c;
  }
  return undefined;
}

test("the SDK's modules import one another without a cycle, and the client never imports the tool kit", () => {
  const g = graph();
  assert.ok(g.get("client.ts"), "src/client.ts is read");
  assert.ok(!g.get("client.ts")!.includes("tools.ts"), "client.ts imports tools.ts");
  assert.ok(g.get("tools.ts")!.includes("client.ts"), "the tool kit depends on the client");
  assert.equal(cycle(g), undefined);
  // The check bites: a graph with the old arrow back from the client has a cycle.
  const old = new Map(g);
  old.set("client.ts", [...g.get("client.ts")!, "tools.ts"]);
  assert.ok(cycle(old), "the old client -> tools arrow makes a cycle");
});

test("the client builds its tool kit through the builder the tool kit registered", async () => {
  const client = new AgentMemoryClient({ baseUrl: "http://127.0.0.1:1", key: "am_x" });
  const kit = await client.tools({ agentMemory: true, writeAgentMemory: true, offered: ["search_agent_memory", "remember"] });
  assert.deepEqual(kit.names, ["search_agent_memory", "remember"]);
  assert.equal(kit.openai[0]?.function.name, "search_agent_memory");
});
