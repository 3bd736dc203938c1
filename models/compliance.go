package models

import (
	"time"

	"github.com/uptrace/bun"
)

// Erasure is one erasure request (GOV-2, WM-13): its target as a keyed hash (never the
// handle), what it resolved to, what it erased so far (Items, JSON kind -> {count, hashed
// ids}) and, once completed, its certificate (JSON). TargetRef holds a conversation id while
// a conversation erasure runs and is cleared when it ends.
type Erasure struct {
	bun.BaseModel `bun:"table:erasures"`

	ID          string `bun:"id,pk"`
	SpaceID     string `bun:"space_id"`
	TargetKind  string `bun:"target_kind"`
	TargetHash  string `bun:"target_hash"`
	TargetRef   string `bun:"target_ref"`
	ScopeHashes string `bun:"scope_hashes"`
	ProfileIDs  string `bun:"profile_ids"`
	Resolved    bool   `bun:"resolved"`
	Items       string `bun:"items"`
	KeyIDs      string `bun:"key_ids"` // JSON subject key ids to destroy; '' until the key step runs (of this round)
	// Round is the erasure's current round of steps (0 or 1: the first; a re-run after the
	// probe found residue moves it up, to compliance.MaxErasureRounds at most).
	Round int `bun:"round"`
	// KeysRound is the last round whose destroyed keys were added to Items (0: none yet).
	KeysRound int `bun:"keys_round"`
	// Stores is the JSON list of store names, in order, the workflow erases one by one (the
	// erasure registry's order when it was resolved); '' before then.
	Stores      string `bun:"stores"`
	Status      string `bun:"status"`
	RequestedBy string `bun:"requested_by"`
	Certificate string `bun:"certificate"`
	// CertificateSignature is the JSON signing.Signature over Certificate's bytes, made when
	// the erasure completed; '' when no signing key was configured then.
	CertificateSignature string     `bun:"certificate_signature"`
	Failure              string     `bun:"failure"`
	CreatedAt            time.Time  `bun:"created_at"`
	EndedAt              *time.Time `bun:"ended_at"`
	// SealedNeedles is the subject's handles and names for the content probe (issue 29 §1b),
	// sealed under the erasure's own key; nil for a conversation, and cleared when it ends.
	SealedNeedles []byte `bun:"sealed_needles"`
	// FeedCursor is the export feed's cursor when the erasure's steps had committed (every
	// tombstone of the erasure is at or before it; issue 33); nil until then.
	FeedCursor *int64 `bun:"feed_cursor"`
	// Sinks is the JSON list of the configured export sinks and the cursors they had
	// acknowledged when all had passed FeedCursor; '' until then.
	Sinks string `bun:"sinks"`
}

// ErasureFinding is one item the content probe of an erasure found in a store (issue 29
// §1b): its kind and id there, where the store looked (a table, never a value), how it
// matched ("handle" or "name") and its status: "erased" (a handle match, by the erasure, or
// a name match a person erased), "pending" (a name match awaiting a person's decision) or
// "not_subject" (a person decided it is someone else). DecidedBy is the person key that
// decided ("" for the erasure's own).
type ErasureFinding struct {
	bun.BaseModel `bun:"table:erasure_findings"`

	ID        string     `bun:"id,pk"`
	SpaceID   string     `bun:"space_id"`
	ErasureID string     `bun:"erasure_id"`
	Store     string     `bun:"store"`
	Kind      string     `bun:"kind"`
	ItemID    string     `bun:"item_id"`
	Location  string     `bun:"location"`
	MatchKind string     `bun:"match_kind"`
	Status    string     `bun:"status"`
	DecidedBy string     `bun:"decided_by"`
	CreatedAt time.Time  `bun:"created_at"`
	DecidedAt *time.Time `bun:"decided_at"`
}

// ExportPackage is a subject's data package (GOV-3): Package is the JSON package sealed under
// the subject's key; it expires at ExpiresAt and is erased with the subject.
type ExportPackage struct {
	bun.BaseModel `bun:"table:export_packages"`

	ID          string     `bun:"id,pk"`
	SpaceID     string     `bun:"space_id"`
	SubjectHash string     `bun:"subject_hash"`
	Status      string     `bun:"status"`
	RequestedBy string     `bun:"requested_by"`
	Package     []byte     `bun:"package"`
	Counts      string     `bun:"counts"`
	Failure     string     `bun:"failure"`
	CreatedAt   time.Time  `bun:"created_at"`
	CompletedAt *time.Time `bun:"completed_at"`
	ExpiresAt   time.Time  `bun:"expires_at"`
}

// AgentMemoryExport is an agent-memory export file (issue 33 §4): one agent's (SourceID)
// notes and proposals, built by a workflow into Package, sealed under the agent's export
// key; Counts is {"notes", "proposals"}. Status running, completed or failed (Failure).
type AgentMemoryExport struct {
	bun.BaseModel `bun:"table:agent_memory_exports"`

	ID          string     `bun:"id,pk"`
	SpaceID     string     `bun:"space_id"`
	SourceID    string     `bun:"source_id"`
	Status      string     `bun:"status"`
	RequestedBy string     `bun:"requested_by"`
	Package     []byte     `bun:"package"`
	Counts      string     `bun:"counts"`
	Failure     string     `bun:"failure"`
	CreatedAt   time.Time  `bun:"created_at"`
	CompletedAt *time.Time `bun:"completed_at"`
	ExpiresAt   time.Time  `bun:"expires_at"`
}
