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
