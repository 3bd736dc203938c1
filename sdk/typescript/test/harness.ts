// The real binary for the tests: build (or $AGENTMEMORY_BIN), start `agentmemory dev` on a
// free port and a temporary data dir, create a space, PUT the documents, mint agent keys;
// stop (SIGTERM) and start again on the same port and data dir.
import { spawn, execFile, type ChildProcess } from "node:child_process";
import { mkdtempSync, openSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { createServer as createHttpServer, request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);

/** The repository root (sdk/typescript/build/test -> four levels up). */
export const repoRoot = process.env.AGENTMEMORY_REPO ?? resolve(dirname(fileURLToPath(import.meta.url)), "../../../..");

let builtBin: Promise<string> | undefined;

/** The binary: $AGENTMEMORY_BIN, else `go build` once into a temporary dir. */
export function binary(): Promise<string> {
  if (process.env.AGENTMEMORY_BIN) return Promise.resolve(process.env.AGENTMEMORY_BIN);
  builtBin ??= (async () => {
    const dir = join(tmpdir(), "agentmemory-sdk-ts-bin");
    mkdirSync(dir, { recursive: true });
    const out = join(dir, "agentmemory");
    await run("go", ["build", "-o", out, "./cmd/agentmemory"], { cwd: repoRoot, maxBuffer: 1 << 24 });
    return out;
  })();
  return builtBin;
}

/** The last 40 lines of the file at path (for an error message), or why it cannot be read. */
function logTail(path: string): string {
  try {
    return readFileSync(path, "utf8").split("\n").slice(-40).join("\n");
  } catch (e) {
    return `(unreadable: ${String(e)})`;
  }
}

export function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.unref();
    s.on("error", rej);
    s.listen(0, "127.0.0.1", () => {
      const a = s.address();
      s.close(() => (a && typeof a === "object" ? res(a.port) : rej(new Error("no port"))));
    });
  });
}

export interface KeySpec {
  kind: "agent";
  agent: string;
  vendor: string;
  scopes: string[];
}

/** One running `agentmemory dev`. */
export class Server {
  readonly url: string;
  readonly dataDir: string;
  adminKey = "";
  spaceId = "";
  private proc: ChildProcess | undefined;
  private exited: Promise<void> | undefined;

  private constructor(
    readonly bin: string,
    readonly port: number,
    dataDir: string,
    readonly fakeModel: boolean,
  ) {
    this.url = `http://127.0.0.1:${port}`;
    this.dataDir = dataDir;
  }

  /** Starts `agentmemory dev`; with `fakeModel`, `--fake-model` (the stand-in embedder knowledge bases need). */
  static async start(opts: { fakeModel?: boolean } = {}): Promise<Server> {
    const bin = await binary();
    const dir = mkdtempSync(join(tmpdir(), "agentmemory-sdk-ts-"));
    const s = new Server(bin, await freePort(), join(dir, "data"), opts.fakeModel ?? false);
    await s.startProcess();
    return s;
  }

