/// <reference types="node" />
// Offline verification of the receipt log's answers (issue 32), Node's standard library only
// (node:crypto): a checkpoint is a signed note (golang.org/x/mod/sumdb/note: the text of
// tlog.FormatTree, a blank line, signature lines "— agentmemory-receipts <base64 of a 4-byte
// key hash and a 64-byte Ed25519 signature>"); the tree is RFC 6962's (node hash
// SHA-256(0x01 || left || right)) and proofs are golang.org/x/mod/sumdb/tlog's, as the Go
// SDK's sdk/receiptlog and `agentmemory receipts verify-proof` check them. It is a separate
// entry point (@agentmemory/sdk/receiptlog) so that the client itself stays free of Node's
// modules.
import { createHash, createPublicKey, verify, type KeyObject } from "node:crypto";

/** The key name the receipt log's checkpoints are signed under. */
export const CHECKPOINT_KEY_NAME = "agentmemory-receipts";

const TREE_PREFIX = "go.sum database tree\n";
const SPKI_ED25519 = Buffer.from("302a300506032b6570032100", "hex");

/** A proof, a checkpoint or its signature does not verify. */
export class ProofError extends Error {
  override name = "ProofError";
}

/** Two signed checkpoints of the receipt log that cannot both hold (the log was rewritten). */
export class ForkError extends ProofError {
  override name = "ForkError";
}

/** A signed tree head (GET /v1/receipts/checkpoint): size, root hash (base64), signed note. */
export interface ReceiptCheckpoint {
  size: number;
  hash: string;
  note: string;
  at?: string;
}

/** GET /v1/receipts/{id}/proof's answer, the parts checked here (leaf_hash in hex). */
export interface ReceiptProof {
  leaf_hash: string;
  log?: { index: number; checkpoint: ReceiptCheckpoint; hashes: string[] } | null;
  [k: string]: unknown;
}

/** GET /v1/receipts/consistency's answer (hashes base64). */
export interface ReceiptConsistency {
  from: { size: number; hash: string };
  to: { size: number; hash: string };
  hashes: string[];
  checkpoint?: ReceiptCheckpoint;
}

/** A deployment's public key: its 4-byte note key hash and the Ed25519 key. */
export interface CheckpointKey {
  keyHash: Buffer;
  key: KeyObject;
}

/**
 * The keys of GET /v1/signing-keys's answer ({keys: [{public_key}]}, a list of its entries,
 * or a list of base64 strings: 32-byte Ed25519 keys). Throws ProofError on one that is not.
 */
export function publicKeys(signingKeys: { keys: { public_key: string }[] } | ({ public_key: string } | string)[]): CheckpointKey[] {
  const entries = Array.isArray(signingKeys) ? signingKeys : signingKeys.keys;
  return entries.map((e) => {
    const text = typeof e === "string" ? e : e.public_key;
    const raw = Buffer.from(text, "base64");
    if (raw.length !== 32 || raw.toString("base64") !== text) throw new ProofError(`${JSON.stringify(text)} is not an Ed25519 public key in base64`);
    const keyHash = sha256(Buffer.from(CHECKPOINT_KEY_NAME + "\n"), Buffer.from([1]), raw).subarray(0, 4);
    return { keyHash, key: createPublicKey({ key: Buffer.concat([SPKI_ED25519, raw]), format: "der", type: "spki" }) };
  });
}

function sha256(...parts: Buffer[]): Buffer {
  const h = createHash("sha256");
  for (const p of parts) h.update(p);
  return h.digest();
}

/** A 32-byte hash from its base64 text. */
function hash(text: unknown, what: string): Buffer {
  const raw = typeof text === "string" ? Buffer.from(text, "base64") : Buffer.alloc(0);
  if (raw.length !== 32 || raw.toString("base64") !== text) throw new ProofError(`${what} is not a 32-byte hash in base64`);
  return raw;
}

/** The text of note when one of its signature lines verifies under one of keys. */
function openNote(note: string, keys: CheckpointKey[]): string {
  const i = note.indexOf("\n\n");
  if (i < 0 || !note.endsWith("\n")) throw new ProofError("the checkpoint's note is malformed");
  const text = note.slice(0, i + 1);
  const prefix = "\u2014 " + CHECKPOINT_KEY_NAME + " ";
  for (const line of note.slice(i + 2).split("\n")) {
    if (!line.startsWith(prefix)) continue;
    const raw = Buffer.from(line.slice(prefix.length), "base64");
    if (raw.length !== 68) continue;
    const k = keys.find((k) => k.keyHash.equals(raw.subarray(0, 4)));
    if (k && verify(null, Buffer.from(text), k.key, raw.subarray(4))) return text;
  }
  throw new ProofError("the checkpoint's note is not signed by any of the keys given");
}

