// The SDK's wire types (src/types.ts) cannot drift from api/openapi.json: this test
// generates TypeScript types from the document's component schemas and compiles assertions
// that each SDK type has exactly the schema's members and is mutually assignable with the
// generated type (so a member's type, optionality or enum change fails). A mutated document
// is compiled too, to show the check catches a drift.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { repoRoot } from "./harness.js";
import { openapi } from "./openapi.js";

const pkg = join(repoRoot, "sdk", "typescript");

function tsType(s: any, depth = 0): string {
  if (s.$ref) return String(s.$ref).split("/").pop()!;
  if (s.allOf) return s.allOf.map((x: any) => `(${tsType(x, depth)})`).join(" & ");
  if (s.enum) return s.enum.map((v: unknown) => JSON.stringify(v)).join(" | ");
  const types: string[] = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  if (types.length === 0) return "JsonValue";
  return types
    .map((t) => {
      switch (t) {
        case "string":
          return "string";
        case "integer":
        case "number":
          return "number";
        case "boolean":
          return "boolean";
        case "null":
          return "null";
        case "array":
          return `Array<${s.items ? tsType(s.items, depth) : "JsonValue"}>`;
        case "object": {
          if (!s.properties) return "{ [member: string]: JsonValue }";
          const req = new Set<string>(s.required ?? []);
          const members = Object.entries<any>(s.properties).map(([k, v]) => `${JSON.stringify(k)}${req.has(k) ? "" : "?"}: ${tsType(v, depth + 1)}`);
          return `{ ${members.join("; ")} }`;
        }
        default:
          throw new Error(`unknown type ${t}`);
      }
    })
    .join(" | ");
}

export function generate(doc: any): string {
  const out = ['import type { JsonValue } from "../../src/types.js";'];
  for (const [name, s] of Object.entries<any>(doc.components.schemas)) out.push(`export type ${name} = ${tsType(s)};`);
  return out.join("\n") + "\n";
}

// [SDK type, schema, the SDK type is the non-null part of a nullable schema]
const PAIRS: [string, string, boolean?][] = [
  ["Scope", "Scope"],
  ["StateWrite", "StateWrite"],
  ["StateWriteResult", "StateWriteResult"],
  ["StateRead", "StateRead"],
  ["StateReadResult", "StateReadResult"],
  ["Evidence", "Evidence", true],
  ["NoteInput", "NoteInput"],
  ["Note", "Note"],
  ["ProposalAccepted", "ProposalAccepted"],
  ["Block", "Block"],
  ["SearchResult", "SearchResult"],
  ["RetrievedChunk", "RetrievedChunk"],
  ["Retrieval", "Retrieval"],
  ["RetrieveFilters", "RetrieveFilters"],
  ["ContextRequest", "ContextRequest"],
  ["ContextAnswer", "ContextAnswer"],
  ["Run", "Run"],
  ["RunReport", "RunReport"],
  ["FeedRecord", "FeedRecord"],
  ["AgentMemoryExportStatus", "AgentMemoryExportStatus"],
  ["Turn", "Turn"],
  ["TurnsReadRequest", "TurnsReadRequest"],
  ["TurnsPage", "TurnsPage"],
  ["ErrorBody", "Error"],
  ["BoardOutcome", "BoardOutcome"],
  ["BoardWriteResult", "BoardWriteResult"],
  ["BoardRead", "Board"],
  ["LeaseInfo", "Lease"],
  ["LeaseProof", "LeaseProof"],
];

function checks(): string {
  const lines = [
    'import type * as S from "../../src/types.js";',
    'import type * as G from "./openapi.gen.js";',
    "type SameKeys<A, B> = [keyof A] extends [keyof B] ? ([keyof B] extends [keyof A] ? true : false) : false;",
    "type Mutual<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;",
  ];
  for (const [sdk, schema, nullable] of PAIRS) {
    const g = nullable ? `NonNullable<G.${schema}>` : `G.${schema}`;
    lines.push(`export const keys_${sdk}: SameKeys<S.${sdk}, ${g}> = true;`);
    lines.push(`export const types_${sdk}: Mutual<S.${sdk}, ${g}> = true;`);
  }
  return lines.join("\n") + "\n";
}

function compile(dir: string, doc: any): { ok: boolean; output: string } {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "openapi.gen.ts"), generate(doc));
  writeFileSync(join(dir, "check.ts"), checks());
  const tsc = join(pkg, "node_modules", "typescript", "bin", "tsc");
  const config = {
    compilerOptions: { noEmit: true, strict: true, target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", skipLibCheck: true, types: [] },
    files: ["check.ts"],
  };
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify(config));
  try {
    const output = execFileSync(process.execPath, [tsc, "-p", join(dir, "tsconfig.json")], { cwd: pkg, encoding: "utf8" });
    return { ok: true, output };
  } catch (e: any) {
    return { ok: false, output: String(e.stdout ?? "") + String(e.stderr ?? "") };
  }
}

test("src/types.ts matches the types generated from api/openapi.json", () => {
  const r = compile(join(pkg, "build", "gen"), openapi);
  assert.ok(r.ok, r.output);
});

test("the check catches a drift (a mutated document fails to compile)", () => {
  const doc = JSON.parse(JSON.stringify(openapi));
  doc.components.schemas.StateWriteResult.properties.reason.enum.push("queued_elsewhere");
  doc.components.schemas.Block.required = doc.components.schemas.Block.required.filter((x: string) => x !== "tokens");
  doc.components.schemas.Note.properties.pinned = { type: "boolean" };
  const r = compile(join(pkg, "build", "gen-mutated"), doc);
  assert.equal(r.ok, false);
  const lines = checks().split("\n");
  const failed = [...r.output.matchAll(/check\.ts\((\d+),/g)].map((m) => /const (\w+):/.exec(lines[Number(m[1]) - 1] ?? "")?.[1]);
  assert.deepEqual(failed.sort(), ["keys_Note", "types_Block", "types_StateWriteResult"], r.output);
});

test("the published declarations compile for a consumer with lib ES2022 only (no DOM, no Node types)", () => {
  const dir = join(pkg, "build", "consumer");
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "consumer.ts"),
    [
      'import { AgentMemoryClient, DELETE, systemPrompt, type WriteResult, type RememberResult } from "@agentmemory/sdk";',
      'const c = new AgentMemoryClient({ baseUrl: "http://127.0.0.1:8080", key: "k" });',
      'const conv = c.conversation("c-1");',
      "export const w: Promise<WriteResult> = conv.agentState.put({ offer: DELETE }, { mode: \"merge_by_key\", ifVersion: 1 });",
      'export const r: Promise<RememberResult> = conv.remember({ kind: "pitfall", title: "t", body: "b", tags: ["x"] });',
      'export const s: string = systemPrompt("i", { text: "n" }, "c");',
    ].join("\n"),
  );
  const config = { compilerOptions: { noEmit: true, strict: true, target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", lib: ["ES2022"], types: [] }, files: ["consumer.ts"] };
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify(config));
  const tsc = join(pkg, "node_modules", "typescript", "bin", "tsc");
  try {
    execFileSync(process.execPath, [tsc, "-p", join(dir, "tsconfig.json")], { cwd: pkg, encoding: "utf8" });
  } catch (e: any) {
    assert.fail(String(e.stdout ?? "") + String(e.stderr ?? ""));
  }
});
