// The language-neutral conformance suite (sdk/conformance: README.md has the format) run
// through the TypeScript SDK against the real binary: one server, one agent per case.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { appendFileSync, readFileSync, readdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentMemoryClient, AgentMemoryError, DELETE, type BoardLease, type ClientOptions, type JsonValue, type RetrieveOptions, type Scope } from "../src/index.js";
import { Server, repoRoot } from "./harness.js";

const dir = join(repoRoot, "sdk", "conformance");
const setup = JSON.parse(readFileSync(join(dir, "setup.json"), "utf8"));
const cases = readdirSync(join(dir, "cases"))
  .filter((f) => f.endsWith(".json"))
  .sort()
  .map((f) => JSON.parse(readFileSync(join(dir, "cases", f), "utf8")));
const CAPABILITIES = new Set(["tools"]);

let server: Server;
const bases: { [name: string]: string } = {}; // knowledge base name (setup.json) -> id

before(async () => {
  assert.equal(setup.format, 1, "this runner reads format 1");
  server = await Server.start({ fakeModel: true });
  await server.createSpace(setup.space_name);
  for (const d of setup.documents) await server.putDocument(d.name, d.body);
  for (const kb of setup.knowledge ?? []) bases[kb.name] = await server.createKnowledgeBase(kb.name, kb.settings, kb.documents);
});

after(async () => {
  await server?.stop();
});

type Outcome = { [m: string]: unknown };

function sentinel(body: { [f: string]: JsonValue }): { [f: string]: JsonValue } {
  const out: { [f: string]: JsonValue } = {};
  for (const [k, v] of Object.entries(body)) {
    const isDel = v && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length === 1 && (v as { $delete?: unknown }).$delete === true;
    out[k] = isDel ? (DELETE as unknown as JsonValue) : v;
  }
  return out;
}

async function outcomeOf(fn: () => Promise<Outcome>): Promise<Outcome> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof AgentMemoryError) return { error: err.code, kinds: err.kinds };
    throw err;
  }
}

// skipCapability records a capability skip in $AGENTMEMORY_SKIP_LOG (one "test<TAB>reason"
// line, summed up at the end of make test) and returns the reason for node:test's skip.
function skipCapability(name: string, reason: string): string {
  const path = process.env.AGENTMEMORY_SKIP_LOG;
  if (path) appendFileSync(path, `typescript:${name}\t${reason}\n`.replace(/[\r]/g, " "));
  return reason;
}

