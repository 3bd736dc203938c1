package models

import (
	"time"

	"github.com/uptrace/bun"
)

// Turn is one message of a conversation or task, stored masked (AM-9). ScopeHash is the keyed
// hash of the conversation or task id (never the id in clear). Text is the masked text: sealed
// under the subject's key (keystore) when ProfileID is set, else under the key SealedKey names
// (the conversation's key, issue 29 §1); with neither (a turn written before conversation keys
// existed, not yet re-sealed) it is the masked UTF-8 in clear.
type Turn struct {
	bun.BaseModel `bun:"table:turns"`

	ID        string `bun:"id,pk"`
	SpaceID   string `bun:"space_id"`
	ScopeKind string `bun:"scope_kind"`
	ScopeHash string `bun:"scope_hash"`
	Speaker   string `bun:"speaker"`
	Text      []byte `bun:"text"`
	ProfileID string `bun:"profile_id"`
	SealedKey string `bun:"sealed_key"`
	KeyID     string `bun:"key_id"`
	// AgentVersion is the Agent-Version header of the write (MS-5), "" when none was sent.
	AgentVersion string    `bun:"agent_version"`
	At           time.Time `bun:"at"`
	CreatedAt    time.Time `bun:"created_at"`
}

// IdentityLink ties a conversation or task (by ScopeHash) to a subject (by the keyed hash of
// its canonical handle). ProfileID is the profile holding that handle when it was known at
// link time, else "". Status is "confirmed" or "unconfirmed".
type IdentityLink struct {
	bun.BaseModel `bun:"table:identity_links"`

	ID         string    `bun:"id,pk"`
	SpaceID    string    `bun:"space_id"`
	ScopeKind  string    `bun:"scope_kind"`
	ScopeHash  string    `bun:"scope_hash"`
	HandleHash string    `bun:"handle_hash"`
	ProfileID  string    `bun:"profile_id"`
	Status     string    `bun:"status"`
	KeyID      string    `bun:"key_id"`
	CreatedAt  time.Time `bun:"created_at"`
	UpdatedAt  time.Time `bun:"updated_at"`
}
