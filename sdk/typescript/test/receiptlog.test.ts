// Issue 32: the receipt log's proofs, as the real binary answers them, verify offline with
// @agentmemory/sdk/receiptlog (node:crypto only), and tampered ones and a fork are refused.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  publicKeys, verifyReceipt, verifyConsistency, ProofError, ForkError,
  type CheckpointKey, type ReceiptCheckpoint, type ReceiptProof,
} from "../src/receiptlog.js";
import { Server } from "./harness.js";

let server: Server;
let keys: CheckpointKey[];
let old: ReceiptCheckpoint;
let proofs: ReceiptProof[];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function get(path: string): Promise<any> {
  const r = await server.admin("GET", path);
  return r.status === 200 ? r.json : undefined;
}

async function mint(n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const r = await server.admin("POST", "/v1/keys", { kind: "person", name: `p${Date.now()}-${i}`, roles: ["admin"] });
    assert.equal(r.status, 201);
  }
}

async function until<T>(f: () => Promise<T | undefined>, what: string): Promise<T> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const v = await f();
    if (v !== undefined) return v;
    await sleep(200);
  }
  throw new Error(`${what}: not within 20 s`);
}

const checkpointAfter = (size: number) =>
  until<ReceiptCheckpoint>(async () => {
    const cp = await get("/v1/receipts/checkpoint");
    return cp && cp.size > size ? cp : undefined;
  }, `a checkpoint past ${size}`);

function flip(b64: string): string {
  const raw = Buffer.from(b64, "base64");
  raw[0] ^= 1;
  return raw.toString("base64");
}

before(async () => {
  server = await Server.start();
  await server.createSpace("sdk-ts-receiptlog");
  await mint(3);
  keys = publicKeys(await get("/v1/signing-keys"));
  old = await checkpointAfter(0);
  const list = (await get("/v1/receipts?limit=1000")).receipts as { id: string }[];
  proofs = [];
  for (const r of list) {
    proofs.push(await until<ReceiptProof>(async () => {
      const p = await get(`/v1/receipts/${r.id}/proof`);
      return p?.log ? p : undefined;
    }, `the proof of ${r.id}`));
  }
});

after(async () => {
  await server?.stop();
});

test("inclusion proofs from the binary verify offline", () => {
  assert.ok(proofs.length >= 3);
  for (const p of proofs) verifyReceipt(p, keys);
});

test("tampered inclusion proofs are refused", () => {
  const p = proofs.reduce((a, b) => (b.log!.hashes.length > a.log!.hashes.length ? b : a));
  assert.ok(p.log!.hashes.length > 0, "a proof with hashes");
  const edit = (f: (c: ReceiptProof) => void): ReceiptProof => {
    const c = structuredClone(p);
    f(c);
    return c;
  };
  const size = p.log!.checkpoint.size;
  const cases: Record<string, ReceiptProof> = {
    "another leaf": edit((c) => { c.leaf_hash = createHash("sha256").update("other").digest("hex"); }),
    "another index": edit((c) => { c.log!.index = (c.log!.index + 1) % size; }),
    "a changed proof hash": edit((c) => { c.log!.hashes[0] = flip(c.log!.hashes[0]); }),
    "a hash left out": edit((c) => { c.log!.hashes.pop(); }),
    "a root the note does not state": edit((c) => { c.log!.checkpoint.hash = flip(c.log!.checkpoint.hash); }),
    "an edited note": edit((c) => {
      c.log!.checkpoint.note = c.log!.checkpoint.note.replace(`\n${size}\n`, `\n${size + 1}\n`);
      c.log!.checkpoint.size = size + 1;
    }),
  };
  for (const [name, c] of Object.entries(cases)) {
    assert.throws(() => verifyReceipt(c, keys), ProofError, name);
  }
  const other = publicKeys([createHash("sha256").update("k").digest("base64")]);
  assert.throws(() => verifyReceipt(p, other), ProofError, "another key");
});

test("a later checkpoint is consistent with a kept one; a fork is refused", async () => {
  await mint(2);
  const newer = await checkpointAfter(old.size);
  const cons = await get(`/v1/receipts/consistency?from=${old.size}&to=${newer.size}`);
  verifyConsistency(old, newer, cons, keys);
  verifyConsistency(newer, old, cons, keys);
  verifyConsistency(old, old, cons, keys);
  const bad = structuredClone(cons);
  bad.hashes[0] = flip(bad.hashes[0]);
  assert.throws(() => verifyConsistency(old, newer, bad, keys), ForkError);
  assert.throws(() => verifyConsistency({ ...old, hash: flip(old.hash) }, newer, cons, keys), ProofError);
});
