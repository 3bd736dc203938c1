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
// pending → failed for a start the workflow engine definitely refused; running →
// pending_sinks → completed | failed while export sinks catch up with its tombstones. Exports are created
// running and end completed or failed.
const (
	StatusPending   = "pending"
	StatusRunning   = "running"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	// StatusCompletedWithResidue is a completed erasure whose content probe found items only
	// the subject's name ties to her, listed for a person to decide (issue 29 §1b); it is
	// never reported as a plain completed.
	StatusCompletedWithResidue = "completed_with_residue"
)

// Completed reports whether an erasure status is an end with a certificate (StatusCompleted
// or StatusCompletedWithResidue).
func Completed(status string) bool {
	return status == StatusCompleted || status == StatusCompletedWithResidue
}

// transitions is the erasure state machine: from -> the statuses it may move to.
var transitions = map[string][]string{
	StatusPending:      {StatusRunning, StatusFailed},
	StatusRunning:      {StatusCompleted, StatusCompletedWithResidue, StatusFailed, StatusPendingSinks},
	StatusPendingSinks: {StatusCompleted, StatusCompletedWithResidue, StatusFailed},
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
	TargetSubject      = erasure.Subject
	TargetConversation = erasure.Conversation
)

// Item kinds named in certificates and sweep counts (internal/erasure owns them).
const (
	KindAgentState    = erasure.KindAgentState
	KindStateField    = erasure.KindStateField
	KindProfile       = erasure.KindProfile
	KindProfileHandle = erasure.KindProfileHandle
	KindExportPackage = erasure.KindExportPackage
	KindSubjectKey    = erasure.KindSubjectKey
	KindTurn          = erasure.KindTurn
	KindIdentityLink  = erasure.KindIdentityLink
)

// DefaultExportTTL is how long a data package can be downloaded (GOV-3).
const DefaultExportTTL = 7 * 24 * time.Hour

// erased lists the ids of one kind (KindTurn, KindIdentityLink, ...) that a step deleted, and
// the store (a registered eraser's Name, or StoreKeys) that deleted them.
type erased struct {
	Kind  string
	IDs   []string
	Store string
}

// TurnSweeper deletes up to limit turns past their retention at now (the space's
// turns.retention_days, 90 days by default) of spaceID (every space when empty) inside idb;
// it returns the counts per space and whether fewer than limit were left. *turns.Service
// implements it.
type TurnSweeper interface {
	SweepTurns(ctx context.Context, idb bun.IDB, spaceID string, now time.Time, limit int) (map[string]int, bool, error)
}

// NoteSweeper retires up to limit active notes not revised for their space's retention.notes
// at now (off by default; issue 34 §1) of spaceID (every space when empty) inside idb, with
// their receipts; it returns the counts per space and whether fewer than limit were due.
// *notes.Service implements it.
type NoteSweeper interface {
	SweepNotes(ctx context.Context, idb bun.IDB, spaceID string, now time.Time, limit int) (map[string]int, bool, error)
}

// Service runs the compliance steps. Erasers is the erasure registry (every store that holds
// personal data, in erasure order; app registers them in one list): erasure, its probe, the
// preview, the data package, the coverage checks and the vacuum list all read it. Notes
// (agent-note erasure) and TurnSweeps (retention) may be nil until wired.
type Service struct {
	DB         *bun.DB
	Docs       spaces.Documents
	Hasher     keyed.Hasher
	Keys       keystore.Store
	Subjects   *subjects.Service
	State      *state.Service
	Erasers    *erasure.Registry
	TurnSweeps TurnSweeper
	NoteSweeps NoteSweeper // retention.notes (nil: the notes phase sweeps nothing)
	Notes      erasure.SourceEraser
	// Signer signs each certificate when its erasure completes (nil: stored unsigned). Never
	// a typed nil: leave it nil when there is no key.
	Signer CertificateSigner
	// Proposals fails a drafting distilled proposal whose workflow ended without finishing it
	// (Reconcile); nil leaves such proposals alone.
	Proposals ProposalFailer
	// ExportTTL is how long packages live (DefaultExportTTL when zero).
	ExportTTL time.Duration
	// FeedRetention is how old an export feed change record must be before the exports
	// phase of a sweep prunes it, once every configured sink acknowledged it (PruneFeeds);
	// 0 prunes nothing.
	FeedRetention time.Duration
	Now           func() time.Time
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
