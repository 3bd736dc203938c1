package compliance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/erasure"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/state"
	"github.com/agentmemory/agentmemory/models"
)

// Stores named in certificates (issue 12 §2, §3): each registered eraser by its Name, and
// the key store.
const (
	StoreState    = "state"
	StoreTurns    = "turns"
	StoreExports  = "exports"
	StoreSubjects = "subjects"
	// StoreKnowledge is internal/knowledge's Eraser, registered by the composition root
	// (knowledge imports this package's dependencies, so it cannot be registered here).
	StoreKnowledge = "knowledge"
	StoreKeys      = "keys"
)

// WorkflowHistoryNote is what certificates say of Temporal: workflow ids and histories hold
// erasure, export and space ids, counts and reason codes only (never a handle, a value or a
// conversation id), so there is nothing of the subject to erase there.
const WorkflowHistoryNote = "workflow ids and histories carry erasure ids, counts and reason codes only: no subject data"

// StoreReport is one store's line in a certificate: what the erasure removed there (items)
// and what the probe found after the steps (must be 0, else the erasure fails), and the
// columns it covers.
//
// Content is what the store's content probe found (issue 29 §1b), set for a subject erasure
// whose handles were known in clear; Probe counts the handle matches it still found too.
type StoreReport struct {
	Store   string         `json:"store"`
	Removed int            `json:"removed"`
	Probe   int            `json:"probe"`
	Covers  []string       `json:"covers"`
	Content *ContentReport `json:"content,omitempty"`
	// Backups says how the erased entries are gone from backups (issue 29 §1, ER-1):
	// "shredded" (sealed under a destroyed key), "rebuilt_on_restore" (derived data the
	// restore procedure rebuilds), "holds_none" (the store holds nothing of the target) or
	// "not_sealed" (a known gap: a restored backup still holds them). Empty in certificates
	// issued before it existed (they still verify: the signature covers what was signed).
	Backups string `json:"backups,omitempty"`
}

// Registry returns the erasure registry (Erasers; an empty one when nil, so that nothing
// is erased and the certificate says what is not covered).
func (s *Service) Registry() *erasure.Registry {
	if s.Erasers != nil {
		return s.Erasers
	}
	return &erasure.Registry{}
}

// target is the erasure's resolved Target.
func target(row *models.Erasure, hashes, profileIDs []string) erasure.Target {
	t := erasure.Target{SpaceID: row.SpaceID, Kind: row.TargetKind, HandleHashes: hashes, ProfileIDs: profileIDs}
	if row.TargetKind == TargetConversation {
		t.ScopeHash, t.ConversationID = row.TargetHash, row.TargetRef
	}
	return t
}

// eraseStore runs the registered eraser name as one step (see step); a store not registered
// erases nothing (the certificate lists what is not covered). The fixed steps of workflows
// started before the registry drove the erasure (EraseStates, EraseTurns, ...) use it.
func (s *Service) eraseStore(ctx context.Context, spaceID, id, name string) (int, error) {
	e := s.Registry().Get(name)
	if e == nil {
		return 0, nil
	}
	return s.runEraser(ctx, spaceID, id, e)
}

// runEraser is one step (see step) of eraser e over the erasure's target: what e reaches by
// linkage, then, for a subject, what its content probe ties to her by a handle (issue 29
// §1b; name-only findings are recorded as residue).
func (s *Service) runEraser(ctx context.Context, spaceID, id string, e erasure.Eraser) (int, error) {
	pre, err := s.loadErasure(ctx, s.DB, spaceID, id)
	if err != nil {
		return 0, err
	}
	m, err := s.matcherOf(ctx, pre)
	if err != nil && !errors.Is(err, errNeedlesUnreadable) { // unreadable: linkage only, the certificate says so
		return 0, err
	}
	return s.step(ctx, spaceID, id, func(ctx context.Context, tx bun.Tx, row *models.Erasure, hashes, profileIDs []string) ([]erased, error) {
		t := target(row, hashes, profileIDs)
		r, err := e.EraseSubject(ctx, tx, t)
		if err != nil {
			return nil, err
		}
		if r == nil {
			r = erasure.Reach{}
		}
		if m != nil {
			t.Content = m
			byContent, err := s.eraseByContent(ctx, tx, row, e, t)
			if err != nil {
				return nil, err
			}
			for k, ids := range byContent {
				r.Add(k, ids...)
			}
		}
		return fromReach(e.Name(), r), nil
	})
}

