package compliance

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/erasure"
	"github.com/agentmemory/agentmemory/internal/events"
	"github.com/agentmemory/agentmemory/internal/state"
	"github.com/agentmemory/agentmemory/internal/subjects"
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

// TurnProber finds what a subject or conversation erasure left in the turns store (read
// only). The turns package implements it beside TurnEraser.
type TurnProber interface {
	SubjectResidue(ctx context.Context, idb bun.IDB, spaceID string, s SubjectRef) ([]Erased, error)
	ConversationResidue(ctx context.Context, idb bun.IDB, spaceID, scopeHash string) ([]Erased, error)
}

// StoreReport is one store's line in a certificate: what the erasure removed there (items)
// and what the probe found after the steps (must be 0, else the erasure fails), and the
// columns it covers.
type StoreReport struct {
	Store   string   `json:"store"`
	Removed int      `json:"removed"`
	Probe   int      `json:"probe"`
	Covers  []string `json:"covers"`
}

// Registry returns the erasers this service orders, in erasure order: Erasers when set,
// else state, turns (when Turns is wired), exports, subjects and the outbox (events).
func (s *Service) Registry() *erasure.Registry {
	if s.Erasers != nil {
		return s.Erasers
	}
	r := &erasure.Registry{}
	r.Register(state.Eraser{})
	if s.Turns != nil {
		r.Register(turnsEraser{s})
	}
	r.Register(exportsEraser{})
	r.Register(subjects.Eraser{})
	r.Register(events.Eraser{})
	return r
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
// erases nothing (the certificate lists what is not covered).
func (s *Service) eraseStore(ctx context.Context, spaceID, id, name string) (int, error) {
	e := s.Registry().Get(name)
	if e == nil {
		return 0, nil
	}
	return s.step(ctx, spaceID, id, func(ctx context.Context, tx bun.Tx, row *models.Erasure, hashes, profileIDs []string) ([]Erased, error) {
		r, err := e.EraseSubject(ctx, tx, target(row, hashes, profileIDs))
		if err != nil {
			return nil, err
		}
		return fromReach(name, r), nil
	})
}

func fromReach(store string, r erasure.Reach) []Erased {
	kinds := make([]string, 0, len(r))
	for k := range r {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var out []Erased
	for _, k := range kinds {
		if len(r[k]) > 0 {
			out = append(out, Erased{Kind: k, IDs: r[k], Store: store})
		}
	}
	return out
}

func toReach(es []Erased) erasure.Reach {
	r := erasure.Reach{}
	for _, e := range es {
		r.Add(e.Kind, e.IDs...)
	}
	return r
}

// probe asks every registered store, and the key store, for residue of the erasure's target
// inside idb (issue 12 §3), and returns one report per store with what items recorded as
// removed there.
func (s *Service) probe(ctx context.Context, idb bun.IDB, row *models.Erasure, items itemSet) ([]StoreReport, error) {
	hashes, profileIDs, err := scopeOf(row)
	if err != nil {
		return nil, err
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
		rep := StoreReport{Store: e.Name(), Removed: removed[e.Name()], Probe: r.Count(), Covers: []string{}}
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
		out = append(out, StoreReport{Store: StoreKeys, Removed: removed[StoreKeys], Probe: left, Covers: []string{"subject keys"}})
	}
	return out, nil
}

// turnsEraser orders the turns store (TurnEraser, TurnProber) as a registered eraser.
type turnsEraser struct{ s *Service }

func (turnsEraser) Name() string { return StoreTurns }

func (turnsEraser) Covers() []erasure.Column {
	return []erasure.Column{
		{Table: "turns", Column: "scope_hash"}, {Table: "turns", Column: "profile_id"}, {Table: "turns", Column: "key_id"},
		{Table: "identity_links", Column: "scope_hash"}, {Table: "identity_links", Column: "handle_hash"},
		{Table: "identity_links", Column: "profile_id"}, {Table: "identity_links", Column: "key_id"},
	}
}

func (e turnsEraser) EraseSubject(ctx context.Context, tx bun.Tx, t erasure.Target) (erasure.Reach, error) {
	var es []Erased
	var err error
	if t.Kind == erasure.Subject {
		es, err = e.s.Turns.EraseSubject(ctx, tx, t.SpaceID, SubjectRef{ProfileIDs: t.ProfileIDs, HandleHashes: t.HandleHashes})
	} else {
		es, err = e.s.Turns.EraseConversation(ctx, tx, t.SpaceID, t.ConversationID)
	}
	if err != nil {
		return nil, err
	}
	return toReach(es), nil
}

func (e turnsEraser) Residue(ctx context.Context, idb bun.IDB, t erasure.Target) (erasure.Reach, error) {
	p := e.s.TurnProbe
	if p == nil {
		if x, ok := e.s.Turns.(TurnProber); ok {
			p = x
		} else if x, ok := e.s.TurnExports.(TurnProber); ok {
			p = x
		}
	}
	if p == nil {
		return nil, errors.New("compliance: the turns store has no probe")
	}
	var es []Erased
	var err error
	if t.Kind == erasure.Subject {
		es, err = p.SubjectResidue(ctx, idb, t.SpaceID, SubjectRef{ProfileIDs: t.ProfileIDs, HandleHashes: t.HandleHashes})
	} else {
		es, err = p.ConversationResidue(ctx, idb, t.SpaceID, t.ScopeHash)
	}
	if err != nil {
		return nil, err
	}
	return toReach(es), nil
}

// exportsEraser is the data-package store's eraser (GOV-3: packages are erased with the
// subject).
type exportsEraser struct{}

func (exportsEraser) Name() string { return StoreExports }

func (exportsEraser) Covers() []erasure.Column {
	return []erasure.Column{{Table: "export_packages", Column: "subject_hash"}}
}

func (exportsEraser) find(ctx context.Context, idb bun.IDB, t erasure.Target) ([]string, error) {
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

func (e exportsEraser) EraseSubject(ctx context.Context, tx bun.Tx, t erasure.Target) (erasure.Reach, error) {
	ids, err := e.find(ctx, tx, t)
	if err != nil || len(ids) == 0 {
		return erasure.Reach{}, err
	}
	if _, err := tx.NewDelete().Model((*models.ExportPackage)(nil)).Where("id IN (?)", bun.In(ids)).Exec(ctx); err != nil {
		return nil, fmt.Errorf("compliance: delete exports: %w", err)
	}
	return erasure.Reach{KindExportPackage: ids}, nil
}

func (e exportsEraser) Residue(ctx context.Context, idb bun.IDB, t erasure.Target) (erasure.Reach, error) {
	ids, err := e.find(ctx, idb, t)
	if err != nil {
		return nil, err
	}
	r := erasure.Reach{}
	r.Add(KindExportPackage, ids...)
	return r, nil
}
