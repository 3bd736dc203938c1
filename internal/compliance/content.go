package compliance

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/erasure"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/models"
)

// Content probe (issue 29 §1b). A subject erasure looks for the subject not only by linkage
// (keyed hashes, profile ids) but by content: each store searches its readable text for her
// handles and names (erasure.ContentProber). What a handle matches is erased within the
// erasure's steps; what only her name matches is recorded as residue (an ErasureFinding
// "pending") for a person to decide, and the erasure ends StatusCompletedWithResidue.
//
// The handles and names exist in clear only in memory and on the erasure row, sealed under
// the erasure's own key (needlesKeyID), which the erasure destroys when it ends (completed or
// failed): a backup of the row taken during the erasure opens to nothing afterwards.

// Statuses of a finding (models.ErasureFinding.Status).
const (
	FindingErased     = "erased"
	FindingPending    = "pending"
	FindingNotSubject = "not_subject"
)

// errNeedlesUnreadable is openNeedles' answer when this process holds the needles' key but
// cannot unwrap it (a wrong AGENTMEMORY_KEK): the steps erase by linkage only, and the
// certificate says the content probe did not run (NotProbed), never "nothing found".
var errNeedlesUnreadable = errors.New("compliance: the erasure's needles key does not unwrap here")

// NotProbed is a store's Content.Searched when the content probe could not run.
const NotProbed = "not probed: the erasure's needles could not be opened in this process"

// needlesKeyID names the key sealing erasure id's needles.
func needlesKeyID(id string) string { return "erasure_needles:" + id }

// sealNeedles returns n sealed under erasure id's own key (created on first use).
func (s *Service) sealNeedles(ctx context.Context, id string, n erasure.Needles) ([]byte, error) {
	key, err := s.Keys.DataKey(ctx, needlesKeyID(id), true)
	if err != nil {
		return nil, fmt.Errorf("compliance: needles key: %w", err)
	}
	plain, err := json.Marshal(n)
	if err != nil {
		return nil, fmt.Errorf("compliance: encode needles: %w", err)
	}
	return keystore.Seal(key, plain, []byte("erasure-needles:"+id))
}

// openNeedles returns row's needles; ok is false when it has none or its key is gone (the
// erasure ended). Sealed bytes that do not open under an existing key are "corrupt_record".
func (s *Service) openNeedles(ctx context.Context, row *models.Erasure) (n erasure.Needles, ok bool, err error) {
	if len(row.SealedNeedles) == 0 || s.Keys == nil {
		return n, false, nil
	}
	key, err := s.Keys.DataKey(ctx, needlesKeyID(row.ID), false)
	if errors.Is(err, keystore.ErrNoKey) {
		return n, false, nil
	}
	if errors.Is(err, keystore.ErrUnknownKEK) {
		return n, false, errNeedlesUnreadable
	}
	if err != nil {
		return n, false, fmt.Errorf("compliance: needles key: %w", err)
	}
	plain, err := keystore.Open(key, row.SealedNeedles, []byte("erasure-needles:"+row.ID))
	if err != nil {
		return n, false, fault.New(fault.Conflict, "corrupt_record", "erasure %s: stored needles do not open", row.ID)
	}
	if err := json.Unmarshal(plain, &n); err != nil {
		return n, false, fault.New(fault.Conflict, "corrupt_record", "erasure %s: stored needles do not decode", row.ID)
	}
	return n, true, nil
}

// requestNeedles seals the requested handle (canonical) for a new subject erasure id, so
// that the content probe knows it even when no profile holds it.
func (s *Service) requestNeedles(ctx context.Context, spaceID, id, canonical string) ([]byte, error) {
	if s.Keys == nil {
		return nil, nil
	}
	f, err := s.Docs.Features(ctx, spaceID)
	if err != nil {
		return nil, err
	}
	return s.sealNeedles(ctx, id, erasure.Needles{Handles: []string{canonical}, Region: f.Region()})
}