// EraseStore is the erasure workflow's one store step (issue 29 §4): the registered eraser
// name erases what the erasure's target reaches there, in one transaction with the record of
// it (see step), and it returns how many items it removed. name must be one of the stores the
// erasure recorded when it was resolved (Stores) and be registered in this process. Errors:
// fault.Invalid "unknown_store" (not recorded on the erasure), fault.Conflict
// "store_not_registered" (recorded, but this build has no such eraser: never a silent skip),
// "erasure_not_running", "corrupt_record".
func (s *Service) EraseStore(ctx context.Context, spaceID, id, name string) (int, error) {
	row, err := s.loadErasure(ctx, s.DB, spaceID, id)
	if err != nil {
		return 0, err
	}
	var stores []string
	if err := decodeRecord(row.ID, "stores", row.Stores, &stores); err != nil {
		return 0, err
	}
	if !slices.Contains(stores, name) {
		return 0, fault.New(fault.Invalid, "unknown_store", "the erasure records no store %q", name)
	}
	e := s.Registry().Get(name)
	if e == nil {
		return 0, fault.New(fault.Conflict, "store_not_registered", "no eraser %q is registered in this build", name)
	}
	return s.runEraser(ctx, spaceID, id, e)
}

func fromReach(store string, r erasure.Reach) []erased {
	kinds := make([]string, 0, len(r))
	for k := range r {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var out []erased
	for _, k := range kinds {
		if len(r[k]) > 0 {
			out = append(out, erased{Kind: k, IDs: r[k], Store: store})
		}
	}
	return out
}

// probe asks every registered store, and the key store, for residue of the erasure's target
// inside idb (issue 12 §3), and returns one report per store with what items recorded as
// removed there. For a subject whose handles are known in clear it also runs each store's
// content probe (issue 29 §1b): a handle match still found counts as residue (Probe and
// Content.HandleLeft), and the name-only findings are returned per store (names) for Certify
// to record.
func (s *Service) probe(ctx context.Context, idb bun.IDB, row *models.Erasure, items itemSet) ([]StoreReport, map[string][]erasure.Finding, error) {
	m, err := s.matcherOf(ctx, row)
	unreadable := errors.Is(err, errNeedlesUnreadable)
	if err != nil && !unreadable {
		return nil, nil, err
	}
	out, err := s.probeLinks(ctx, idb, row, items)
	if err != nil {
		return nil, nil, err
	}
	names := map[string][]erasure.Finding{}
	if unreadable {
		contentUnprobed(out)
		return out, names, nil
	}
	if m == nil {
		return out, names, nil
	}
	hashes, profileIDs, err := scopeOf(row)
	if err != nil {
		return nil, nil, err
	}
	t := target(row, hashes, profileIDs)
	t.Content = m
	for i := range out {
		e := s.Registry().Get(out[i].Store)
		if e == nil {
			continue // the key store: keys are not text
		}
		found, err := e.ProbeContent(ctx, idb, t)
		if err != nil {
			return nil, nil, fmt.Errorf("compliance: content probe %s: %w", e.Name(), err)
		}
		left := len(erasure.ByMatch(found, erasure.MatchHandle))
		out[i].Probe += left
		out[i].Content = &ContentReport{Searched: e.Searched(), HandleLeft: left}
		names[e.Name()] = erasure.ByMatch(found, erasure.MatchName)
	}
	return out, names, nil
}

// probeLinks is probe by linkage: each store's Residue and the key store.
func (s *Service) probeLinks(ctx context.Context, idb bun.IDB, row *models.Erasure, items itemSet) ([]StoreReport, error) {
	hashes, profileIDs, err := scopeOf(row)
	if err != nil {
		return nil, err
	}
	if row.Stores != "" {
		var stores []string // recorded by ResolveErasure; a record that does not decode fails
		if err := decodeRecord(row.ID, "stores", row.Stores, &stores); err != nil {
			return nil, err
		}
	}
	t := target(row, hashes, profileIDs)
	removed := map[string]int{}
	for _, it := range items {
		removed[it.Store] += it.Count
	}
	var out []StoreReport
	for _, e := range s.Registry().Erasers() {
		r, err := e.Residue(ctx, idb, t)
		if err != nil {
			return nil, fmt.Errorf("compliance: probe %s: %w", e.Name(), err)
		}
		rep := StoreReport{Store: e.Name(), Removed: removed[e.Name()], Probe: r.Count(), Covers: []string{}, Backups: e.Backups(t)}
		for _, c := range e.Covers() {
			rep.Covers = append(rep.Covers, c.String())
		}
		out = append(out, rep)
	}
	if row.TargetKind == TargetSubject {
		var keys []string
		if row.KeyIDs != "" {
			if err := decodeRecord(row.ID, "key_ids", row.KeyIDs, &keys); err != nil {
				return nil, err
			}
		}
		for _, h := range hashes {
			keys = append(keys, state.SubjectKeyID(h))
		}
		keys = append(keys, profileIDs...)
		left := 0
		for _, k := range keys {
			ok, err := s.Keys.Exists(ctx, k) // a stored row is residue, whether or not it opens
			if err != nil {
				return nil, fmt.Errorf("compliance: probe keys: %w", err)
			}
			if ok {
				left++
			}
		}
		out = append(out, StoreReport{Store: StoreKeys, Removed: removed[StoreKeys], Probe: left, Covers: []string{"subject keys"}, Backups: erasure.Shredded})
	}
	return out, nil
}

// ExportsEraser is the data-package store's eraser (GOV-3: packages are erased with the
// subject, by the keyed hash of the handle they were requested for).
type ExportsEraser struct{}

// Name is "exports".
func (ExportsEraser) Name() string { return StoreExports }

// Covers lists the packages' subject hash.
func (ExportsEraser) Covers() []erasure.Column {
	return []erasure.Column{{Table: "export_packages", Column: "subject_hash"}}
}

func (ExportsEraser) find(ctx context.Context, idb bun.IDB, t erasure.Target) ([]string, error) {
	if t.Kind != erasure.Subject || len(t.HandleHashes) == 0 {
		return nil, nil
	}
	var ids []string
	if err := idb.NewSelect().Model((*models.ExportPackage)(nil)).Column("id").
		Where("space_id = ? AND subject_hash IN (?)", t.SpaceID, bun.In(t.HandleHashes)).Order("id ASC").Scan(ctx, &ids); err != nil {
		return nil, fmt.Errorf("compliance: find exports: %w", err)
	}
	return ids, nil
}

// EraseSubject deletes the subject's packages inside tx.
func (e ExportsEraser) EraseSubject(ctx context.Context, tx bun.Tx, t erasure.Target) (erasure.Reach, error) {
	ids, err := e.find(ctx, tx, t)
	if err != nil || len(ids) == 0 {
		return erasure.Reach{}, err
	}
	if _, err := tx.NewDelete().Model((*models.ExportPackage)(nil)).Where("id IN (?)", bun.In(ids)).Exec(ctx); err != nil {
		return nil, fmt.Errorf("compliance: delete exports: %w", err)
	}
	return erasure.Reach{KindExportPackage: ids}, nil
}

// Residue finds the subject's packages still stored.
func (e ExportsEraser) Residue(ctx context.Context, idb bun.IDB, t erasure.Target) (erasure.Reach, error) {
	ids, err := e.find(ctx, idb, t)
	if err != nil {
		return nil, err
	}
	r := erasure.Reach{}
	r.Add(KindExportPackage, ids...)
	return r, nil
}

// Backups is erasure.Shredded: a subject's packages are sealed under the subject's key,
// which the erasure destroys (a package of a handle the service knew nothing of holds
// nothing of the subject).
func (ExportsEraser) Backups(erasure.Target) string { return erasure.Shredded }

// Export gives the zero Export: a data package never carries earlier packages.
func (ExportsEraser) Export(context.Context, bun.IDB, erasure.Target) (erasure.Export, error) {
	return erasure.Export{}, nil
}

// Searched says what the data-package store's content probe reads: nothing, packages are
// sealed under the subject's key.
func (ExportsEraser) Searched() string { return "nothing readable: data packages are sealed" }

// ProbeContent finds nothing: no package column is readable text (Searched).
func (ExportsEraser) ProbeContent(context.Context, bun.IDB, erasure.Target) ([]erasure.Finding, error) {
	return nil, nil
}

// EraseFound erases nothing: ProbeContent finds nothing; any finding is an error.
func (ExportsEraser) EraseFound(_ context.Context, _ bun.Tx, _ string, found []erasure.Finding) (erasure.Reach, error) {
	if len(found) > 0 {
		return nil, fmt.Errorf("compliance: erase found: a finding of another store")
	}
	return erasure.Reach{}, nil
}
