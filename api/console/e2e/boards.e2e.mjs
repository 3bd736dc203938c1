// Browser test of the Console's Boards and Bridges screens (issue 31) in real Chromium
// (Debian's /usr/bin/chromium, driven by playwright-core; no browser is ever downloaded). It
// builds and starts the real binary, prepares a space with a board type, grants and boards
// through the REST API, then in the browser: reads the type's rules and the boards' metadata
// (never content), grants and revokes; proposes a bridge as one security person, is refused
// approving it herself, has a second person approve it, sees it await the other space and
// become active once that side approved the same bridge, and removes it. Screenshots land in
// screenshots/ (boards*.png, bridges*.png).
import { chromium } from "playwright-core";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import net from "node:net";
import assert from "node:assert/strict";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "../../..");
const shots = join(here, "screenshots");
mkdirSync(shots, { recursive: true });
const tmp = mkdtempSync(join(tmpdir(), "console-boards-e2e-"));
const bin = join(tmp, "agentmemory");
const dataDir = join(tmp, "data");

function log(...a) { console.log("[e2e boards]", ...a); }
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function freePort() {
  return new Promise((ok, fail) => {
    const s = net.createServer();
    s.listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => ok(p)); });
    s.on("error", fail);
  });
}

async function until(what, fn, timeoutMs = 90000) {
  const end = Date.now() + timeoutMs;
  let last;
  while (Date.now() < end) {
    try { const v = await fn(); if (v) return v; } catch (e) { last = e; }
    await sleep(500);
  }
  throw new Error(`timed out waiting for ${what}${last ? ": " + last.message : ""}`);
}

log("building the binary");
execFileSync("go", ["build", "-o", bin, "./cmd/agentmemory"], { cwd: repo, stdio: "inherit" });
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const server = spawn(bin, ["dev", "--addr", `127.0.0.1:${port}`, "--data-dir", dataDir, "--fake-model", "--temporal-ui-port", "0"], {
  env: { ...process.env, AGENTMEMORY_TEMPORAL_CLI: join(repo, "bin", "temporal") },
  stdio: ["ignore", "pipe", "pipe"], detached: true,
});
let serverLog = "";
server.stdout.on("data", (d) => { serverLog += d; });
server.stderr.on("data", (d) => { serverLog += d; });

const createSpace = (name, direct) => JSON.parse(execFileSync(bin, ["space", "create", name, ...(direct ? ["--direct-put"] : []), "--data-dir", dataDir], { env: process.env }).toString().trim().split("\n").pop());

