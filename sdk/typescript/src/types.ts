/**
 * Wire types: every request and answer of the routes the SDK calls, member for member as
 * `api/openapi.json` (`GET /openapi.json`) declares them. `test/openapi-types.test.ts`
 * generates types from that document and fails when these drift from it.
 *
 * @module
 */

/** Any JSON value. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [member: string]: JsonValue };

/** The kinds of scope a state belongs to. */
export type ScopeKind = "conversation" | "task" | "object" | "subject";

/**
 * What one state belongs to (schema `Scope`). `id` is the conversation's or task's id, the
 * object as `type:namespace:id`, or a customer's handle (`email:ana@example.com`).
 */
export interface Scope {
  kind: ScopeKind;
  id: string;
}

/** Write modes of `PUT /v1/agent-state`. */
export type WriteMode = "cas" | "merge_by_key";

/** Request of `PUT /v1/agent-state` (schema `StateWrite`). */
export interface StateWrite {
  scope: Scope;
  agent?: string;
  mode?: WriteMode;
  if_version?: number | null;
  body: { [field: string]: JsonValue };
  subject?: string;
}

/** Answer 200 of `PUT /v1/agent-state` (schema `StateWriteResult`). */
export interface StateWriteResult {
  stored: boolean;
  version: number;
  reason: "not_declared_field" | "over_cap" | null;
  fields?: string[];
  bytes?: number;
  max_bytes?: number;
}

/** Request of `POST /v1/agent-state/read` (schema `StateRead`). */
export interface StateRead {
  scope: Scope;
  agent?: string;
}

/** Answer 200 of `POST /v1/agent-state/read` (schema `StateReadResult`). */
export interface StateReadResult {
  body: { [field: string]: JsonValue };
  version: number;
  updated_at: string | null;
}

/** Where a note comes from: ids only, never text (schema `Evidence`). */
export interface Evidence {
  conversation_id?: string;
  task_id?: string;
}

/** The kinds of note (AM-1). */
export type NoteKind = "procedure" | "tool_note" | "process_note" | "pitfall";

/** Who may read a note. */
export type NoteVisibility = "source" | "vendor" | "space";

/** Request of `POST /v1/agent-memory/notes` (schema `NoteInput`). */
export interface NoteInput {
  source_id?: string;
  kind: NoteKind;
  title: string;
  body: string;
  tags?: string[] | null;
  visibility?: NoteVisibility;
  evidence?: Evidence | null;
  valid_until?: string | null;
}

/** A note as the service answers it (schema `Note`). */
export interface Note {
  id: string;
  version: number;
  supersedes_note_id?: string | null;
  source_id: string;
  vendor?: string;
  kind: string;
  title: string;
  body: string;
  tags: string[];
  visibility: string;
  evidence?: Evidence | null;
  origin: "agent" | "human" | "distilled";
  status: "active" | "retired";
  valid_until?: string | null;
  proposal_id?: string | null;
  created_at: string;
  updated_at?: string;
  retired_at?: string | null;
}

/** Answer 202 of `POST /v1/agent-memory/notes` in a `human_only` space (schema `ProposalAccepted`). */
export interface ProposalAccepted {
  proposal_id: string;
  status?: string;
}

/** Answer 200 of `GET /v1/agent-memory/block` (schema `Block`). */
export interface Block {
  text: string;
  enabled: boolean;
  note_ids: string[];
  tokens: number;
}

/** Answer 200 of `GET /v1/agent-memory/search` (schema `SearchResult`). */
export interface SearchResult {
  enabled: boolean;
  notes: Note[];
}

/** The inner object of every error answer. */
export interface ErrorDetail {
  code: string;
  message: string;
  member?: string;
  kinds?: string[];
  retry_after?: number;
}

/** Every error answer (schema `Error`); a 412 adds the top-level `version`. */
export interface ErrorBody {
  error: ErrorDetail;
}
