// Package models holds the bun row structs, one per table, without logic. Times are UTC.
package models

import (
	"time"

	"github.com/uptrace/bun"
)

// Space is a tenant. Every key belongs to exactly one space. DirectPut is the choice made
// when the space was created (spaces.CreateOptions): whether its documents may be written by a
// direct PUT while the features document does not say (documents.direct_put).
type Space struct {
	bun.BaseModel `bun:"table:spaces"`

	ID        string    `bun:"id,pk"`
	Name      string    `bun:"name"`
	DirectPut bool      `bun:"direct_put"`
	CreatedAt time.Time `bun:"created_at"`
}

// APIKey is a stored key: only the SHA-256 of the secret is kept. Kind is "agent" (Agent,
// Vendor and Scopes set) or "person" (Name and Roles set).
type APIKey struct {
	bun.BaseModel `bun:"table:api_keys"`

	ID      string   `bun:"id,pk"`
	SpaceID string   `bun:"space_id"`
	Hash    string   `bun:"hash"`
	Kind    string   `bun:"kind"`
	Agent   string   `bun:"agent"`
	Vendor  string   `bun:"vendor"`
	Name    string   `bun:"name"`
	Scopes  []string `bun:"scopes,type:text"`
	Roles   []string `bun:"roles,type:text"`
	// Purposes are an agent key's purposes, set at mint (QT-2); empty for person keys.
	Purposes  []string   `bun:"purposes,type:text"`
	CreatedBy string     `bun:"created_by"`
	CreatedAt time.Time  `bun:"created_at"`
	RevokedAt *time.Time `bun:"revoked_at"`
	// LastUsedAt is when the key last authenticated an API request, to the minute (auth.Usage);
	// nil: not used since it was recorded.
	LastUsedAt *time.Time `bun:"last_used_at"`
}

// OperatorKey is a deployment operator's key (issue 34 §3): it belongs to no space and may
// only create spaces (POST /v1/spaces). Only the SHA-256 of the secret is stored; Label is the
// operator's name for it.
type OperatorKey struct {
	bun.BaseModel `bun:"table:operator_keys"`

	ID        string     `bun:"id,pk"`
	Hash      string     `bun:"hash"`
	Label     string     `bun:"label"`
	CreatedAt time.Time  `bun:"created_at"`
	RevokedAt *time.Time `bun:"revoked_at"`
}

// Document is one of a space's configuration documents ("features", "object-types"), kept
// as the JSON text that was accepted.
type Document struct {
	bun.BaseModel `bun:"table:documents"`

	SpaceID   string    `bun:"space_id,pk"`
	Name      string    `bun:"name,pk"`
	Body      string    `bun:"body"`
	Version   int64     `bun:"version"`
	UpdatedBy string    `bun:"updated_by"`
	UpdatedAt time.Time `bun:"updated_at"`
}

// DocumentChange is a proposed change of a space document (a change request): Body is the
// proposed document as it would be stored, BaseBody and BaseVersion the document it was
// proposed against. Status is "pending", "applied", "rejected" or "stale"; ProposerName is the
// proposing key's person name (the same person may not approve). DecidedBy, Reason,
// AppliedVersion and DecidedAt are set by the decision.
type DocumentChange struct {
	bun.BaseModel `bun:"table:document_changes"`

	ID             string     `bun:"id,pk"`
	SpaceID        string     `bun:"space_id"`
	Name           string     `bun:"name"`
	Body           string     `bun:"body"`
	BaseBody       string     `bun:"base_body"`
	BaseVersion    int64      `bun:"base_version"`
	Status         string     `bun:"status"`
	ProposedBy     string     `bun:"proposed_by"`
	ProposerName   string     `bun:"proposer_name"`
	DecidedBy      *string    `bun:"decided_by"`
	Reason         *string    `bun:"reason"`
	AppliedVersion *int64     `bun:"applied_version"`
	CreatedAt      time.Time  `bun:"created_at"`
	DecidedAt      *time.Time `bun:"decided_at"`
}

// Profile is a data subject. Its name and handles are sealed (encrypted), never stored in clear.
type Profile struct {
	bun.BaseModel `bun:"table:profiles"`

	ID        string    `bun:"id,pk"`
	SpaceID   string    `bun:"space_id"`
	Sealed    []byte    `bun:"sealed"`
	CreatedAt time.Time `bun:"created_at"`
	UpdatedAt time.Time `bun:"updated_at"`
}

// ProfileHandle maps the keyed hash of a canonical handle to its profile.
type ProfileHandle struct {
	bun.BaseModel `bun:"table:profile_handles"`

	SpaceID    string `bun:"space_id,pk"`
	HandleHash string `bun:"handle_hash,pk"`
	ProfileID  string `bun:"profile_id"`
}