// profileNeedles reads, outside any transaction, the subject's profiles (those holding the
// erasure's target handle) and returns row's needles with their names and handles added,
// sealed again; nil when row has no needles (a conversation, or an erasure requested before
// the content probe existed).
func (s *Service) profileNeedles(ctx context.Context, row *models.Erasure) ([]byte, error) {
	n, ok, err := s.openNeedles(ctx, row)
	if err != nil || !ok {
		return nil, err
	}
	ids, _, err := subjectScope(ctx, s.DB, row.SpaceID, row.TargetHash)
	if err != nil {
		return nil, err
	}
	for _, pid := range ids {
		prof, err := s.Subjects.Get(ctx, row.SpaceID, pid)
		if fault.As(err) != nil {
			continue // gone or unreadable since: nothing of it to look for
		}
		if err != nil {
			return nil, err
		}
		add := erasure.Needles{Handles: prof.Handles}
		if prof.Name != "" {
			add.Names = []string{prof.Name}
		}
		n = n.Merge(add)
	}
	return s.sealNeedles(ctx, row.ID, n)
}

// matcherOf is the content matcher of a subject erasure row (nil: no content probe).
func (s *Service) matcherOf(ctx context.Context, row *models.Erasure) (*erasure.Matcher, error) {
	if row.TargetKind != TargetSubject {
		return nil, nil
	}
	n, ok, err := s.openNeedles(ctx, row)
	if err != nil || !ok || n.Empty() {
		return nil, err
	}
	return erasure.NewMatcher(n), nil
}

// contentUnprobed is probe's answer when row's needles do not unwrap (errNeedlesUnreadable):
// every store's Content says NotProbed.
func contentUnprobed(out []StoreReport) {
	for i := range out {
		if out[i].Store != StoreKeys {
			out[i].Content = &ContentReport{Searched: NotProbed}
		}
	}
}

// destroyNeedles destroys erasure id's needles key (the row's sealed needles open to nothing
// after it); destroying it twice does nothing.
func (s *Service) destroyNeedles(ctx context.Context, id string) error {
	if s.Keys == nil {
		return nil
	}
	if err := s.Keys.Destroy(ctx, needlesKeyID(id)); err != nil {
		return fmt.Errorf("compliance: destroy needles key: %w", err)
	}
	return nil
}

// eraseByContent is the content half of store e's step inside tx: it probes e's readable
// text for the subject (m), erases what a handle matched and records every finding (erased,
// or pending for a name only). It returns what it erased.
func (s *Service) eraseByContent(ctx context.Context, tx bun.Tx, row *models.Erasure, e erasure.Eraser, t erasure.Target) (erasure.Reach, error) {
	found, err := e.ProbeContent(ctx, tx, t)
	if err != nil {
		return nil, fmt.Errorf("compliance: content probe %s: %w", e.Name(), err)
	}
	handles := erasure.ByMatch(found, erasure.MatchHandle)
	r, err := e.EraseFound(ctx, tx, row.SpaceID, handles)
	if err != nil {
		return nil, fmt.Errorf("compliance: erase found %s: %w", e.Name(), err)
	}
	if err := s.recordFindings(ctx, tx, row, e.Name(), found); err != nil {
		return nil, err
	}
	return r, nil
}

// recordFindings records found (of store) for row inside tx: a handle match as erased, a
// name match as pending; a finding already recorded keeps its status (a retried step, or a
// person's decision).
func (s *Service) recordFindings(ctx context.Context, tx bun.IDB, row *models.Erasure, store string, found []erasure.Finding) error {
	now := s.now()
	for _, f := range found {
		st := FindingPending
		if f.Match == erasure.MatchHandle {
			st = FindingErased
		}
		fr := &models.ErasureFinding{ID: auth.NewID("ef"), SpaceID: row.SpaceID, ErasureID: row.ID, Store: store, Kind: f.Kind,
			ItemID: f.ID, Location: f.Where, MatchKind: f.Match, Status: st, CreatedAt: now}
		if _, err := tx.NewInsert().Model(fr).On("CONFLICT (erasure_id, store, kind, item_id) DO NOTHING").Exec(ctx); err != nil {
			return fmt.Errorf("compliance: record finding: %w", err)
		}
	}
	return nil
}

