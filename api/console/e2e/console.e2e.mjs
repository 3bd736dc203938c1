// Browser test of the Console in real Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core; no browser is ever downloaded). It builds and starts the real binary
// (`agentmemory dev --fake-model`), prepares data through the REST API, then in the browser:
// signs in, approves a distilled proposal and finds its note in the block preview, sees an
// edit with personal data refused inline, runs an erasure from its preview to the signed
// certificate, has a settings change proposed by one security person and approved by another
// on a space without direct PUT, and saves a screenshot of each screen in screenshots/.
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
const tmp = mkdtempSync(join(tmpdir(), "console-e2e-"));
const bin = join(tmp, "agentmemory");
const dataDir = join(tmp, "data");

function log(...a) { console.log("[e2e]", ...a); }

async function freePort() {
  return new Promise((ok, fail) => {
    const s = net.createServer();
    s.listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => ok(p)); });
    s.on("error", fail);
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

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

let browser;
let failed = false;
try {
  await until("the API", async () => (await fetch(base + "/healthz")).ok, 120000);
  log("API up on", base);
  const out = execFileSync(bin, ["space", "create", "e2e", "--direct-put", "--data-dir", dataDir], { env: process.env }).toString();
  const admin = /"admin_key":"([^"]+)"/.exec(out)[1];

  const api = async (method, path, body, key = admin) => {
    const res = await fetch(base + path, {
      method, headers: { Authorization: "Bearer " + key, ...(body ? { "Content-Type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : null;
  };

  await api("PUT", "/v1/documents/features", { agent_memory: { enabled: true }, agent_state: { enabled: true } });
  await api("PUT", "/v1/documents/object-types", { types: [{ type: "shop-bot", ownership: "agent",
    fields: { step: { type: "enum", values: ["greet", "sizes", "checkout", "done"] }, offer: { type: "string" }, cart_note: { type: "text", pii: true } },
    agent_state: { scope: "conversation", max_bytes: 16384, write: "both" }, retention: { state: "30d", cart_note: "7d" } }] });
  const bot = (await api("POST", "/v1/keys", { kind: "agent", agent: "shop-bot", vendor: "acme", scopes: ["agent_state", "agent_memory", "agent_memory:write"] })).key;
  await api("POST", "/v1/agent-memory/notes", { source_id: "shop-bot", kind: "procedure", title: "Validate the purchase first",
    body: "Before starting a return, validate the purchase with the order number.", tags: ["returns"] });
  await api("POST", "/v1/turns", { turns: [
    { conversation_id: "c-7", speaker: "customer", text: "My jeans came in the wrong size" },
    { conversation_id: "c-7", speaker: "agent", text: "I will start a return: first I validate the purchase" }] });
  const { proposal_id: prop } = await api("POST", "/v1/agent-memory/distill", { conversation_id: "c-7", source_id: "shop-bot" });
  await until("the distilled proposal", async () => (await api("GET", "/v1/agent-memory/proposals/" + prop)).status === "pending");
  log("proposal pending", prop);

  await api("POST", "/v1/profiles", { name: "Ana Souza", handles: ["email:ana@example.com", "phone:+55 11 98765-4321"] });
  await api("PUT", "/v1/agent-state", { scope: { kind: "conversation", id: "c-2" }, subject: "email:ana@example.com",
    body: { step: "sizes", cart_note: "gift for her mother" } }, bot);

  browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 860 } })).newPage();
  const nav = (name) => page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name, exact: true });
  const shot = async (name) => page.screenshot({ path: join(shots, name + ".png"), fullPage: true });

  // Sign in.
  await page.goto(base + "/console/login");
  await shot("login");
  await page.getByLabel("Key").fill(admin);
  await page.getByRole("button", { name: "Sign in" }).click();
  await nav("Proposals").click();
  await page.getByRole("heading", { name: "Waiting for review" }).waitFor();
  await shot("proposals");

  // Approve the distilled proposal; its note is in the block preview.
  await page.locator(`a[href="/console/proposals/${prop}"]`).first().click();
  const title = await page.getByLabel("Title").inputValue();
  assert.match(title, /fake model/);
  assert.ok(await page.getByText("My jeans came in the wrong size").isVisible(), "the evidence's masked turns are beside the proposal");
  await shot("proposal");
  await page.getByRole("button", { name: "Approve" }).click();
  await page.getByText("Proposal approved").or(page.getByText("Decision sent")).waitFor();
  await until("the approval", async () => (await api("GET", "/v1/agent-memory/proposals/" + prop)).status === "approved");
  await nav("Notes").click();
  await shot("notes");
  await page.getByRole("link", { name: "Block preview" }).click();
  await page.getByLabel("Agent").selectOption("shop-bot");
  await page.getByLabel("Tags").fill("fake-model");
  await page.getByRole("button", { name: "Preview" }).click();
  const block = await page.getByLabel("Block text").textContent();
  assert.ok(block.includes(title), "the approved note is in the block");
  assert.ok(await page.getByText("ETag").isVisible());
  await shot("block");

  // An edit with personal data is refused inline, the form kept.
  await nav("Notes").click();
  await page.getByRole("link", { name: "Validate the purchase first" }).click();
  await page.getByLabel("Body").fill("Write to ana@example.com before starting a return.");
  await page.getByRole("button", { name: "Save new version" }).click();
  await page.getByRole("alert").getByText("email").waitFor();
  assert.equal(await page.getByLabel("Body").inputValue(), "Write to ana@example.com before starting a return.");
  assert.ok(!page.url().includes("ana"), "no personal data in the URL");
  await shot("note-refused");

  // The profile's working-memory tab: sizes and dates, never the content.
  await nav("Profiles").click();
  await page.getByLabel("Profile id or customer handle").fill("phone:+55 11 98765-4321");
  await page.getByRole("button", { name: "Open" }).click();
  await page.getByRole("cell", { name: "shop-bot" }).waitFor();
  const tab = await page.locator("main").textContent();
  assert.ok(!tab.includes("gift for her mother") && !tab.includes("sizes"), "no state content on the profile page");
  await shot("profiles");

  // Export: start it, wait for the package, download it.
  await nav("Compliance").click();
  await page.locator("#x-subject").fill("email:ana@example.com");
  await page.getByRole("button", { name: "Start export" }).click();
  await page.getByText("Export started.").waitFor();
  await until("the export package", async () => {
    await page.goto(base + "/console/compliance");
    return page.getByRole("link", { name: "Download" }).isVisible();
  });
  const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("link", { name: "Download" }).click()]);
  assert.match(download.suggestedFilename(), /\.json$/);
  await shot("compliance-export");

  // Erasure: preview first, confirm, then the signed certificate.
  await nav("Compliance").click();
  await page.getByLabel("Subject handle").first().fill("email:ana@example.com");
  await page.getByRole("button", { name: "Preview erasure" }).click();
  await page.getByRole("button", { name: "Confirm erasure" }).waitFor();
  assert.ok(!page.url().includes("ana"), "no personal data in the URL");
  await shot("erasure-preview");
  await page.getByLabel(/I confirm this erasure/).check();
  await page.getByRole("button", { name: "Confirm erasure" }).click();
  await until("the certificate", async () => {
    await page.reload();
    return page.getByRole("heading", { name: "Certificate" }).isVisible();
  });
  assert.ok(await page.locator(".sig .badge.ok").isVisible(), "the certificate's signature checks");
  assert.ok(!page.url().includes("ana"));
  await shot("erasure-certificate");
  await nav("Compliance").click();
  await shot("compliance");

  // The remaining screens.
  await nav("Receipts").click();
  await page.getByRole("button", { name: "Verify" }).click();
  await page.getByText("The chain verifies").waitFor();
  await shot("receipts");
  await nav("Keys").click();
  await shot("keys");
  await nav("Settings").click();
  await shot("settings");
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByText("You are signed out.").waitFor();

  // Settings on a space without direct PUT: a two-person approved diff. Sol (security) proposes,
  // cannot approve her own change (the server refuses), Rui (security) approves and it applies.
  const gov = execFileSync(bin, ["space", "create", "governed", "--data-dir", dataDir], { env: process.env }).toString();
  const govAdmin = /"admin_key":"([^"]+)"/.exec(gov)[1];
  const sol = (await api("POST", "/v1/keys", { kind: "person", name: "Sol", roles: ["security"] }, govAdmin)).key;
  const rui = (await api("POST", "/v1/keys", { kind: "person", name: "Rui", roles: ["security"] }, govAdmin)).key;
  const signInAs = async (key) => {
    await page.goto(base + "/console/login");
    await page.getByLabel("Key").fill(key);
    await page.getByRole("button", { name: "Sign in" }).click();
    await nav("Settings").click();
    await page.getByRole("heading", { name: "Settings" }).waitFor();
  };
  await signInAs(sol);
  assert.equal(await page.getByRole("button", { name: /^Save/ }).count(), 0, "no direct save where direct PUT is off");
  await page.getByLabel("features (JSON)").fill(JSON.stringify({ agent_state: { enabled: true }, agent_memory: { enabled: true } }, null, 2));
  await page.getByRole("button", { name: "Propose change" }).first().click();
  await page.getByText("Change proposed").waitFor();
  assert.ok(await page.locator("pre.diff .add").first().isVisible(), "the diff's added lines are shown");
  assert.ok(await page.locator("pre.diff .del").first().isVisible(), "the diff's removed lines are shown");
  await page.getByText("You proposed this change").waitFor();
  await shot("settings-change-proposed");
  await page.getByRole("button", { name: "Approve" }).click();
  await page.getByRole("alert").first().getByText(/approved by another person than its proposer/).waitFor();
  assert.equal((await api("GET", "/v1/documents/features", null, govAdmin)).agent_state.enabled, false, "the proposer's approval applies nothing");
  await shot("settings-change-own-refused");
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByText("You are signed out.").waitFor();

  await signInAs(rui);
  await page.getByText("Proposed by Sol").waitFor();
  await shot("settings-change");
  await page.getByRole("button", { name: "Approve" }).click();
  await page.getByText("Change approved").waitFor();
  const applied = await api("GET", "/v1/documents/features", null, govAdmin);
  assert.equal(applied.agent_state.enabled, true, "the second person's approval applies the document");
  assert.equal(applied.agent_memory.enabled, true);
  await page.getByRole("cell", { name: "Rui" }).waitFor();

  // Sol proposes another change (through REST); Rui rejects it with a reason.
  await api("POST", "/v1/documents/features/changes", { agent_state: { enabled: true }, agent_memory: { enabled: false } }, sol);
  await page.reload();
  await page.getByLabel("Reason").fill("keep agent memory on for the pilot");
  await page.getByRole("button", { name: "Reject" }).click();
  await page.getByText("Change rejected.").waitFor();
  await page.getByText("Reason: keep agent memory on for the pilot").waitFor();
  assert.equal((await api("GET", "/v1/documents/features", null, govAdmin)).agent_memory.enabled, true, "a rejected change touches nothing");
  await shot("settings-change-decided");
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByText("You are signed out.").waitFor();
  log("ok: every step passed; screenshots in", shots);
} catch (e) {
  failed = true;
  console.error("[e2e] FAILED:", e);
  console.error("[e2e] server log (tail):\n" + serverLog.split("\n").slice(-40).join("\n"));
} finally {
  if (browser) await browser.close();
  try { process.kill(-server.pid, "SIGTERM"); } catch {}
  await sleep(1500);
  try { process.kill(-server.pid, "SIGKILL"); } catch {}
  rmSync(tmp, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
