// Package changes keeps the change requests of a space's documents (issue 15, the Console's
// "approved diff"): a person proposes a whole document, everyone sees it as a line diff against
// the document it was proposed against, and it is applied only when a second person holding
// role security approves it, never the proposer. The apply is the same write as a direct PUT
// (spaces.Documents.Write), in the same transaction as the change's status, its receipt and
// its event. A change whose document moved on since it was proposed is stale and never
// applied. The package owns the document_changes table; it never imports gin or Temporal.
package changes

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/events"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/models"
)

// Service proposes, lists, approves and rejects change requests. Docs validates and writes
// the documents; DB is the store.
type Service struct {
	DB   *bun.DB
	Docs spaces.Documents
}

// Change request statuses: a change is pending until a second person holding role security
// applies it or someone rejects it; it becomes stale when its document changed since it was
// proposed (another change applied, a direct PUT), and is then never applied.
const (
	Pending  = "pending"
	Applied  = "applied"
	Rejected = "rejected"
	Stale    = "stale"
)

// Statuses lists the statuses in their lifecycle order.
var Statuses = []string{Pending, Applied, Rejected, Stale}

// Events of the change requests (the outbox, GOV-4): ids, the document's name and versions,
// never the document's text.
const (
	EventProposed = "space.document_change_proposed"
	EventApplied  = "space.document_change_applied"
	EventRejected = "space.document_change_rejected"
)

// MaxReason is the longest rejection reason, in characters.
const MaxReason = 500

// Change is a change request of a space document as the API shows it: Document is the
// proposed document as it would be stored, Diff a unified line diff (Diff) from the document
// at BaseVersion to it. ProposedBy and DecidedBy are key ids; AppliedVersion is the document's
// version the change wrote.
type Change struct {
	ID             string          `json:"id"`
	Name           string          `json:"name"`
	Status         string          `json:"status"`
	BaseVersion    int64           `json:"base_version"`
	Document       json.RawMessage `json:"document"`
	Diff           string          `json:"diff"`
	ProposedBy     string          `json:"proposed_by"`
	DecidedBy      *string         `json:"decided_by"`
	Reason         *string         `json:"reason"`
	AppliedVersion *int64          `json:"applied_version"`
	CreatedAt      time.Time       `json:"created_at"`
	DecidedAt      *time.Time      `json:"decided_at"`
}

// changeOf is row as the API shows it; current is the document's version now, which makes a
// pending change proposed against another version stale.
func changeOf(r models.DocumentChange, current int64) Change {
	status := r.Status
	if status == Pending && r.BaseVersion != current {
		status = Stale
	}
	return Change{
		ID: r.ID, Name: r.Name, Status: status, BaseVersion: r.BaseVersion, Document: json.RawMessage(r.Body),
		Diff: Diff(r.Name, r.BaseVersion, r.BaseBody, r.Body), ProposedBy: r.ProposedBy, DecidedBy: r.DecidedBy,
		Reason: r.Reason, AppliedVersion: r.AppliedVersion, CreatedAt: r.CreatedAt, DecidedAt: r.DecidedAt,
	}
}

