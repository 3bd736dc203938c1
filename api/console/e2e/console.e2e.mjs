// Browser test of the Console in real Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core; no browser is ever downloaded). It builds and starts the real binary
// (`agentmemory dev --fake-model`), prepares data through the REST API, then in the browser:
// signs in, approves a distilled proposal and finds its note in the block preview, sees an
// edit with personal data refused inline, runs an erasure from its preview to the signed
// certificate, has a settings change proposed by one security person and approved by another
// on a space without direct PUT, and saves a screenshot of each screen in screenshots/.
// Issue 27: a reload after minting a key mints nothing more; a notes search with "All agents";
// an approved proposal's approved text and diff; receipts newest first with a receipt's detail
// and proof; the certificate page and its signed download; the favicon; the 404 page's headers.
// Issue 33: Settings shows the export sinks with their cursor and lag.
// Issue 28: the block preview with a view, the task section and knowledge (the context call's
// texts and token counts), a refused budget, and a note's unknown tag.
import { chromium } from "playwright-core";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync, readFileSync } from "node:fs";
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

  await api("PUT", "/v1/documents/features", { agent_memory: { enabled: true }, agent_state: { enabled: true }, knowledge: { enabled: true } });
  await api("PUT", "/v1/documents/object-types", { types: [{ type: "shop-bot", ownership: "agent",
    fields: { step: { type: "enum", values: ["greet", "sizes", "checkout", "done"] }, offer: { type: "string" }, cart_note: { type: "text", pii: true } },
    agent_state: { scope: "conversation", max_bytes: 16384, write: "both" }, retention: { state: "30d", cart_note: "7d" } }],
    operations: ["returns", "exchange"], systems: ["fake-model"] });
  // Views order the block (issue 28): voice puts returns first, backoffice the model's drafts.
  await api("PUT", "/v1/documents/views", { views: [{ name: "voice", tags: ["returns", "exchange"] }, { name: "backoffice", tags: ["fake-model"] }] });
  const bot = (await api("POST", "/v1/keys", { kind: "agent", agent: "shop-bot", vendor: "acme", scopes: ["agent_state", "agent_memory", "agent_memory:write"] })).key;
  await api("POST", "/v1/agent-memory/notes", { source_id: "shop-bot", kind: "procedure", title: "Validate the purchase first",
    body: "Before starting a return, validate the purchase with the order number.", tags: ["returns"] });
  await api("POST", "/v1/agent-memory/notes", { kind: "pitfall", title: "Ask for the order number",
    body: "Without the order number no return can start: ask for it first.", tags: ["returns"] }, bot);
  // A typo in a tag: stored, and marked unknown on the note's page.
  const { id: typoNote } = await api("POST", "/v1/agent-memory/notes", { kind: "procedure", title: "Exchange before refund",
    body: "Offer an exchange for another size before a refund.", tags: ["exchnage"] }, bot);
  // A knowledge base the vendor may read, for the preview's evidence.
  const kb = (await api("POST", "/v1/knowledge", { name: "handbook", settings: { readers: { space: false, agents: [], vendors: ["acme"] } } })).id;
  const { document_id: kbDoc } = await api("POST", `/v1/knowledge/${kb}/documents`, {
    text: "Returns: a return starts within 30 days of delivery. Refunds of card payments reach the card within five business days.",
    source_uri: "kb://returns", version: "v1" });
  await until("the knowledge document", async () => (await api("GET", `/v1/knowledge/${kb}/documents/${kbDoc}`)).status === "ready");
  await api("POST", "/v1/turns", { turns: [
    { conversation_id: "c-7", speaker: "customer", text: "My jeans came in the wrong size" },
    { conversation_id: "c-7", speaker: "agent", text: "I will start a return: first I validate the purchase" }] });
  const { proposal_id: prop } = await api("POST", "/v1/agent-memory/distill", { conversation_id: "c-7", source_id: "shop-bot" });
  await until("the distilled proposal", async () => (await api("GET", "/v1/agent-memory/proposals/" + prop)).status === "pending");
  log("proposal pending", prop);

  // Written before her profile existed, without subject: only her name ties it to her (issue 29 §1b).
  await api("PUT", "/v1/agent-state", { scope: { kind: "conversation", id: "c-9" }, body: { step: "sizes", cart_note: "ana souza wants gift wrap" } }, bot);
  await api("POST", "/v1/profiles", { name: "Ana Souza", handles: ["email:ana@example.com", "phone:+55 11 98765-4321"] });
  await api("PUT", "/v1/agent-state", { scope: { kind: "conversation", id: "c-2" }, subject: "email:ana@example.com",
    body: { step: "sizes", cart_note: "gift for her mother" } }, bot);

  browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 860 } })).newPage();
  const missing = []; // every 404 the browser meets on its own (the favicon was one, issue 27)
  page.on("response", (r) => { if (r.status() === 404 && !r.url().includes("/nope")) missing.push(r.url()); });
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
  const proposedBody = await page.getByLabel("Body").inputValue();
  const approvedBody = proposedBody + " Check the order number first.";
  await page.getByLabel("Body").fill(approvedBody);
  await page.getByRole("button", { name: "Approve" }).click();
  await page.getByText("Proposal approved").or(page.getByText("Decision sent")).waitFor();
  await until("the approval", async () => (await api("GET", "/v1/agent-memory/proposals/" + prop)).status === "approved");
  // The decided proposal shows what was approved, and the word diff against the proposal.
  await until("the approved note on the proposal page", async () => {
    await page.goto(base + "/console/proposals/" + prop);
    return page.getByRole("heading", { name: /Approved note/ }).isVisible();
  });
  assert.equal(await page.locator(".card.approved pre.body").textContent(), approvedBody, "the approved text, not the proposed one");
  assert.match(await page.locator("dl.wdiff ins").first().textContent(), /Check the order number first/, "the reviewer's words are marked added");
  await shot("proposal-approved-diff");
  await nav("Notes").click();
  await shot("notes");
  // A search with "All agents" (the default) searches across agents.
  await page.getByLabel("Word").fill("order number");
  await page.getByRole("button", { name: "Filter" }).click();
  await page.getByRole("link", { name: "Ask for the order number" }).waitFor();
  assert.equal(await page.getByRole("alert").count(), 0, "the search is not refused");
  await shot("notes-search");
  // The block preview (issue 28): a view, the task's object types, the task section and
  // knowledge; it shows the context call's texts and token counts against the budget.
  await page.getByRole("link", { name: "Block preview" }).click();
  await page.getByLabel("Agent", { exact: true }).selectOption("shop-bot");
  await page.getByLabel("View", { exact: true }).selectOption("voice");
  await page.getByRole("checkbox", { name: "returns", exact: true }).check();
  await page.getByLabel("Max tokens").fill("1200");
  await page.getByLabel("Block share").fill("600");
  await page.getByLabel(/Include agent memory/).check();
  await page.getByLabel("Knowledge base").selectOption({ label: "handbook" });
  await page.getByLabel("Query").fill("refund to the card");
  await page.getByRole("button", { name: "Preview" }).click();
  const block = await page.getByLabel("System block text").textContent();
  assert.ok(block.includes(title), "the approved note is in the block");
  const context = await page.getByLabel("Context text").textContent();
  assert.ok(context.includes("five business days"), "the knowledge evidence is in the context");
  assert.ok(context.includes("Ask for the order number"), "the task section holds the notes tagged returns");
  assert.ok(!page.url().includes("refund"), "the query is not in the URL");
  const rowOf = async (part) => Number(await page.locator("table.tokens tr", { has: page.getByRole("rowheader", { name: part, exact: true }) }).locator("td.num").textContent());
  const [sys, task, know, total] = [await rowOf("System block"), await rowOf("Task notes"), await rowOf("Knowledge"), await rowOf("Total")];
  assert.ok(sys > 0 && task > 0 && know > 0 && total <= 1200 && total >= sys + task + know, `token counts ${sys} ${task} ${know} ${total}`);
  const voiceOrder = await page.locator("ol.delivered").first().locator("a").allTextContents();
  assert.ok(voiceOrder.indexOf("Ask for the order number") < voiceOrder.indexOf(title), "voice: the notes tagged returns first");
  assert.ok(await page.getByText("ETag").isVisible());
  assert.match(await page.locator("p.receipt-note").textContent(), /leaves one context\.read receipt/, "the page says a preview leaves a receipt");
  await shot("block");
  await page.getByLabel("View", { exact: true }).selectOption("backoffice");
  await page.getByRole("button", { name: "Preview" }).click();
  const backOrder = await page.locator("ol.delivered").first().locator("a").allTextContents();
  assert.equal(backOrder[0], title, "backoffice: the model's draft first");
  // A block share over the budget is refused, naming the field; the form is kept.
  await page.getByLabel("Max tokens").fill("100");
  await page.getByLabel("Block share").fill("300");
  await page.getByRole("button", { name: "Preview" }).click();
  await page.getByRole("alert").getByText(/Block share: block_max_tokens is at most max_tokens/).waitFor();
  assert.equal(await page.getByLabel("View", { exact: true }).inputValue(), "backoffice");
  await shot("block-refused");
  // A note's tag outside the space's vocabulary is marked on its page.
  await page.goto(base + "/console/notes/" + typoNote);
  await page.getByText("Unknown tag:").waitFor();
  await shot("note-unknown-tag");

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
  assert.ok(await page.getByRole("cell", { name: "state", exact: true }).first().isVisible(), "the stores are listed");
  assert.ok((await page.locator("td .badge.ok", { hasText: "nothing left" }).count()) > 0, "each store's probe result");
  await shot("erasure-certificate");
  // The residue found by her name only: a person decides it, receipted (issue 29 §1b).
  await page.getByRole("heading", { name: "Residue to decide" }).waitFor();
  assert.ok(await page.getByText("completed_with_residue").first().isVisible(), "never a plain completed");
  await page.getByRole("heading", { name: "Residue to decide" }).scrollIntoViewIfNeeded();
  await shot("erasure-residue");
  await page.getByRole("button", { name: "Not this subject" }).first().click();
  await page.getByText("Residue decided (receipted).").waitFor();
  assert.ok(await page.getByText("not_subject").first().isVisible(), "the decision is shown");
  await shot("erasure-residue-decided");
  const [cert] = await Promise.all([page.waitForEvent("download"), page.getByRole("link", { name: "Download signed certificate" }).click()]);
  assert.match(cert.suggestedFilename(), /^certificate-er_[0-9a-f]+\.json$/);
  const signed = JSON.parse(readFileSync(await cert.path(), "utf8"));
  assert.equal(signed.certificate.type, "erasure_certificate");
  assert.equal(signed.signature.algorithm, "Ed25519");
  await nav("Compliance").click();
  await shot("compliance");

  // The remaining screens.
  await nav("Receipts").click();
  await page.getByLabel("Kind").selectOption("admin");
  await page.getByRole("button", { name: "Filter" }).click();
  await page.getByRole("button", { name: "Verify the chain" }).click();
  await page.getByText("The chain verifies").waitFor();
  assert.ok(page.url().includes("kind=admin"), "Verify keeps the filter");
  const seqs = (await page.locator("table.receipts tbody td.num").allTextContents()).map(Number);
  assert.ok(seqs.length > 1 && seqs.every((n, i) => i === 0 || seqs[i - 1] > n), "newest first");
  await shot("receipts");
  const byBot = page.locator("tr", { hasText: "agent shop-bot (acme)" }).filter({ hasText: "note created" }).first();
  await byBot.getByRole("link", { name: /Open receipt/ }).click();
  await page.getByRole("heading", { name: "note created" }).waitFor();
  assert.ok(await page.locator(".badge.ok", { hasText: "proof verifies" }).isVisible(), "the receipt's inclusion proof verifies");
  assert.ok(await page.getByText("agent shop-bot (acme)").first().isVisible());
  await shot("receipt-detail");
  await page.locator(".crumbs a").click();
  assert.ok(page.url().includes("kind=admin"), "back to the filtered list");

  // Keys: minted, shown once after the redirect; a reload mints nothing and shows it no more.
  await nav("Keys").click();
  await page.getByLabel("Name").fill("Nia");
  await page.getByRole("checkbox", { name: "reviewer" }).first().check();
  await page.getByRole("button", { name: "Mint person key" }).click();
  const minted = await page.getByLabel("New key").textContent();
  assert.match(minted, /^am_/);
  await shot("keys-minted");
  await page.reload();
  assert.equal(await page.getByLabel("New key").count(), 0, "the key is shown once");
  await page.goto(base + "/console/keys");
  assert.equal(await page.getByRole("cell", { name: "Nia", exact: true }).count(), 1, "one key named Nia, however often the page reloads");
  await shot("keys");

  // Usage (issue 34 §1): each quota with its use and limit, and the 30-day charts drawn as
  // inline SVG by the server (no script on the page).
  await nav("Usage").click();
  await page.getByRole("heading", { name: "Usage" }).waitFor();
  const turnsRow = page.getByRole("row").filter({ has: page.getByText("turns_per_space", { exact: true }) });
  assert.match(await turnsRow.textContent(), /space\s*2\s*1,000,000/, "the space's 2 turns of the default 1,000,000");
  assert.equal(await page.locator("svg.chart").count(), 5, "one chart per space-wide series");
  assert.ok(await page.getByRole("img", { name: "turns over the last 30 days" }).isVisible());
  assert.equal(await page.locator("script").count(), 0);
  await shot("usage");

  // The 404 page of a note id that does not exist carries the Console's security headers.
  const nf = await page.goto(base + "/console/notes/nope");
  assert.equal(nf.status(), 404);
  assert.match(nf.headers()["content-security-policy"], /default-src 'none'/);
  assert.equal(nf.headers()["x-frame-options"], "DENY");
  const nf2 = await page.goto(base + "/console/nope");
  assert.equal(nf2.status(), 404);
  assert.equal(nf2.headers()["x-frame-options"], "DENY");
  await shot("not-found");
  assert.equal((await fetch(base + "/favicon.ico")).status, 200);
  assert.deepEqual(missing, [], "no page met a 404 (favicon included)");
  await nav("Settings").click();
  await shot("settings");
  // Export sinks (issue 33): a directory sink added to features shows on Settings with its
  // acknowledged cursor and lag once its workflow (started on the next reconcile pass) delivered.
  assert.ok(await page.getByText("No export sinks").isVisible(), "no sinks yet");
  await api("PUT", "/v1/documents/features", { agent_memory: { enabled: true }, agent_state: { enabled: true }, knowledge: { enabled: true },
    export: { sinks: [{ name: "lake", kind: "directory" }] } });
  const sinkRow = page.locator("#export-sinks table.sinks tbody tr", { has: page.locator("code", { hasText: "lake" }) });
  await until("the sink's first delivery on Settings", async () => {
    await page.reload();
    return (await sinkRow.count()) === 1 && (await sinkRow.locator(".badge.ok").count()) === 1;
  });
  const [cursor, lag] = (await sinkRow.locator("td.num").allTextContents()).map(Number);
  assert.ok(cursor > 0, `the sink acknowledged a cursor (${cursor})`);
  assert.ok(lag >= 0 && Number.isInteger(lag), `the sink's lag is shown (${lag})`);
  assert.match(await page.locator("#export-sinks h2").textContent(), /feed head \d+/);
  await page.locator("#export-sinks").scrollIntoViewIfNeeded();
  await shot("settings-sinks");
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