// ContentReport is a store's content-probe line in a certificate (issue 29 §1b): what it
// searched, how many items a subject handle matched (all erased by the erasure: ByHandle), how
// many only her name matched (ByName, listed as residue for a person to decide), and how
// many handle matches the last probe still found (HandleLeft: 0, else the erasure fails).
type ContentReport struct {
	Searched   string `json:"searched"`
	ByHandle   int    `json:"by_handle_erased"`
	ByName     int    `json:"by_name_residue"`
	HandleLeft int    `json:"handle_left"`
}

// findingCounts returns, per store, the findings recorded for erasure id by match kind.
func findingCounts(ctx context.Context, idb bun.IDB, id string) (map[string]map[string]int, error) {
	var rows []models.ErasureFinding
	if err := idb.NewSelect().Model(&rows).Column("store", "match_kind").Where("erasure_id = ?", id).Scan(ctx); err != nil {
		return nil, fmt.Errorf("compliance: count findings: %w", err)
	}
	out := map[string]map[string]int{}
	for _, r := range rows {
		if out[r.Store] == nil {
			out[r.Store] = map[string]int{}
		}
		out[r.Store][r.MatchKind]++
	}
	return out, nil
}

// contentReports records, inside tx, the name-only findings of the last probe (names, per
// store) and fills each store's Content with what the erasure's content probe found over
// every round (ByHandle: erased; ByName: residue). It returns how many findings the erasure
// has in all and how many are name-only residue.
func (s *Service) contentReports(ctx context.Context, tx bun.Tx, row *models.Erasure, stores []StoreReport, names map[string][]erasure.Finding) (found, residue int, err error) {
	for _, st := range stores {
		if err := s.recordFindings(ctx, tx, row, st.Store, names[st.Store]); err != nil {
			return 0, 0, err
		}
	}
	counts, err := findingCounts(ctx, tx, row.ID)
	if err != nil {
		return 0, 0, err
	}
	for i := range stores {
		c := counts[stores[i].Store]
		if stores[i].Content != nil {
			stores[i].Content.ByHandle, stores[i].Content.ByName = c[erasure.MatchHandle], c[erasure.MatchName]
		}
		if stores[i].Content != nil && stores[i].Content.Searched == NotProbed {
			found++ // unknown is not "nothing found"
		}
		found += c[erasure.MatchHandle] + c[erasure.MatchName]
		residue += c[erasure.MatchName]
	}
	return found, residue, nil
}

// ResidueItem is one name-only finding of an erasure's content probe (issue 29 §1b): the
// store, the item's kind and id there, where it was found, and its status (FindingPending
// until a person decides FindingErased or FindingNotSubject, with who and when).
type ResidueItem struct {
	ID        string     `json:"finding_id"`
	Store     string     `json:"store"`
	Kind      string     `json:"kind"`
	ItemID    string     `json:"item_id"`
	Where     string     `json:"where"`
	Status    string     `json:"status"`
	DecidedBy string     `json:"decided_by,omitempty"`
	DecidedAt *time.Time `json:"decided_at,omitempty"`
}

// residueOf lists erasure id's name-only findings in store, kind and item order.
func residueOf(ctx context.Context, idb bun.IDB, id string) ([]ResidueItem, error) {
	var rows []models.ErasureFinding
	if err := idb.NewSelect().Model(&rows).Where("erasure_id = ? AND match_kind = ?", id, erasure.MatchName).
		Order("store ASC", "kind ASC", "item_id ASC").Scan(ctx); err != nil {
		return nil, fmt.Errorf("compliance: list residue: %w", err)
	}
	out := make([]ResidueItem, 0, len(rows))
	for _, r := range rows {
		it := ResidueItem{ID: r.ID, Store: r.Store, Kind: r.Kind, ItemID: r.ItemID, Where: r.Location, Status: r.Status, DecidedBy: r.DecidedBy}
		if r.DecidedAt != nil {
			t := r.DecidedAt.UTC()
			it.DecidedAt = &t
		}
		out = append(out, it)
	}
	return out, nil
}