// Propose stores body as a pending change request of document name by p, against the
// document's current version, with a "document.change.propose" receipt and an EventProposed
// event, and returns it with its diff. It needs the role a direct PUT of the document needs
// (spaces.Documents.MayPut: fault.Forbidden "role_required"; an unknown name is
// fault.NotFound "document_not_found"); it works whether direct PUT is allowed or not. body is
// validated as a PUT validates it (fault.Invalid naming the member); a document identical to
// the current one is fault.Conflict "change_without_difference". In every error nothing is
// stored.
func (s *Service) Propose(ctx context.Context, p auth.Principal, name string, body []byte, now time.Time) (Change, error) {
	if err := s.Docs.MayPut(p, name); err != nil {
		return Change{}, err
	}
	now = now.UTC().Truncate(time.Microsecond)
	var row models.DocumentChange
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		text, err := s.Docs.Normalize(ctx, tx, p.SpaceID, name, body)
		if err != nil {
			return err
		}
		base, version, err := s.Docs.Current(ctx, tx, p.SpaceID, name)
		if err != nil {
			return err
		}
		if text == base {
			return fault.New(fault.Conflict, "change_without_difference", "the proposed document is the current one")
		}
		row = models.DocumentChange{
			ID: auth.NewID("chg"), SpaceID: p.SpaceID, Name: name, Body: text, BaseBody: base, BaseVersion: version,
			Status: Pending, ProposedBy: p.KeyID, ProposerName: p.Name, CreatedAt: now,
		}
		if _, err := tx.NewInsert().Model(&row).Exec(ctx); err != nil {
			return fmt.Errorf("changes: insert: %w", err)
		}
		if _, err := receipts.Append(ctx, tx, p.SpaceID, receipts.Entry{
			Kind: receipts.KindAdmin, Action: "document.change.propose", ActorKey: p.KeyID,
			ObjectIDs: []string{row.ID, name}, Detail: map[string]any{"base_version": version},
		}, now); err != nil {
			return err
		}
		_, err = events.Enqueue(ctx, tx, events.Event{Type: EventProposed, SpaceID: p.SpaceID, ChangeID: row.ID, Document: name, Version: version}, now)
		return err
	})
	if err != nil {
		return Change{}, err
	}
	return changeOf(row, row.BaseVersion), nil
}

// mayRead refuses agent keys: documents and their changes are read by people.
func mayRead(p auth.Principal) error {
	if p.IsAgent() {
		return fault.New(fault.Forbidden, "role_required", "documents are read by people")
	}
	return nil
}

func knownDocument(name string) error {
	if name != spaces.DocFeatures && name != spaces.DocObjectTypes && name != spaces.DocViews && name != spaces.DocBoardGrants && name != spaces.DocBridges {
		return fault.New(fault.NotFound, "document_not_found", "the documents are features, object-types, views, board-grants and bridges")
	}
	return nil
}

// List returns the change requests of document name, newest first, at most limit, only
// those of status when it is not empty (a pending change whose document moved on lists as
// stale). Any person key reads them (agent keys are fault.Forbidden "role_required"); an
// unknown name is fault.NotFound "document_not_found" and an unknown status fault.Invalid
// "invalid_query" (member status).
func (s *Service) List(ctx context.Context, p auth.Principal, name, status string, limit int) ([]Change, error) {
	if err := mayRead(p); err != nil {
		return nil, err
	}
	if err := knownDocument(name); err != nil {
		return nil, err
	}
	if status != "" && !slices.Contains(Statuses, status) {
		return nil, fault.New(fault.Invalid, "invalid_query", "status must be one of %s", strings.Join(Statuses, ", ")).With("member", "status")
	}
	_, current, err := s.Docs.Current(ctx, s.DB, p.SpaceID, name)
	if err != nil {
		return nil, err
	}
	var rows []models.DocumentChange
	q := s.DB.NewSelect().Model(&rows).Where("space_id = ? AND name = ?", p.SpaceID, name)
	switch status {
	case "":
	case Pending:
		q = q.Where("status = ? AND base_version = ?", Pending, current)
	case Stale:
		q = q.Where("(status = ? OR (status = ? AND base_version <> ?))", Stale, Pending, current)
	default:
		q = q.Where("status = ?", status)
	}
	if err := q.OrderExpr("created_at DESC, id DESC").Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("changes: list: %w", err)
	}
	out := make([]Change, 0, len(rows))
	for _, r := range rows {
		out = append(out, changeOf(r, current))
	}
	return out, nil
}

