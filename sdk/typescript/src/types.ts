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
export type ScopeKind = "conversation" | "task" | "object" | "subject" | "agent";

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
  /** The lease the writer holds on this state (schema `LeaseProof`): 409 `lease_lost` unless it is the lease in force. */
  lease?: LeaseProof;
}

/** A lease a write carries: its id and fencing token (schema `LeaseProof`). */
export interface LeaseProof {
  lease_id: string;
  token: number;
}

/** Answer 200 of `PUT /v1/agent-state` (schema `StateWriteResult`). */
export interface StateWriteResult {
  stored: boolean;
  version: number;
  reason: "not_declared_field" | "over_cap" | "over_quota" | null;
  fields?: string[];
  bytes?: number;
  max_bytes?: number;
  /** over_quota: the quota the write would pass (states_per_space, states_per_scope_kind, state_bytes_per_space). */
  quota?: string;
  /** over_quota: that quota's limit. */
  limit?: number;
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
  /** Provenance (MS-5): the key that wrote this version (for an approved proposal, the approving person's key). */
  key_id: string;
  /** Provenance (MS-5): the Agent-Version header of the write that made it ("" when none was sent). */
  agent_version: string;
}

/** Answer 202 of `POST /v1/agent-memory/notes` in a `human_only` space (schema `ProposalAccepted`). */
export interface ProposalAccepted {
  proposal_id: string;
  status?: string;
  /** The gate's kinds that sent the write to review (`agent_memory.gate`: `name`, `instruction`). */
  review?: string[];
  /** The written tags outside the space's vocabulary (CTX-1); absent when every tag is known. */
  unknown_tags?: string[];
}

/** Answer 200 of `GET /v1/agent-memory/block` (schema `Block`). */
export interface Block {
  text: string;
  enabled: boolean;
  note_ids: string[];
  tokens: number;
  /** The run's figures after this read, when it named a run (CTX-3). */
  run?: RunReport;
  /** True when the run had too little left for any note: the block is empty. */
  budget_exhausted?: boolean;
}

/**
 * The run a read belongs to (schema `Run`, CTX-3): the run's first call names `budget_tokens`
 * (1..1000000) and sets its budget; every read of the run draws the tokens it delivers.
 */
export interface Run {
  id: string;
  budget_tokens?: number;
}

/**
 * A run's figures after a read of the run (schema `RunReport`, CTX-3): `used_tokens` counts
 * what the run's reads delivered (and reads in flight reserved); `cut` says this read
 * delivered less than it would have without the run.
 */
export interface RunReport {
  id: string;
  budget_tokens: number;
  used_tokens: number;
  remaining_tokens: number;
  cut: boolean;
}

/** Answer 200 of `GET /v1/agent-memory/search` (schema `SearchResult`). */
export interface SearchResult {
  enabled: boolean;
  notes: Note[];
  /** The run's figures after this search, when it named a run (CTX-3). */
  run?: RunReport;
  /** True when no matching note fitted what the run had left: notes is empty. */
  budget_exhausted?: boolean;
}

/**
 * Request of `POST /v1/knowledge/retrieve` (schema `RetrieveRequest`), plus `filters`: an
 * object sent as given, for a service that accepts filters (this type is therefore not in
 * the openapi check's pairs until the schema declares `filters`).
 */
export interface RetrieveRequest {
  query: string;
  kbs: string[];
  top_k?: number;
  max_tokens?: number;
  min_score?: number;
  filters?: { [member: string]: JsonValue };
  /** The run this retrieval draws on (CTX-3). */
  run?: Run;
  /** Another space's id: a retrieval through a bridge, kbs naming its bases by name (issue 31). */
  space?: string;
}

/**
 * One ranked chunk with its provenance (schema `RetrievedChunk`): its document, base, source,
 * title, version label and byte range in the document. `score` is the fused reciprocal-rank
 * score; `vector_score` the cosine similarity and `vector_rank`, `lexical_rank` its ranks in
 * each ranking (null: not in that ranking); `in_context` whether the answer's `context` holds it.
 */
export interface RetrievedChunk {
  chunk_id: string;
  document_id: string;
  kb_id: string;
  source_uri: string;
  title?: string;
  version: string;
  start_byte: number;
  end_byte: number;
  score: number;
  vector_score?: number | null;
  vector_rank?: number | null;
  lexical_rank?: number | null;
  text: string;
  in_context: boolean;
}

/**
 * Answer 200 of `POST /v1/knowledge/retrieve` (schema `Retrieval`). `context` is ready for a
 * prompt: each chunk that fits `context_tokens` fenced as evidence with its source and
 * version, under a line saying it is reference material, not instructions (MS-7); empty
 * when none fits.
 */