// Residue decisions (ResidueDecision.Decision).
const (
	DecideErase      = "erase"
	DecideNotSubject = "not_subject"
)

// ResidueDecision is the body of POST /v1/erasures/{id}/residue/{finding_id}: "erase" (the
// store deletes the item now) or "not_subject" (it is someone else; the item stays).
type ResidueDecision struct {
	Decision string `json:"decision"`
}

// DecideResidue records p's decision (role compliance) on a pending name-only finding of an
// erasure of p's space, in one transaction with an "erasure.residue" compliance receipt (ids
// and the decision only): "erase" deletes the item through its store's EraseFound, "not_subject"
// leaves it. It returns the finding as decided. Errors: fault.Forbidden (role), fault.Invalid
// "invalid_member" (decision), fault.NotFound "finding_not_found", fault.Conflict
// "already_decided", "store_not_registered".
func (s *Service) DecideResidue(ctx context.Context, p auth.Principal, erasureID, findingID string, d ResidueDecision) (ResidueItem, error) {
	if err := MayRequest(p); err != nil {
		return ResidueItem{}, err
	}
	if d.Decision != DecideErase && d.Decision != DecideNotSubject {
		return ResidueItem{}, fault.New(fault.Invalid, "invalid_member", `decision is "erase" or "not_subject"`).With("member", "decision")
	}
	var out ResidueItem
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var f models.ErasureFinding
		err := tx.NewSelect().Model(&f).Where("id = ? AND erasure_id = ? AND space_id = ? AND match_kind = ?", findingID, erasureID, p.SpaceID, erasure.MatchName).Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			return fault.New(fault.NotFound, "finding_not_found", "no residue with that id on this erasure")
		}
		if err != nil {
			return fmt.Errorf("compliance: load finding: %w", err)
		}
		if f.Status != FindingPending {
			return fault.New(fault.Conflict, "already_decided", "the residue was decided %s", f.Status)
		}
		status := FindingNotSubject
		if d.Decision == DecideErase {
			if err := s.eraseResidue(ctx, tx, &f); err != nil {
				return err
			}
			status = FindingErased
		}
		now := s.now()
		if _, err := tx.NewUpdate().Model((*models.ErasureFinding)(nil)).Set("status = ?", status).Set("decided_by = ?", p.KeyID).
			Set("decided_at = ?", now).Where("id = ? AND status = ?", f.ID, FindingPending).Exec(ctx); err != nil {
			return fmt.Errorf("compliance: decide finding: %w", err)
		}
		if _, err := receipts.Append(ctx, tx, p.SpaceID, receipts.Entry{
			Kind: receipts.KindCompliance, Action: "erasure.residue", ActorKey: p.KeyID, ObjectIDs: []string{erasureID, f.ID, f.ItemID},
			Detail: map[string]any{"decision": d.Decision, "store": f.Store, "kind": f.Kind},
		}, now); err != nil {
			return err
		}
		out = ResidueItem{ID: f.ID, Store: f.Store, Kind: f.Kind, ItemID: f.ItemID, Where: f.Location, Status: status, DecidedBy: p.KeyID, DecidedAt: &now}
		return nil
	})
	return out, err
}

// eraseResidue deletes finding f's item through its store inside tx.
func (s *Service) eraseResidue(ctx context.Context, tx bun.Tx, f *models.ErasureFinding) error {
	e := s.Registry().Get(f.Store)
	if e == nil {
		return fault.New(fault.Conflict, "store_not_registered", "no eraser %q is registered in this build", f.Store)
	}
	_, err := e.EraseFound(ctx, tx, f.SpaceID, []erasure.Finding{{Kind: f.Kind, ID: f.ItemID, Where: f.Location, Match: f.MatchKind}})
	return err
}