// Get returns change request id of document name. Any person key reads it (agent keys are
// fault.Forbidden "role_required"); an id that is not a change of name in p's space is
// fault.NotFound "change_not_found".
func (s *Service) Get(ctx context.Context, p auth.Principal, name, id string) (Change, error) {
	if err := mayRead(p); err != nil {
		return Change{}, err
	}
	if err := knownDocument(name); err != nil {
		return Change{}, err
	}
	row, err := load(ctx, s.DB, p.SpaceID, name, id, false)
	if err != nil {
		return Change{}, err
	}
	_, current, err := s.Docs.Current(ctx, s.DB, p.SpaceID, name)
	if err != nil {
		return Change{}, err
	}
	return changeOf(row, current), nil
}

func load(ctx context.Context, idb bun.IDB, spaceID, name, id string, lock bool) (models.DocumentChange, error) {
	var row models.DocumentChange
	q := idb.NewSelect().Model(&row).Where("space_id = ? AND name = ? AND id = ?", spaceID, name, id)
	if lock && !db.IsSQLite(idb) {
		q = q.For("UPDATE")
	}
	err := q.Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return row, fault.New(fault.NotFound, "change_not_found", "no change request with that id for this document")
	}
	if err != nil {
		return row, fmt.Errorf("changes: load: %w", err)
	}
	return row, nil
}

// samePerson reports whether p is the person who proposed row: the same key, or a key of the
// same person name however spelled (auth.SamePersonName: case, white space, invisible
// characters, combining marks, compatibility forms and TR39 look-alikes aside). Stored names
// are compared at approval time, so keys minted before names were checked are covered too.
func samePerson(p auth.Principal, row models.DocumentChange) bool {
	return p.KeyID == row.ProposedBy || auth.SamePersonName(p.Name, row.ProposerName)
}

// mintedAfter reports whether the approving key p was minted after row was proposed: such a key
// never approves it, so a proposer who can mint keys (role admin) cannot mint their own
// "second person" for a change already waiting. Errors: the key's row cannot be read.
func mintedAfter(ctx context.Context, tx bun.IDB, p auth.Principal, row models.DocumentChange) (bool, error) {
	var key models.APIKey
	if err := tx.NewSelect().Model(&key).Column("created_at").
		Where("id = ? AND space_id = ?", p.KeyID, p.SpaceID).Scan(ctx); err != nil {
		return false, fmt.Errorf("changes: approving key: %w", err)
	}
	return key.CreatedAt.After(row.CreatedAt), nil
}

// maxMintChain bounds the walk up an approving key's created_by chain (mintedByProposer): a
// chain is as long as the keys minted one from another, far fewer in practice.
const maxMintChain = 64

// mintedByProposer reports whether the approving key p was minted by row's proposer, directly
// or transitively: it walks p's api_keys.created_by chain in p's space (up to maxMintChain
// keys; a created_by that is no key of the space, such as "cli" or an operator, ends it) and
// answers true when a key on it is the proposing key or a person key of the proposer's name
// (auth.SamePersonName), and also when the chain is longer than maxMintChain (it fails
// closed). So a proposer cannot mint their own "second person", before or after proposing.
// Errors: a key row cannot be read.
func mintedByProposer(ctx context.Context, tx bun.IDB, p auth.Principal, row models.DocumentChange) (bool, error) {
	id, seen := p.KeyID, map[string]bool{}
	for range maxMintChain {
		var key models.APIKey
		err := tx.NewSelect().Model(&key).Column("id", "kind", "name", "created_by").
			Where("id = ? AND space_id = ?", id, p.SpaceID).Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("changes: minting key: %w", err)
		}
		if id != p.KeyID && (key.ID == row.ProposedBy || (key.Kind == auth.KindPerson && auth.SamePersonName(key.Name, row.ProposerName))) {
			return true, nil
		}
		seen[id] = true
		if key.CreatedBy == "" || seen[key.CreatedBy] {
			return false, nil
		}
		id = key.CreatedBy
	}
	return true, nil
}