export interface Retrieval {
  mode: "hybrid" | "lexical_only";
  chunks: RetrievedChunk[];
  context: string;
  context_tokens: number;
  /** The run's figures after this retrieval, when it named a run (CTX-3). */
  run?: RunReport;
  /** True when no chunk fitted what the run had left: chunks and context are empty. */
  budget_exhausted?: boolean;
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

/**
 * Narrows retrieval candidates (schema `RetrieveFilters`): every member given must hold.
 * `document_ids` 1-50 ids; `source_uri_prefix` case-sensitive, at most 500 characters;
 * `version` and `title` equal.
 */
export interface RetrieveFilters {
  document_ids?: string[];
  source_uri_prefix?: string;
  version?: string;
  title?: string;
}

/**
 * Request of `POST /v1/context` (schema `ContextRequest`, CTX-2): one token budget
 * (`max_tokens` 50..10000, default 2000) for the system block (`block_max_tokens` 50..2000,
 * default 300), the knowledge evidence (`knowledge`: 1-10 `kbs` and a 1-1000 character
 * `query`) and, with `include_agent_memory`, the task section (needs `task.object_types`, at
 * most 8). `view` orders the block as the block call does.
 */
export interface ContextRequest {
  view?: string;
  task?: { id?: string; object_types?: string[] };
  max_tokens?: number;
  block_max_tokens?: number;
  include_agent_memory?: boolean;
  knowledge?: { kbs: string[]; query: string; top_k?: number; min_score?: number; filters?: RetrieveFilters };
  source_id?: string;
  /** The run this call draws on (CTX-3). */
  run?: Run;
}

/**
 * Answer 200 of `POST /v1/context` (schema `ContextAnswer`): `system_block` goes after the
 * agent's instructions and before the customer's context; `context` holds the fenced
 * knowledge evidence, then the task section. `tokens` counts each part (cl100k_base);
 * `total` never passes the request's `max_tokens`. `knowledge_mode` is `hybrid`,
 * `lexical_only`, or empty without knowledge.
 */
export interface ContextAnswer {
  system_block: string;
  context: string;
  tokens: { system_block: number; task_notes: number; knowledge: number; total: number };
  etag: string;
  enabled: boolean;
  note_ids: string[];
  task_note_ids: string[];
  chunk_ids: string[];
  knowledge_mode: string;
  /** The run's figures after this call, when it named a run (CTX-3). */
  run?: RunReport;
  /** True when the run had too little left for any answer: the payload is empty. */
  budget_exhausted?: boolean;
}

/** How one field both this write and another since `if_version` changed was settled (schema `BoardOutcome`). */
export interface BoardOutcome {
  field: string;
  rule: "reject" | "ours" | "theirs" | "merge_by_key" | "union" | "max" | "min" | "sum" | "cel";
  rejected?: boolean;
  reason?: string;
}

/** Answer 200 of `PUT /v1/boards` (schema `BoardWriteResult`). */
export interface BoardWriteResult {
  stored: boolean;
  version: number;
  settled: BoardOutcome[];
  reason: "not_declared_field" | "over_cap" | null;
  fields?: string[];
  bytes?: number;
  max_bytes?: number;
}

/** Answer 200 of `POST /v1/boards/read` (schema `Board`). */
export interface BoardRead {
  type: string;
  id: string;
  /** Set on a bridged read: the space whose board it is. */
  space?: string;
  body: { [member: string]: JsonValue };
  version: number;
  updated_at: string | null;
}

/** A lease with its fencing token (schema `Lease`). */
export interface LeaseInfo {
  lease_id: string;
  token: number;
  expires_at: string;
}

/**
 * A stored turn of a conversation or task (schema `Turn`): `text` is masked (personal data
 * replaced by typed placeholders such as `<email>`); `key_id` and `agent_version` are its
 * provenance; `at` is RFC 3339 UTC.
 */
export interface Turn {
  id: string;
  conversation_id?: string;
  task_id?: string;
  speaker: string;
  text: string;
  at: string;
  key_id: string;
  agent_version: string;
}

/**
 * The body of `POST /v1/turns/read` (schema `TurnsReadRequest`): `conversation_id` or
 * `task_id` (exactly one), `after` (the previous page's `next_after`), `limit` 1..500.
 */
export interface TurnsReadRequest {
  conversation_id?: string;
  task_id?: string;
  after?: string;
  limit?: number;
}

/** A page of a conversation's masked turns, oldest first (schema `TurnsPage`); `next_after` is "" on the last page. */
export interface TurnsPage {
  turns: Turn[];
  next_after: string;
}

/** A table of the continuous export feed (schema `FeedRecord`'s `table`; docs/export.md). */
export type FeedTable =
  | "notes"
  | "proposals"
  | "decisions"
  | "receipts"
  | "receipt_checkpoints"
  | "knowledge_bases"
  | "knowledge_documents"
  | "knowledge_chunks"
  | "agent_states"
  | "keys"
  | "change_requests"
  | "documents";

/**
 * One record of the continuous export feed, `GET /v1/export/feed` (schema `FeedRecord`,
 * issue 33): `cursor` is 1, 2, 3... per space, never skipping or repeating a committed change;
 * `key` the row's primary key; an `upsert` carries `row` as the API shows it, a `delete` (a
 * tombstone) the key only. `changed_at` is RFC 3339 UTC.
 */
export interface FeedRecord {
  cursor: number;
  table: FeedTable;
  key: string;
  op: "upsert" | "delete";
  row?: { [member: string]: JsonValue };
  changed_at: string;
}

/**
 * The state of an agent-memory export file, `GET /v1/agent-memory/exports/{export_id}`
 * (schema `AgentMemoryExportStatus`, issue 33): dates are RFC 3339 UTC; `completed_at` and
 * `counts` are null until the file is completed.
 */
export interface AgentMemoryExportStatus {
  export_id: string;
  source_id: string;
  status: "running" | "completed" | "failed";
  created_at: string;
  completed_at: string | null;
  expires_at: string;
  counts: { notes?: number; proposals?: number } | null;
}

/**
 * A page of the export feed, oldest first (the answer of `GET /v1/export/feed`):
 * `next_after` is the `after` of the next page (the last cursor returned, or the request's
 * `after` when the page is empty).
 */
export interface FeedPage {
  records: FeedRecord[];
  next_after: number;
}

/** What {@link AgentMemoryClient.exportFeed} asks for: feed tables (none: every table), a cursor (0 from the start), a page size 1..1000 (default 100). */
export interface ExportFeedRequest {
  tables?: FeedTable[];
  after?: number;
  limit?: number;
}