/** Checks that checkpoint's note is signed by one of keys (publicKeys) and states its size and root. */
export function openCheckpoint(checkpoint: ReceiptCheckpoint, keys: CheckpointKey[]): void {
  const text = openNote(String(checkpoint.note ?? ""), keys);
  const lines = text.slice(TREE_PREFIX.length).split("\n");
  if (!text.startsWith(TREE_PREFIX) || lines.length !== 3 || lines[2] !== "") throw new ProofError("the checkpoint's note is not a tree head");
  const root = hash(lines[0 + 1], "the note's root");
  if (!/^\d+$/.test(lines[0]) || Number(lines[0]) !== checkpoint.size || !root.equals(hash(checkpoint.hash, "the checkpoint's hash"))) {
    throw new ProofError("the checkpoint's note states another tree");
  }
}

const node = (l: Buffer, r: Buffer): Buffer => sha256(Buffer.from([1]), l, r);

/** The largest power of 2 less than n (n > 1). */
function maxpow2(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

function runRecord(p: Buffer[], lo: number, hi: number, n: number, leaf: Buffer): Buffer {
  const fail = () => new ProofError("the receipt is not in the checkpoint's tree");
  if (lo + 1 === hi) {
    if (p.length) throw fail();
    return leaf;
  }
  if (!p.length) throw fail();
  const k = maxpow2(hi - lo);
  const last = p[p.length - 1];
  if (n < lo + k) return node(runRecord(p.slice(0, -1), lo, lo + k, n, leaf), last);
  return node(last, runRecord(p.slice(0, -1), lo + k, hi, n, leaf));
}

function runTree(p: Buffer[], lo: number, hi: number, n: number, old: Buffer): [Buffer, Buffer] {
  const fail = () => new ForkError("the consistency proof does not verify");
  if (n === hi) {
    if (lo === 0) {
      if (p.length) throw fail();
      return [old, old];
    }
    if (p.length !== 1) throw fail();
    return [p[0], p[0]];
  }
  if (!p.length) throw fail();
  const k = maxpow2(hi - lo);
  const last = p[p.length - 1];
  if (n <= lo + k) {
    const [oh, th] = runTree(p.slice(0, -1), lo, lo + k, n, old);
    return [oh, node(th, last)];
  }
  const [oh, th] = runTree(p.slice(0, -1), lo + k, hi, n, old);
  return [node(last, oh), node(last, th)];
}

/**
 * Checks offline that proof puts its leaf hash (leaf_hash, hex) at log.index of the tree of
 * log.checkpoint, and that the checkpoint is signed by one of keys. The leaf hash is taken
 * as the proof gives it (recomputing it from the receipt is what `agentmemory receipts
 * verify-proof` adds). Throws ProofError.
 */
export function verifyReceipt(proof: ReceiptProof, keys: CheckpointKey[]): void {
  const log = proof.log;
  if (!log) throw new ProofError("the proof has no log part yet: ask again in a few seconds");
  const cp = log.checkpoint;
  openCheckpoint(cp, keys);
  const leaf = /^[0-9a-f]{64}$/.test(proof.leaf_hash ?? "") ? Buffer.from(proof.leaf_hash, "hex") : undefined;
  if (!leaf) throw new ProofError("the leaf hash is not a SHA-256 hash in hex");
  if (!Number.isSafeInteger(log.index) || log.index < 0 || log.index >= cp.size) throw new ProofError("the receipt is not in the checkpoint's tree");
  const hashes = (log.hashes ?? []).map((h) => hash(h, "a proof hash"));
  if (!runRecord(hashes, 0, cp.size, log.index, leaf).equals(hash(cp.hash, "the checkpoint's hash"))) {
    throw new ProofError("the receipt is not in the checkpoint's tree");
  }
}

/**
 * Checks offline that newer extends older (a checkpoint kept earlier; either order) through
 * consistency, both signed by one of keys. Throws ForkError when they cannot both hold,
 * ProofError otherwise.
 */
export function verifyConsistency(older: ReceiptCheckpoint, newer: ReceiptCheckpoint, consistency: ReceiptConsistency, keys: CheckpointKey[]): void {
  openCheckpoint(older, keys);
  openCheckpoint(newer, keys);
  if (older.size > newer.size) [older, newer] = [newer, older];
  const oldRoot = hash(older.hash, "a checkpoint's hash");
  const newRoot = hash(newer.hash, "a checkpoint's hash");
  if (older.size === newer.size) {
    if (!oldRoot.equals(newRoot)) throw new ForkError(`two trees of size ${older.size}`);
    return;
  }
  if (consistency.from?.size !== older.size || consistency.to?.size !== newer.size) {
    throw new ProofError(`the consistency proof is from ${consistency.from?.size} to ${consistency.to?.size}, not ${older.size} to ${newer.size}`);
  }
  if (older.size < 1) throw new ProofError("a tree of size 0 has no consistency proof");
  const hashes = (consistency.hashes ?? []).map((h) => hash(h, "a proof hash"));
  const [oh, th] = runTree(hashes, 0, newer.size, older.size, oldRoot);
  if (!oh.equals(oldRoot) || !th.equals(newRoot)) throw new ForkError("the consistency proof does not verify");
}