// Approve applies change request id of document name: in one transaction the document is
// written as a direct PUT writes it (spaces.Documents.Write: the "document.put" receipt, with
// change_id and proposed_by), the change becomes applied and an EventApplied event is
// enqueued; it returns the applied change. p must hold role security (fault.Forbidden
// "role_required") and be another person than the proposer (checkApprover: fault.Forbidden
// "change_own_proposal", "change_approver_too_new" or "change_approver_minted_by_proposer").
// An unknown id is fault.NotFound "change_not_found"; a change that is not pending is
// fault.Conflict "change_not_pending". When the document changed since the change was
// proposed, the change is recorded stale and the answer is fault.Conflict "change_stale"; the
// document is not touched. The proposed document is validated again (fault.Invalid naming the
// member; the change stays pending). Approval works whether direct PUT is allowed or not.
func (s *Service) Approve(ctx context.Context, p auth.Principal, name, id string, now time.Time) (Change, error) {
	if err := p.RequireRole(auth.RoleSecurity); err != nil {
		return Change{}, err
	}
	if err := knownDocument(name); err != nil {
		return Change{}, err
	}
	now = now.UTC().Truncate(time.Microsecond)
	var row models.DocumentChange
	stale := false
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if row, err = load(ctx, tx, p.SpaceID, name, id, true); err != nil {
			return err
		}
		if err := checkApprover(ctx, tx, p, row); err != nil {
			return err
		}
		if row.Status != Pending {
			return fault.New(fault.Conflict, "change_not_pending", "the change request is %s", row.Status)
		}
		stale, err = s.apply(ctx, tx, p, &row, now)
		return err
	})
	if err != nil {
		return Change{}, err
	}
	if stale {
		return Change{}, fault.New(fault.Conflict, "change_stale", "the document changed since this change was proposed; propose it again against the current document")
	}
	return changeOf(row, row.BaseVersion), nil
}

// checkApprover refuses an approver p of row who is, or may be, the proposer (the two-person
// rule): the same key or person name (samePerson: fault.Forbidden "change_own_proposal"), a
// key minted after the proposal (fault.Forbidden "change_approver_too_new") or a key minted,
// directly or through other keys, by the proposer (mintedByProposer: fault.Forbidden
// "change_approver_minted_by_proposer"). Errors reading the keys are returned as they are.
func checkApprover(ctx context.Context, tx bun.IDB, p auth.Principal, row models.DocumentChange) error {
	if samePerson(p, row) {
		return fault.New(fault.Forbidden, "change_own_proposal", "a change request is approved by another person than its proposer")
	}
	if after, err := mintedAfter(ctx, tx, p, row); err != nil {
		return err
	} else if after {
		return fault.New(fault.Forbidden, "change_approver_too_new", "a change request is approved by a key that existed before it was proposed")
	}
	if minted, err := mintedByProposer(ctx, tx, p, row); err != nil {
		return err
	} else if minted {
		return fault.New(fault.Forbidden, "change_approver_minted_by_proposer", "a change request is not approved by a key its proposer minted, directly or through other keys")
	}
	return nil
}

// apply writes row's document for approver p (the change is pending) and records the change
// applied with its EventApplied event; when the document moved on since the proposal it
// records the change stale instead and reports stale = true, the document untouched.
func (s *Service) apply(ctx context.Context, tx bun.Tx, p auth.Principal, row *models.DocumentChange, now time.Time) (stale bool, err error) {
	_, cur, err := s.Docs.Current(ctx, tx, p.SpaceID, row.Name)
	if err != nil {
		return false, err
	}
	if cur != row.BaseVersion {
		return true, markStale(ctx, tx, row, now)
	}
	text, err := s.Docs.Normalize(ctx, tx, p.SpaceID, row.Name, []byte(row.Body))
	if err != nil {
		return false, err
	}
	version, err := s.Docs.Write(ctx, tx, p, row.Name, text, row.BaseVersion, now,
		map[string]any{"change_id": row.ID, "proposed_by": row.ProposedBy})
	if fe := fault.As(err); fe != nil && fe.Code == "document_conflict" {
		return true, markStale(ctx, tx, row, now)
	}
	if err != nil {
		return false, err
	}
	decider := p.KeyID
	row.Status, row.DecidedBy, row.DecidedAt, row.AppliedVersion, row.Body = Applied, &decider, &now, &version, text
	if _, err := tx.NewUpdate().Model(row).Column("status", "decided_by", "decided_at", "applied_version", "body").WherePK().Exec(ctx); err != nil {
		return false, fmt.Errorf("changes: apply: %w", err)
	}
	_, err = events.Enqueue(ctx, tx, events.Event{Type: EventApplied, SpaceID: p.SpaceID, ChangeID: row.ID, Document: row.Name, Version: version}, now)
	return false, err
}