// AgentState is one working-memory state, named by (SpaceID, ScopeHash, Agent). Body is the
// canonical JSON of the state; FieldTimes maps each field to its last write (RFC 3339).
type AgentState struct {
	bun.BaseModel `bun:"table:agent_states"`

	ID           string    `bun:"id,pk"`
	SpaceID      string    `bun:"space_id"`
	ScopeHash    string    `bun:"scope_hash"`
	ScopeKind    string    `bun:"scope_kind"`
	Agent        string    `bun:"agent"`
	SubjectHash  string    `bun:"subject_hash"`
	Body         []byte    `bun:"body"`
	FieldTimes   string    `bun:"field_times"`
	Version      int64     `bun:"version"`
	Bytes        int       `bun:"bytes"`
	KeyID        string    `bun:"key_id"`
	AgentVersion string    `bun:"agent_version"`
	CreatedAt    time.Time `bun:"created_at"`
	UpdatedAt    time.Time `bun:"updated_at"`
	ExpiresAt    time.Time `bun:"expires_at"`
	// ExpiresHour is the Unix hour (seconds / 3600) at or after ExpiresAt: the retention
	// sweep's index key, coarse so that most writes change no indexed column (state.ExpiresHour).
	ExpiresHour int64 `bun:"expires_hour"`
}

// Receipt is one receipt of a space's log (GOV-1): written unsealed (Seq 0, stored NULL) in
// the transaction of what it records or by the group committer, then sealed into a chain
// entry (ReceiptBatch), which sets Seq (its position in the chain) and Hash (its Merkle leaf
// hash). PrevHash is set only on receipts chained one by one before batching (version 1
// entries), whose Hash is then the entry's hash. N numbers receipts in insertion order.
type Receipt struct {
	bun.BaseModel `bun:"table:receipts"`

	N          int64     `bun:"n,pk,autoincrement"`
	SpaceID    string    `bun:"space_id"`
	Seq        int64     `bun:"seq,nullzero"`
	ID         string    `bun:"id"`
	Kind       string    `bun:"kind"`
	Action     string    `bun:"action"`
	ActorKeyID string    `bun:"actor_key_id"`
	ObjectIDs  string    `bun:"object_ids"`
	Detail     string    `bun:"detail"`
	At         time.Time `bun:"at"`
	PrevHash   string    `bun:"prev_hash"`
	Hash       string    `bun:"hash"`
}

// ReceiptBatch is one entry of a space's receipt chain: the receipts FirstSeq..Seq, the Merkle
// Root of their leaf hashes (version 2) or a single receipt chained before batching (version
// 1), linked to the previous entry by PrevHash. At is the time of its last receipt.
type ReceiptBatch struct {
	bun.BaseModel `bun:"table:receipt_batches"`

	SpaceID  string    `bun:"space_id,pk"`
	Seq      int64     `bun:"seq,pk"`
	FirstSeq int64     `bun:"first_seq"`
	Version  int       `bun:"version"`
	Root     string    `bun:"root"`
	PrevHash string    `bun:"prev_hash"`
	Hash     string    `bun:"hash"`
	At       time.Time `bun:"at"`
}

// OutboxEvent is an event waiting for (or past) delivery by the relay (GOV-4). Seq orders
// every space's events for the relay; Position numbers the space's own events in commit order
// (the cursor of GET /v1/events).
type OutboxEvent struct {
	bun.BaseModel `bun:"table:outbox"`

	Seq       int64      `bun:"seq,pk,autoincrement"`
	ID        string     `bun:"id"`
	SpaceID   string     `bun:"space_id"`
	Position  int64      `bun:"position"`
	Type      string     `bun:"type"`
	Payload   string     `bun:"payload"`
	CreatedAt time.Time  `bun:"created_at"`
	SentAt    *time.Time `bun:"sent_at"`
	Attempts  int        `bun:"attempts"`
	LastError string     `bun:"last_error"`
}

// ConsoleSession is a signed-in Console session (CON-1): ID is the hex SHA-256 of the
// session token, never the token; PersonKey the id of the person key that signed in.
type ConsoleSession struct {
	bun.BaseModel `bun:"table:console_sessions"`

	ID        string    `bun:"id,pk"`
	SpaceID   string    `bun:"space_id"`
	PersonKey string    `bun:"person_key"`
	CreatedAt time.Time `bun:"created_at"`
	SeenAt    time.Time `bun:"seen_at"`
	ExpiresAt time.Time `bun:"expires_at"`
	// Flash is the pending sealed message (console.sealFlash), "" when none.
	Flash string `bun:"flash"`
}
