// Checks the SDK's real exchanges against api/openapi.json: a recording fetch keeps every
// request and answer; checkExchanges validates each request body against the operation's
// requestBody schema and each answer against the schema of its status (a status the document
// does not declare for the operation is a failure too).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { FetchLike } from "../src/http.js";
import { repoRoot } from "./harness.js";

export const openapi = JSON.parse(readFileSync(join(repoRoot, "api", "openapi.json"), "utf8"));

export interface Exchange {
  method: string;
  path: string;
  status: number;
  requestBody?: string;
  responseText: string;
  contentType: string;
}

/** A fetch that records every exchange into `log`. */
export function recordingFetch(log: Exchange[]): FetchLike {
  return async (url, init) => {
    const res = await fetch(url, init as unknown as RequestInit);
    const text = await res.text();
    const u = new URL(url);
    const ex: Exchange = { method: init.method, path: u.pathname, status: res.status, responseText: text, contentType: res.headers.get("content-type") ?? "" };
    if (init.body !== undefined) ex.requestBody = init.body;
    log.push(ex);
    return { status: res.status, headers: res.headers, text: async () => text };
  };
}

function resolveRef(node: any): any {
  while (node && typeof node === "object" && typeof node.$ref === "string") {
    const parts = (node.$ref as string).replace(/^#\//, "").split("/");
    node = parts.reduce((n: any, p) => n?.[p], openapi);
  }
  return node;
}

function typeOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v;
}

/** Validates value against a schema of the document; returns the failures (paths and rules). */
export function validate(schema: any, value: unknown, at = "$"): string[] {
  schema = resolveRef(schema);
  if (!schema || typeof schema !== "object") return [];
  const errs: string[] = [];
  if (schema.allOf) for (const s of schema.allOf) errs.push(...validate(s, value, at));
  if (schema.type !== undefined) {
    const types: string[] = Array.isArray(schema.type) ? schema.type : [schema.type];
    const t = typeOf(value);
    const ok = types.includes(t) || (t === "integer" && types.includes("number"));
    if (!ok) return [...errs, `${at}: type ${t}, want ${types.join("|")}`];
  }
  if (schema.enum && !schema.enum.some((e: unknown) => e === value)) errs.push(`${at}: ${JSON.stringify(value)} not in enum`);
  if (typeof value === "string") {
    if (schema.maxLength !== undefined && [...value].length > schema.maxLength) errs.push(`${at}: longer than ${schema.maxLength}`);
    if (schema.minLength !== undefined && [...value].length < schema.minLength) errs.push(`${at}: shorter than ${schema.minLength}`);
    if (schema.pattern && !new RegExp(schema.pattern).test(value)) errs.push(`${at}: does not match ${schema.pattern}`);
  }
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) errs.push(`${at}: below ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) errs.push(`${at}: above ${schema.maximum}`);
  }
  if (Array.isArray(value)) {
    if (schema.maxItems !== undefined && value.length > schema.maxItems) errs.push(`${at}: more than ${schema.maxItems} items`);
    if (schema.items) value.forEach((v, i) => errs.push(...validate(schema.items, v, `${at}[${i}]`)));
  }
  if (value && typeof value === "object" && !Array.isArray(value)) {
    const obj = value as Record<string, unknown>;
    for (const r of schema.required ?? []) if (!(r in obj)) errs.push(`${at}: missing ${r}`);
    const props = schema.properties ?? {};
    for (const [k, v] of Object.entries(obj)) {
      if (k in props) errs.push(...validate(props[k], v, `${at}.${k}`));
      else if (schema.additionalProperties === false) errs.push(`${at}: unexpected member ${k}`);
    }
  }
  return errs;
}

/** The operation of a concrete path (templates such as /v1/agent-memory/notes/{id} match). */
export function operation(method: string, path: string): any {
  for (const [tpl, item] of Object.entries<any>(openapi.paths)) {
    const re = new RegExp("^" + tpl.replace(/\{[^}]+\}/g, "[^/]+") + "$");
    if (re.test(path) && item[method.toLowerCase()]) return item[method.toLowerCase()];
  }
  return undefined;
}

export function schemaOf(name: string): any {
  return openapi.components.schemas[name];
}

/** Validates every recorded exchange of /v1; returns the failures, one line each. */
export function checkExchanges(log: Exchange[]): string[] {
  const out: string[] = [];
  for (const ex of log) {
    if (!ex.path.startsWith("/v1/")) continue;
    const op = operation(ex.method, ex.path);
    const where = `${ex.method} ${ex.path} ${ex.status}`;
    if (!op) {
      out.push(`${where}: no such operation in openapi.json`);
      continue;
    }
    if (ex.requestBody !== undefined) {
      const rs = op.requestBody?.content?.["application/json"]?.schema;
      if (!rs) out.push(`${where}: sent a body the operation does not take`);
      else out.push(...validate(rs, JSON.parse(ex.requestBody)).map((e) => `${where} request ${e}`));
    }
    const resp = resolveRef(op.responses?.[String(ex.status)]);
    if (!resp) {
      out.push(`${where}: status not declared`);
      continue;
    }
    const schema = resp.content?.["application/json"]?.schema;
    if (schema && ex.responseText) out.push(...validate(schema, JSON.parse(ex.responseText)).map((e) => `${where} answer ${e}`));
  }
  return out;
}