// markStale records row as stale (a refused approval: the document moved on).
func markStale(ctx context.Context, tx bun.Tx, row *models.DocumentChange, now time.Time) error {
	row.Status, row.DecidedAt = Stale, &now
	if _, err := tx.NewUpdate().Model(row).Column("status", "decided_at").WherePK().Exec(ctx); err != nil {
		return fmt.Errorf("changes: stale: %w", err)
	}
	return nil
}

// Reject rejects pending change request id of document name with reason (1 to MaxReason
// characters after trimming, else fault.Invalid "invalid_member", member reason), with a
// "document.change.reject" receipt and an EventRejected event, and returns it. p holds role
// security or is the proposer withdrawing the change (else fault.Forbidden "role_required").
// An unknown id is fault.NotFound "change_not_found"; a change that is not pending (stale
// included) is fault.Conflict "change_not_pending". The document is never touched.
func (s *Service) Reject(ctx context.Context, p auth.Principal, name, id, reason string, now time.Time) (Change, error) {
	if err := mayRead(p); err != nil {
		return Change{}, err
	}
	if err := knownDocument(name); err != nil {
		return Change{}, err
	}
	reason = strings.TrimSpace(reason)
	if reason == "" || utf8.RuneCountInString(reason) > MaxReason {
		return Change{}, fault.New(fault.Invalid, "invalid_member", "reason must be 1-%d characters", MaxReason).With("member", "reason")
	}
	now = now.UTC().Truncate(time.Microsecond)
	var row models.DocumentChange
	var current int64
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if row, err = load(ctx, tx, p.SpaceID, name, id, true); err != nil {
			return err
		}
		if !p.HasRole(auth.RoleSecurity) && p.KeyID != row.ProposedBy {
			return p.RequireRole(auth.RoleSecurity)
		}
		if _, current, err = s.Docs.Current(ctx, tx, p.SpaceID, name); err != nil {
			return err
		}
		if row.Status != Pending || row.BaseVersion != current {
			return fault.New(fault.Conflict, "change_not_pending", "the change request is %s", changeOf(row, current).Status)
		}
		decider := p.KeyID
		row.Status, row.DecidedBy, row.DecidedAt, row.Reason = Rejected, &decider, &now, &reason
		if _, err := tx.NewUpdate().Model(&row).Column("status", "decided_by", "decided_at", "reason").WherePK().Exec(ctx); err != nil {
			return fmt.Errorf("changes: reject: %w", err)
		}
		if _, err := receipts.Append(ctx, tx, p.SpaceID, receipts.Entry{
			Kind: receipts.KindAdmin, Action: "document.change.reject", ActorKey: p.KeyID,
			ObjectIDs: []string{row.ID, name}, Detail: map[string]any{"base_version": row.BaseVersion},
		}, now); err != nil {
			return err
		}
		_, err = events.Enqueue(ctx, tx, events.Event{Type: EventRejected, SpaceID: p.SpaceID, ChangeID: row.ID, Document: name, Version: row.BaseVersion}, now)
		return err
	})
	if err != nil {
		return Change{}, err
	}
	return changeOf(row, current), nil
}