  async startProcess(): Promise<void> {
    const log = openSync(this.logPath, "a");
    const temporal = process.env.AGENTMEMORY_TEMPORAL_CLI ?? join(repoRoot, "bin", "temporal");
    if (!existsSync(temporal)) throw new Error(`the Temporal CLI is missing at ${temporal}: run make temporal`);
    const args = ["dev", "--addr", `127.0.0.1:${this.port}`, "--data-dir", this.dataDir, "--temporal-ui-port", "0"];
    if (this.fakeModel) args.push("--fake-model");
    const p = spawn(this.bin, args, {
      env: { ...process.env, AGENTMEMORY_TEMPORAL_CLI: temporal },
      stdio: ["ignore", log, log],
    });
    this.proc = p;
    this.exited = new Promise((r) => p.once("exit", () => r()));
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (p.exitCode !== null) throw new Error(`agentmemory dev exited (${p.exitCode}); the end of ${this.logPath}:\n${logTail(this.logPath)}`);
      try {
        const r = await fetch(this.url + "/healthz");
        if (r.status === 200) return;
      } catch {
        // not yet listening
      }
      if (Date.now() > deadline) throw new Error("agentmemory dev did not answer /healthz within 60 s");
      await new Promise((r) => setTimeout(r, 150));
    }
  }

  /** SIGTERM and wait for the exit (SIGKILL after 30 s). */
  async stop(): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    p.kill("SIGTERM");
    const t = setTimeout(() => p.kill("SIGKILL"), 30_000);
    await this.exited;
    clearTimeout(t);
    this.proc = undefined;
  }

  /** The server's stdout and stderr, appended over restarts. */
  get logPath(): string {
    return join(dirname(this.dataDir), "server.log");
  }

  get running(): boolean {
    return !!this.proc && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.startProcess();
  }

  /** `agentmemory space create NAME`: keeps the admin key. */
  async createSpace(name: string): Promise<void> {
    const { stdout } = await run(this.bin, ["space", "create", name, "--direct-put", "--data-dir", this.dataDir]);
    const line = stdout.trim().split("\n").pop()!;
    const j = JSON.parse(line) as { admin_key: string; space_id: string };
    this.adminKey = j.admin_key;
    this.spaceId = j.space_id;
  }

  async admin(method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
    const init: RequestInit = { method, headers: { Authorization: "Bearer " + this.adminKey, "Content-Type": "application/json" } };
    if (body !== undefined) init.body = JSON.stringify(body);
    const r = await fetch(this.url + path, init);
    const text = await r.text();
    return { status: r.status, json: text ? JSON.parse(text) : undefined };
  }

  async putDocument(name: string, body: unknown): Promise<void> {
    const r = await this.admin("PUT", "/v1/documents/" + name, body);
    if (r.status !== 200) throw new Error(`PUT /v1/documents/${name}: ${r.status} ${JSON.stringify(r.json)}`);
  }

  /**
   * Creates knowledge base `name` with `settings`, submits `documents` and waits (60 s at most)
   * until each is ready; returns the base's id. Needs a server started with `fakeModel`.
   */
  async createKnowledgeBase(name: string, settings: unknown, documents: unknown[]): Promise<string> {
    const b = await this.admin("POST", "/v1/knowledge", { name, settings });
    if (b.status !== 201) throw new Error(`POST /v1/knowledge: ${b.status} ${JSON.stringify(b.json)}`);
    const kb = b.json.id as string;
    for (const d of documents) {
      const sub = await this.admin("POST", `/v1/knowledge/${kb}/documents`, d);
      if (sub.status !== 202) throw new Error(`POST /v1/knowledge/${kb}/documents: ${sub.status} ${JSON.stringify(sub.json)}`);
      const deadline = Date.now() + 60_000;
      for (;;) {
        const got = await this.admin("GET", `/v1/knowledge/${kb}/documents/${sub.json.document_id}`);
        if (got.json?.status === "ready") break;
        if (got.json?.status !== "pending" || Date.now() > deadline) throw new Error(`knowledge document of ${name}: ${got.status} ${JSON.stringify(got.json)}, want ready`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    return kb;
  }

  /** `agentmemory space create NAME` for another space: the shared one's admin key is kept. */
  async newSpace(name: string): Promise<SpaceRef> {
    const { stdout } = await run(this.bin, ["space", "create", name, "--direct-put", "--data-dir", this.dataDir]);
    const j = JSON.parse(stdout.trim().split("\n").pop()!) as { admin_key: string; space_id: string };
    return { spaceId: j.space_id, adminKey: j.admin_key };
  }

  /** A request with key; throws unless the answer's status is want. */
  async call(key: string, method: string, path: string, body: unknown, want: number): Promise<any> {
    const r = await fetch(this.url + path, { method, headers: { Authorization: "Bearer " + key, "Content-Type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
    const json = await r.json();
    if (r.status !== want) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(json)}, want ${want}`);
    return json;
  }

  /** Opens a bridge from source to reader (docs/boards.md "Bridges"): on each side a security person proposes it and a second approves; returns its id. It lists boards and, when given, knowledgeBases (base names of source). */
  async openBridge(source: SpaceRef, reader: SpaceRef, agents: string[], boards: { type: string; ids?: string }[], knowledgeBases?: string[]): Promise<string> {
    const terms: { [k: string]: unknown } = { from: source.spaceId, to: reader.spaceId, agents };
    if (boards.length > 0) terms.boards = boards;
    if (knowledgeBases && knowledgeBases.length > 0) terms.knowledge_bases = knowledgeBases;
    let n = 0;
    for (const side of [source, reader]) {
      const keys: string[] = [];
      for (let i = 0; i < 2; i++) keys.push((await this.call(side.adminKey, "POST", "/v1/keys", { kind: "person", name: `security-${n++}`, roles: ["security"] }, 201)).key);
      const prop = await this.call(keys[0], "POST", "/v1/bridges", terms, 202);
      await this.call(keys[1], "POST", `/v1/documents/bridges/changes/${prop.change_id}/approve`, undefined, 200);
      terms.id = prop.bridge.id;
    }
    return terms.id as string;
  }

  async mintKey(spec: KeySpec): Promise<string> {
    const r = await this.admin("POST", "/v1/keys", spec);
    if (r.status !== 201) throw new Error(`POST /v1/keys: ${r.status} ${JSON.stringify(r.json)}`);
    return r.json.key as string;
  }
}

/** A space of the server: its id and admin key. */
export interface SpaceRef {
  spaceId: string;
  adminKey: string;
}

/** The README's walk-through space: working memory and agent memory on, the shopping assistant's type. */
export async function walkthroughServer(): Promise<Server> {
  const s = await Server.start();
  await s.createSpace("sdk-ts");
  await s.putDocument("features", { agent_state: { enabled: true }, agent_memory: { enabled: true, writes: "agents", max_notes_per_source: 500 } });
  await s.putDocument("object-types", {
    types: [
      {
        type: "shopping_assistant_state",
        ownership: "agent",
        fields: { step: { type: "enum", values: ["greet", "sizes", "checkout", "done", "late", "one", "two", "new", "mine", "a", "b", "c"] }, offer: { type: "string" }, cart_note: { type: "text", pii: true } },
        agent_state: { scope: "conversation", max_bytes: 16384, write: "both" },
        retention: { state: "30d", cart_note: "7d" },
      },
    ],
  });
  return s;
}

export const ALL_SCOPES = ["agent_state", "agent_memory", "agent_memory:write"];

/** One request that went through a {@link CountingProxy}. */
export interface Exchange {
  method: string;
  /** The path without its query string. */
  route: string;
  status: number;
  ifNoneMatch: string | null;
}

/** A reverse proxy in front of the binary that records every request it forwards (CTX-4's request counts). */
export interface CountingProxy {
  url: string;
  exchanges: Exchange[];
  /** The exchanges of one route (e.g. "/v1/context"). */
  of(route: string): Exchange[];
  close(): Promise<void>;
}

/** Starts a {@link CountingProxy} on a free port forwarding to target (http://127.0.0.1:PORT). */
export async function countingProxy(target: string): Promise<CountingProxy> {
  const t = new URL(target);
  const exchanges: Exchange[] = [];
  const srv = createHttpServer((req, res) => {
    const up = httpRequest(
      { host: t.hostname, port: t.port, method: req.method, path: req.url, headers: req.headers },
      (upRes) => {
        const inm = req.headers["if-none-match"];
        exchanges.push({ method: req.method ?? "", route: (req.url ?? "").split("?")[0]!, status: upRes.statusCode ?? 0, ifNoneMatch: typeof inm === "string" ? inm : null });
        res.writeHead(upRes.statusCode ?? 502, upRes.headers);
        upRes.pipe(res);
      },
    );
    up.on("error", () => {
      res.writeHead(502);
      res.end();
    });
    req.pipe(up);
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", () => r()));
  const a = srv.address();
  if (!a || typeof a !== "object") throw new Error("proxy: no port");
  return {
    url: `http://127.0.0.1:${a.port}`,
    exchanges,
    of: (route) => exchanges.filter((e) => e.route === route),
    close: () => new Promise<void>((r) => srv.close(() => r())),
  };
}

/** A clock for the client's caches that moves only when told (milliseconds). */
export class FakeClock {
  t = Date.parse("2026-12-01T00:00:00Z");
  now = (): number => this.t;
  advance(seconds: number): void {
    this.t += seconds * 1000;
  }
}

/**
 * The integrations' space: agent memory and knowledge on (`--fake-model` embedder), the
 * walk-through's state type and the vocabulary the tests' tags use, one base "handbook"
 * readable by the space's agents. `kb` is its id.
 */
export async function integrationServer(): Promise<{ server: Server; kb: string }> {
  const s = await Server.start({ fakeModel: true });
  await s.createSpace("sdk-ts-integrations");
  await s.putDocument("features", { agent_state: { enabled: true }, agent_memory: { enabled: true, writes: "agents", max_notes_per_source: 500 }, knowledge: { enabled: true } });
  const kb = await s.createKnowledgeBase("handbook", { embedding_model: "sdk-ts-embed", top_k: 2, max_tokens: 600, readers: { space: true } }, [
    { source_uri: "kb://policies/refunds", title: "Refunds", version: "2026-01", format: "markdown", text: "# Refunds\n\nA refund goes back to the original card within five business days. Store credit is issued at once when the customer prefers it." },
    { source_uri: "kb://policies/shipping", title: "Shipping", version: "2026-02", format: "markdown", text: "# Shipping\n\nStandard parcels arrive in three to seven days. Express delivery arrives the next day when ordered before noon." },
  ]);
  return { server: s, kb };
}

/** Every scope an integration test's key holds: notes read and write, knowledge read. */
export const INTEGRATION_SCOPES = ["agent_memory", "agent_memory:write", "knowledge:read"];

/** The first index of each needle in text, asserting each is present and they come in this order. */
export function inOrder(text: string, needles: string[]): number[] {
  const at = needles.map((n) => text.indexOf(n));
  at.forEach((i, k) => {
    if (i < 0) throw new Error(`missing ${JSON.stringify(needles[k])} in ${JSON.stringify(text.slice(0, 400))}`);
  });
  for (let k = 1; k < at.length; k++) {
    if (!(at[k - 1]! < at[k]!)) throw new Error(`${JSON.stringify(needles[k - 1])} does not come before ${JSON.stringify(needles[k])}`);
  }
  return at;
}
