// Package compliance erases, exports and sweeps a space's personal data (WM-12, WM-13,
// GOV-2, GOV-3, MS-3, MS-4, AM-12). Its steps are small, idempotent methods that the
// Temporal activities call one by one: each commits what it deletes together with the
// record of what it deleted, so a retried step finds nothing more and the totals stay right.
// Nothing here logs or returns personal data: erasure records hold keyed hashes, certificates
// hold kinds, counts and SHA-256 hashes of ids.
package compliance

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/erasure"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/keyed"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/internal/state"
	"github.com/agentmemory/agentmemory/internal/subjects"
)

// Statuses of erasures and exports. An erasure moves only forward along one state machine
// (issue 12 §1, GOV-2; see Transition): pending → running → completed | failed, and
// pending → failed for a start the workflow engine definitely refused. Exports are created
// running and end completed or failed.
const (
	StatusPending   = "pending"
	StatusRunning   = "running"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
)

// transitions is the erasure state machine: from -> the statuses it may move to.
var transitions = map[string][]string{
	StatusPending: {StatusRunning, StatusFailed},
	StatusRunning: {StatusCompleted, StatusFailed},
}

// Transition checks that an erasure may move from status from to status to: pending →
// running (the workflow's first step), pending → failed (a definite refusal to start),
// running → completed (Certify) and running → failed (a step that still fails). Any other
// move, and any move out of completed or failed, is fault.Conflict "invalid_transition": a
// failed erasure is never certified and a completed one never fails.
func Transition(from, to string) error {
	for _, ok := range transitions[from] {
		if ok == to {
			return nil
		}
	}
	return fault.New(fault.Conflict, "invalid_transition", "an erasure cannot move from %s to %s", from, to)
}

// errNotRunning is what a step or Certify answers for an erasure that is not running: never a
// silent skip, so a workflow over a pending, failed or completed row fails loudly.
func errNotRunning(status string) error {
	return fault.New(fault.Conflict, "erasure_not_running", "the erasure is %s, not running", status)
}

// Target kinds of an erasure.
const (
	TargetSubject      = "subject"
	TargetConversation = "conversation"
)

// Item kinds named in certificates and sweep counts.
const (
	KindAgentState    = "agent_state"
	KindStateField    = "agent_state_field"
	KindProfile       = "profile"
	KindProfileHandle = "profile_handle"
	KindExportPackage = "export_package"
	KindSubjectKey    = "subject_key"
	KindTurn          = "turn"
	KindIdentityLink  = "identity_link"
)

// DefaultExportTTL is how long a data package can be downloaded (GOV-3).
const DefaultExportTTL = 7 * 24 * time.Hour

// SubjectRef names a customer to the turns store: their profiles and the keyed hashes of
// their canonical handles (subjects.Service.HandleHash).
type SubjectRef struct {
	ProfileIDs   []string
	HandleHashes []string
}

// Erased lists the ids of one kind (KindTurn, KindIdentityLink, ...) that a store deleted;
// Store names the store (a registered eraser's Name, or StoreKeys) when known.
type Erased struct {
	Kind  string
	IDs   []string
	Store string
}

// TurnEraser deletes a customer's identity links and the masked turns of the conversations
// linked to them, or one conversation's turns. Both run inside idb (the erasure step's
// transaction) and return what they deleted; a second call finds nothing. The turns package
// implements it.
type TurnEraser interface {
	EraseSubject(ctx context.Context, idb bun.IDB, spaceID string, s SubjectRef) ([]Erased, error)
	EraseConversation(ctx context.Context, idb bun.IDB, spaceID, conversationID string) ([]Erased, error)
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
}

// TurnExporter returns a customer's identity links and the masked turns of their linked
// conversations, for the data package. The turns package implements it.
type TurnExporter interface {
	ExportSubject(ctx context.Context, idb bun.IDB, spaceID string, s SubjectRef) ([]ExportedLink, []ExportedTurn, error)
}

// TurnSweeper deletes up to limit turns past their retention at now (the space's
// turns.retention_days, 90 days by default) of spaceID (every space when empty) inside idb;
// it returns the counts per space and whether fewer than limit were left. The turns package
// implements it.
type TurnSweeper interface {
	SweepTurns(ctx context.Context, idb bun.IDB, spaceID string, now time.Time, limit int) (map[string]int, bool, error)
}

// NoteCounts is what an agent-note erasure removed (AM-12).
type NoteCounts struct {
	Notes     int `json:"notes"`
	Proposals int `json:"proposals"`
}

// NoteEraser erases every note (all versions) and proposal of one source (agent) of a space,
// with their search-index rows, inside idb (the erasure's transaction, which also holds its
// receipt); a second call finds nothing. internal/proposals implements it (the notes through
// internal/notes, then the proposals and their decisions).
type NoteEraser interface {
	EraseSource(ctx context.Context, idb bun.IDB, spaceID, sourceID string) (NoteCounts, error)
}

// Service runs the compliance steps. Turns, TurnExports, TurnSweeps and Notes may be nil
// until their packages are wired: certificates and packages then say what they did not cover.
type Service struct {
	DB          *bun.DB
	Docs        spaces.Documents
	Hasher      keyed.Hasher
	Keys        keystore.Store
	Subjects    *subjects.Service
	State       *state.Service
	Turns       TurnEraser
	TurnExports TurnExporter
	TurnSweeps  TurnSweeper
	Notes       NoteEraser
	// TurnProbe finds residue in the turns store; when nil, Turns or TurnExports are used if
	// they implement TurnProber.
	TurnProbe TurnProber
	// Erasers orders the stores' erasers (nil: Registry's default of state, turns, exports,
	// subjects).
	Erasers *erasure.Registry
	// Signer signs each certificate when its erasure completes (nil: stored unsigned). Never
	// a typed nil: leave it nil when there is no key.
	Signer CertificateSigner
	// Proposals fails a drafting distilled proposal whose workflow ended without finishing it
	// (Reconcile); nil leaves such proposals alone.
	Proposals ProposalFailer
	// ExportTTL is how long packages live (DefaultExportTTL when zero).
	ExportTTL time.Duration
	Now       func() time.Time
}

func (s *Service) now() time.Time {
	if s.Now == nil {
		return time.Now().UTC()
	}
	return s.Now().UTC()
}

// HashID is how certificates name an erased id: "sha256:" and the hex SHA-256 of the id, so
// whoever holds an id can check it was erased while the certificate reveals none.
func HashID(id string) string {
	s := sha256.Sum256([]byte(id))
	return "sha256:" + hex.EncodeToString(s[:])
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