let browser;
let failed = false;
try {
  await until("the API", async () => (await fetch(base + "/healthz")).ok, 120000);
  const api = async (method, path, body, key) => {
    const res = await fetch(base + path, {
      method, headers: { Authorization: "Bearer " + key, ...(body ? { "Content-Type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : null;
  };
  const ops = createSpace("operations", true);
  const partner = createSpace("partner", false);
  const admin = ops.admin_key;
  await api("PUT", "/v1/documents/object-types", { types: [{
    type: "findings", ownership: "shared",
    fields: {
      title: { type: "string", conflict: { rule: "reject" } },
      owner: { type: "string", conflict: { rule: "theirs" } },
      tags: { type: "array", conflict: { rule: "union" } },
      severity: { type: "integer", conflict: { rule: "max" } },
      hits: { type: "integer", conflict: { rule: "sum" } },
      notes: { type: "object", conflict: { rule: "merge_by_key", then: "ours" } },
      summary: { type: "string", conflict: { rule: "cel", expr: "size(ours) >= size(theirs) ? ours : theirs" } },
      contact: { type: "text", pii: true },
      customer: { type: "string", subject: true },
    },
    retention: { contact: "7d" }, board: { history: 64 },
  }] }, admin);
  const agent = async (name, vendor, space = ops) => (await api("POST", "/v1/keys", { kind: "agent", agent: name, vendor, scopes: [] }, space.admin_key)).key;
  const person = async (name, roles, space = ops) => (await api("POST", "/v1/keys", { kind: "person", name, roles }, space.admin_key)).key;
  const alice = await agent("alice", "acme");
  const bob = await agent("bob", "acme");
  await api("POST", "/v1/boards/findings/grants", { agent: "alice", access: "read_write", boards: "incident-*" }, admin);
  await api("POST", "/v1/boards/findings/grants", { agent: "bob", access: "read_write" }, admin);
  await api("PUT", "/v1/boards", { type: "findings", id: "incident-42", if_version: 0, body: { title: "disk full on db-7", tags: ["db"], hits: 1, contact: "call the on-call lead" } }, alice);
  await api("PUT", "/v1/boards", { type: "findings", id: "incident-42", if_version: 0, body: { hits: 2, tags: ["storage"] } }, bob);
  await api("PUT", "/v1/boards", { type: "findings", id: "incident-43", if_version: 0, body: { title: "latency spike", severity: 2 } }, alice);
  await api("PUT", "/v1/boards", { type: "findings", id: "audit-7", if_version: 0, body: { title: "quarterly access review" } }, bob);
  const sol = await person("Sol", ["security"]);
  const ana = await person("Ana", ["security"]);
  const rui = await person("Rui", ["security"], partner);
  const eva = await person("Eva", ["security"], partner);
  const triage = await agent("triage", "partner-ai", partner);

  browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 860 } })).newPage();
  const nav = (name) => page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name, exact: true });
  const shot = async (name) => page.screenshot({ path: join(shots, name + ".png"), fullPage: true });
  const signInAs = async (key, screen) => {
    await page.goto(base + "/console/login");
    await page.getByLabel("Key").fill(key);
    await page.getByRole("button", { name: "Sign in" }).click();
    await nav(screen).click();
    await page.getByRole("heading", { name: screen, exact: true }).waitFor();
  };
  const signOut = async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByText("You are signed out.").waitFor();
  };

  // Boards: the type's rules, the grants, the boards' metadata; never content.
  await signInAs(admin, "Boards");
  const rules = page.getByRole("table", { name: "Fields of findings" });
  assert.match(await rules.getByRole("row").filter({ hasText: "summary" }).textContent(), /cel\s*size\(ours\) >= size\(theirs\) \? ours : theirs/);
  assert.match(await rules.getByRole("row").filter({ hasText: "notes" }).textContent(), /merge_by_key\s*then\s*ours/);
  const boardRows = page.getByRole("table", { name: "Boards of findings" }).getByRole("row");
  assert.equal(await boardRows.count(), 4, "a header and three boards");
  assert.match(await boardRows.nth(1).textContent() + await boardRows.nth(2).textContent() + await boardRows.nth(3).textContent(), /alice\s*bob/, "incident-42's writers");
  const text = await page.locator("main").textContent();
  for (const secret of ["disk full", "incident-42", "on-call", "quarterly"]) assert.ok(!text.includes(secret), `the screen never shows ${secret}`);
  assert.equal(await page.locator("script").count(), 0);
  await shot("boards");

  await page.getByLabel("Grant to").selectOption("vendor");
  await page.getByLabel("Agent or vendor name").fill("partner-ai");
  await page.getByLabel("Access", { exact: true }).selectOption("read");
  await page.getByLabel("Board ids (glob, empty: all)").fill("incident-*");
  await page.getByRole("button", { name: "Grant", exact: true }).click();
  await page.getByText("Grant added").waitFor();
  const grants = page.getByRole("table", { name: "Grants of findings" }).getByRole("row");
  assert.equal(await grants.count(), 4, "a header and three grants");
  await shot("boards-granted");
  await grants.filter({ hasText: "bob" }).getByRole("button", { name: /^Revoke/ }).click();
  await page.getByText("Grant revoked").waitFor();
  assert.equal(await page.getByRole("table", { name: "Grants of findings" }).getByRole("row").count(), 3);
  await assert.rejects(api("POST", "/v1/boards/read", { type: "findings", id: "audit-7" }, bob), /403/, "bob's grant is revoked");
  await signOut();

  // Bridges: Sol proposes, cannot approve herself; Ana approves; the partner approves the same bridge.
  await signInAs(sol, "Bridges");
  await shot("bridges-empty");
  await page.getByLabel("Direction").selectOption("out");
  await page.getByLabel("Other space's id").fill(partner.space_id);
  await page.getByLabel(/^Agents of the reading space/).fill("triage");
  await page.getByLabel(/^Boards that may cross/).fill("findings:incident-*");
  await page.getByLabel(/^Knowledge bases that may cross/).fill("handbook");
  await page.getByRole("button", { name: "Propose bridge" }).click();
  await page.getByText("Bridge proposed").waitFor();
  await page.getByText("You proposed this bridge").waitFor();
  assert.ok(await page.locator("pre.diff .add").first().isVisible(), "the proposal's diff");
  await page.getByRole("button", { name: "Approve" }).click();
  await page.getByRole("alert").first().getByText(/approved by another person than its proposer/).waitFor();
  await shot("bridges-own-refused");
  await signOut();

  await signInAs(ana, "Bridges");
  await page.getByText("Proposed by Sol").waitFor();
  await shot("bridges-proposal");
  await page.getByRole("button", { name: "Approve" }).click();
  await page.getByText("Bridge approved on this side").waitFor();
  await page.getByText("awaiting the other space").waitFor();
  const bridge = /br_[A-Za-z0-9_-]+/.exec(await page.getByRole("table", { name: "Bridges" }).textContent())[0];
  const read = () => fetch(base + "/v1/boards/read", { method: "POST", headers: { Authorization: "Bearer " + triage, "Content-Type": "application/json" },
    body: JSON.stringify({ type: "findings", id: "incident-42", space: ops.space_id }) });
  assert.equal((await read()).status, 404, "one side only: no bridge");
  const prop = await api("POST", "/v1/bridges", { id: bridge, from: ops.space_id, to: partner.space_id, agents: ["triage"], boards: [{ type: "findings", ids: "incident-*" }], knowledge_bases: ["handbook"] }, rui);
  await api("POST", `/v1/documents/bridges/changes/${prop.change_id}/approve`, null, eva);
  await page.goto(base + "/console/bridges");
  await page.getByText("active", { exact: true }).waitFor();
  assert.match(await page.getByRole("table", { name: "Bridges" }).textContent(), /handbook/, "the knowledge bases that cross");
  const crossed = await read();
  assert.equal(crossed.status, 200, "both sides: the partner's triage reads");
  assert.equal((await crossed.json()).body.title, "disk full on db-7");
  await shot("bridges");
  await page.getByRole("button", { name: `Remove ${bridge}` }).click();
  await page.getByText("Bridge removed").waitFor();
  assert.equal((await read()).status, 404, "removed from one side: closed on the next request");
  await shot("bridges-removed");
  await signOut();
  log("ok: every step passed; screenshots in", shots);
} catch (e) {
  failed = true;
  console.error("[e2e boards] FAILED:", e);
  console.error("[e2e boards] server log (tail):\n" + serverLog.split("\n").slice(-40).join("\n"));
} finally {
  if (browser) await browser.close();
  try { process.kill(-server.pid, "SIGTERM"); } catch {}
  await sleep(1500);
  try { process.kill(-server.pid, "SIGKILL"); } catch {}
  rmSync(tmp, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