for (const c of cases) {
  const missing = (c.requires ?? []).filter((r: string) => !CAPABILITIES.has(r));
  const name = `conformance: ${c.name}`;
  test(name, { skip: missing.length > 0 ? skipCapability(name, `requires ${missing.join(", ")}`) : false }, async () => {
    const agent = `${setup.agent_key.agent}-${c.name.replace(/_/g, "-")}`;
    const baseKey = await server.mintKey({ ...setup.agent_key, agent });
    const specs: { [name: string]: { queue?: string; replay?: boolean; scopes?: string[] } } = c.clients ?? { a: {} };
    const opts: { [name: string]: ClientOptions } = {};
    const clients: { [name: string]: AgentMemoryClient } = {};
    for (const [name, spec] of Object.entries(specs)) {
      const key = spec.scopes ? await server.mintKey({ ...setup.agent_key, agent, scopes: spec.scopes }) : baseKey;
      const o: ClientOptions = { baseUrl: server.url, key, retry: { retries: 1, baseDelayMs: 10, maxDelayMs: 50 }, timeoutMs: 5000 };
      if (spec.queue === "file") o.queueFile = join(mkdtempSync(join(tmpdir(), "sdkts-conf-")), "queue.json");
      if (spec.replay) o.replay = true;
      opts[name] = o;
      clients[name] = new AgentMemoryClient(o);
    }
    const saved: { [name: string]: Outcome } = {};
    const leases: { [name: string]: BoardLease } = {};
    try {
      for (const [i, step] of (c.steps as any[]).entries()) {
        const who: string = step.client ?? "a";
        const cl = clients[who]!;
        let out: Outcome = {};
        switch (step.op) {
          case "state.get":
            out = await outcomeOf(async () => ({ ...(await cl.agentState(step.scope as Scope).get()) }));
            break;
          case "state.put":
            out = await outcomeOf(async () => {
              const put: { mode?: "cas" | "merge_by_key"; ifVersion?: number } = {};
              if (step.mode) put.mode = step.mode;
              if (step.if_version !== undefined) put.ifVersion = step.if_version;
              return { ...(await cl.agentState(step.scope as Scope).put(sentinel(step.body), put)) };
            });
            break;
          case "state.pending":
            out = { pending: await cl.pending() };
            break;
          case "state.conflicts": {
            const conflicts = cl.agentState(step.scope as Scope).conflicts.map((x) => ({
              scope: x.scope,
              if_version: x.if_version,
              current_version: x.current_version,
              body: x.body,
            }));
            out = { conflicts };
            break;
          }
          case "memory.block":
            out = await outcomeOf(async () => {
              const o: { max_tokens?: number; tags?: string[]; view?: string } = {};
              if (step.max_tokens !== undefined) o.max_tokens = step.max_tokens;
              if (step.tags) o.tags = step.tags;
              if (step.view) o.view = step.view;
              const b = await cl.agentMemory(o);
              return { enabled: b.enabled, not_modified: b.notModified, text: b.text, etag: b.etag };
            });
            break;
          case "memory.remember": {
            const note: Parameters<AgentMemoryClient["remember"]>[0] = { kind: step.kind, title: step.title, body: step.body };
            if (step.tags) note.tags = step.tags;
            const ro = step.idempotency_key ? { idempotencyKey: step.idempotency_key } : {};
            const { data, error } = step.conversation ? await cl.conversation(step.conversation).remember(note, ro) : await cl.remember(note, ro);
            out = error
              ? { status: "error", error: error.code, kinds: error.kinds }
              : { status: data.status, replayed: data.replayed, note_id: data.note?.id ?? null };
            break;
          }
          case "memory.search":
            out = await outcomeOf(async () => {
              const o: { tags?: string[]; limit?: number } = {};
              if (step.tags) o.tags = step.tags;
              if (step.limit !== undefined) o.limit = step.limit;
              const r = await cl.search(step.query, o);
              return { count: r.notes.length, titles: r.notes.map((n) => n.title) };
            });
            break;
          case "knowledge.retrieve":
            out = await outcomeOf(async () => {
              const o: RetrieveOptions = {};
              if (step.top_k !== undefined) o.top_k = step.top_k;
              if (step.max_tokens !== undefined) o.max_tokens = step.max_tokens;
              if (step.min_score !== undefined) o.min_score = step.min_score;
              if (step.filters !== undefined) o.filters = step.filters;
              const r = await cl.retrieve(step.query, (step.kbs as string[]).map((k) => bases[k] ?? k), o);
              return {
                mode: r.mode,
                count: r.chunks.length,
                titles: r.chunks.map((x) => x.title),
                sources: r.chunks.map((x) => x.source_uri),
                versions: r.chunks.map((x) => x.version),
                in_context: r.chunks.filter((x) => x.in_context).length,
                context: r.context,
              };
            });
            break;
          case "board.get":
            out = await outcomeOf(async () => {
              const b = await cl.board(step.board.type, step.board.id).get();
              return { version: b.version, body: b.body };
            });
            break;
          case "board.put":
            out = await outcomeOf(async () => {
              const target = step.lease ? leases[step.lease]! : cl.board(step.board.type, step.board.id);
              const r = await target.put(step.body, step.if_version);
              return { stored: r.stored, version: r.version, settled: r.settled.map((x) => ({ field: x.field, rule: x.rule })) };
            });
            break;
          case "board.lease":
            out = await outcomeOf(async () => {
              const l = await cl.board(step.board.type, step.board.id).lease(step.ttl_seconds);
              leases[step.lease] = l;
              return { token: l.token };
            });
            break;
          case "board.lease_release":
            out = await outcomeOf(async () => {
              await leases[step.lease]!.release();
              return {};
            });
            break;
          case "server.stop":
            await server.stop();
            break;
          case "server.start":
            await server.startProcess();
            break;
          case "client.restart":
            clients[who] = new AgentMemoryClient(opts[who]!);
            break;
          case "tools.list": {
            const kit = await cl.tools({ agentMemory: true, writeAgentMemory: true });
            out = { names: kit.names };
            break;
          }
          case "tools.call": {
            const kit = await cl.tools({ agentMemory: true, writeAgentMemory: true });
            const r = (await kit.call(step.name, step.arguments)).result as any;
            out = r.error
              ? { error: r.error.code, kinds: r.error.kinds }
              : { status: r.status, count: Array.isArray(r.notes) ? r.notes.length : undefined, titles: Array.isArray(r.notes) ? r.notes.map((n: any) => n.title) : undefined };
            break;
          }
          default:
            assert.fail(`step ${i}: unknown op ${step.op}`);
        }
        const where = `${c.name} step ${i} (${step.op})`;
        for (const [k, want] of Object.entries<any>(step.expect ?? {})) {
          switch (k) {
            case "text_contains":
            case "context_contains": {
              const member = k.slice(0, -"_contains".length);
              for (const s of want) assert.ok(String(out[member]).includes(s), `${where}: ${member} lacks ${JSON.stringify(s)}`);
              break;
            }
            case "text_equals":
              assert.equal(out.text, saved[want]?.text, `${where}: text differs from ${want}`);
              break;
            case "etag_equals":
              assert.equal(out.etag, saved[want]?.etag, `${where}: etag differs from ${want}`);
              break;
            case "etag_differs":
              assert.notEqual(out.etag, saved[want]?.etag, `${where}: etag equals ${want}'s`);
              break;
            case "note_id_equals":
              assert.equal(out.note_id, saved[want]?.note_id, `${where}: note id differs from ${want}`);
              break;
            default:
              assert.deepStrictEqual(out[k], want, `${where}: ${k} is ${JSON.stringify(out[k])}, want ${JSON.stringify(want)} (outcome ${JSON.stringify(out)})`);
          }
        }
        if (step.expect && !("error" in step.expect) && out.error) assert.fail(`${where}: unexpected error ${String(out.error)}`);
        if (step.as) saved[step.as] = out;
      }
    } finally {
      if (!server.running) await server.startProcess();
    }
  });
}
