package erasure

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"time"

	"github.com/uptrace/bun"
)

// Item kinds named in reaches, certificates and sweep counts, by the store that owns them.
const (
	KindAgentState    = "agent_state"       // state: a working state
	KindStateField    = "agent_state_field" // state: an expired field (retention)
	KindProfile       = "profile"           // subjects: a profile (sealed)
	KindProfileHandle = "profile_handle"    // subjects: a handle's keyed hash
	KindExportPackage = "export_package"    // exports: a data package (sealed)
	KindSubjectKey    = "subject_key"       // the key store: a subject's data key
	KindTurn          = "turn"              // turns: a masked turn
	KindIdentityLink  = "identity_link"     // turns: an identity link
	KindScopeKey      = "conversation_key"  // turns: a conversation's (or task's) data key
	KindBoard         = "board"             // boards: a board with its history (issue 31)
)

// How a store's erased entries are gone from backups (issue 29 §1, ER-1): the value of a
// store's "backups" member in a certificate (Backups).
const (
	// Shredded: the entries are sealed under keys the erasure (or delete) destroyed, so every
	// copy of them, in any backup, no longer opens.
	Shredded = "shredded"
	// RebuiltOnRestore: the entries are derived data (full-text entries, vectors, caches)
	// that `agentmemory restore` drops and rebuilds from what can still be unsealed.
	RebuiltOnRestore = "rebuilt_on_restore"
	// HoldsNone: the store holds nothing of the target (its probe proves it), so no backup
	// of it does either.
	HoldsNone = "holds_none"
	// NotSealed: the entries are stored unsealed, so a backup taken before the erasure and
	// restored after it still holds them (a known gap the certificate states, never hides).
	NotSealed = "not_sealed"
)

// ConversationKeyID is the key-store id of the data key sealing what is stored of a
// conversation (or task) linked to no subject (issue 29 §1, ER-1): its turns and its
// conversation-scoped working states. scopeHash is the keyed scope hash turns and working
// memory share (WM-3). The "cv_" prefix keeps it apart from profile ids ("prof_...") and
// subject keys ("sh_..."). Erasing the conversation, or a subject linked to it, destroys it.
func ConversationKeyID(scopeHash string) string { return "cv_" + scopeHash }

// StateKeyID is the key-store id of a working state's own data key (issue 29 §1 and §3):
// "ws_" and the hex SHA-256 of its scope kind, keyed scope hash (WM-3) and agent, each
// length-prefixed, so the id is bounded and names no agent in clear. A state naming no
// customer of an object or agent scope is sealed under it alone, every other state under a
// key derived from it and its customer's or conversation's key (state.sealingFor). The
// single-state delete (state.Service.Delete, by scope or by subject) and an erasure that
// deletes the state by its content destroy it, so a backup taken before holds only a row
// that no longer opens. The "ws_" prefix keeps it apart from the other key ids ("sh_",
// "cv_", "bk_", "nl_", "np_", "doc_", "prof_").
func StateKeyID(scopeKind, scopeHash, agent string) string {
	h := sha256.New()
	for _, part := range [...]string{scopeKind, scopeHash, agent} {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(part)))
		h.Write(n[:])
		h.Write([]byte(part))
	}
	return "ws_" + hex.EncodeToString(h.Sum(nil))
}

// Export is one store's part of a subject's data package (GOV-3): Members maps a package
// member ("profiles", "states", "identity_links", "turns") to its entries, encoded to JSON as
// given (a slice, never nil); Counts adds to the package's counts by name ("profiles",
// "states", "fields", "turns", "identity_links"); Touched lists the ids whose receipts the
// package carries. The zero Export is a store that holds nothing to export.
type Export struct {
	Members map[string]any
	Counts  map[string]int
	Touched []string
}

// ExportedLink is an identity link in a data package. The service never stores a
// conversation or task id in clear (WM-3): ScopeKind ("conversation" or "task") and ScopeHash
// (the keyed hash of the id, the same for every link and turn of that conversation) name it.
// Status is "confirmed" or "unconfirmed".
type ExportedLink struct {
	ID        string    `json:"link_id"`
	ScopeKind string    `json:"scope_kind"`
	ScopeHash string    `json:"scope_hash"`
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ExportedTurn is a masked turn in a data package: its conversation (as in ExportedLink),
// its speaker ("customer", "agent" or "system"), the masked text (unsealed) and its time (UTC).
type ExportedTurn struct {
	ID        string    `json:"turn_id"`
	ScopeKind string    `json:"scope_kind"`
	ScopeHash string    `json:"scope_hash"`
	Speaker   string    `json:"speaker"`
	Text      string    `json:"text"`
	At        time.Time `json:"at"`
	// KeyID and AgentVersion are the turn's provenance (MS-5, QT-2): the key that wrote it and
	// the write's Agent-Version header ("" when none was sent).
	KeyID        string `json:"key_id"`
	AgentVersion string `json:"agent_version"`
}

// NoteCounts is what an agent-note erasure removed (AM-12): notes (all versions) and
// proposals.
type NoteCounts struct {
	Notes     int `json:"notes"`
	Proposals int `json:"proposals"`
}

// SourceEraser erases every note (all versions) and proposal of one source (agent) of a
// space, with their search-index rows, inside idb (the erasure's transaction, which also
// holds its receipt); a second call finds nothing (AM-12: agent notes are erased by source,
// never by subject). Covers lists the tables and columns it erases, for the coverage check
// and the vacuum list. internal/proposals implements it.
type SourceEraser interface {
	Covers() []Column
	EraseSource(ctx context.Context, idb bun.IDB, spaceID, sourceID string) (NoteCounts, error)
}
