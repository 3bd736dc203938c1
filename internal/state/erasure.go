package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/erasure"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/models"
)

// KindAgentState is the item kind of a working state in erasure reaches and certificates.
const KindAgentState = erasure.KindAgentState

// Eraser is the working-state store's eraser (issue 12 §2, WM-13): a subject erasure deletes
// every state whose subject hash is one of the subject's handle hashes (scoped to a handle or
// naming the subject); a conversation erasure deletes the states of that conversation's
// scope. Residue finds the same rows, read only. Export (S is needed for it: the schemas,
// the clock and the subject keys) gives a subject's live states by declared field.
type Eraser struct{ S *Service }

// Name is "state".
func (Eraser) Name() string { return "state" }

// Covers lists agent_states' subject columns.
func (Eraser) Covers() []erasure.Column {
	return []erasure.Column{{Table: "agent_states", Column: "scope_hash"}, {Table: "agent_states", Column: "subject_hash"}, {Table: "agent_states", Column: "key_id"}}
}

// Backups is erasure.Shredded: a subject's states are sealed under the subject's handle keys,
// a conversation's states that name no subject under the conversation's key
// (erasure.ConversationKeyID), the other states that name no subject under their own key
// (erasure.StateKeyID), and the erasure destroys them: the subject's or conversation's keys,
// and the own key of every state its content probe deletes (issue 29 §1).
func (Eraser) Backups(erasure.Target) string { return erasure.Shredded }

func (Eraser) find(ctx context.Context, idb bun.IDB, t erasure.Target) ([]string, error) {
	q := idb.NewSelect().Model((*models.AgentState)(nil)).Column("id").Where("space_id = ?", t.SpaceID)
	if t.Kind == erasure.Subject {
		if len(t.HandleHashes) == 0 {
			return nil, nil
		}
		q = q.Where("subject_hash IN (?)", bun.In(t.HandleHashes))
	} else {
		q = q.Where("scope_kind = 'conversation' AND scope_hash = ?", t.ScopeHash)
	}
	var ids []string
	if err := q.Order("id ASC").Scan(ctx, &ids); err != nil {
		return nil, fmt.Errorf("state: find erased states: %w", err)
	}
	return ids, nil
}

// EraseSubject deletes the states t reaches inside tx.
func (e Eraser) EraseSubject(ctx context.Context, tx bun.Tx, t erasure.Target) (erasure.Reach, error) {
	ids, err := e.find(ctx, tx, t)
	if err != nil || len(ids) == 0 {
		return erasure.Reach{}, err
	}
	// The versions of the erased states stay as their agents' floors (floors.go): a state
	// written again for the same scope never restarts at version 1.
	gone, err := deleteStates(ctx, tx, "id IN (?)", bun.In(ids))
	if err != nil {
		return nil, err
	}
	return erasure.Reach{KindAgentState: idsOf(gone)}, nil
}

// Residue finds states t still reaches.
func (e Eraser) Residue(ctx context.Context, idb bun.IDB, t erasure.Target) (erasure.Reach, error) {
	ids, err := e.find(ctx, idb, t)
	if err != nil {
		return nil, err
	}
	r := erasure.Reach{}
	r.Add(KindAgentState, ids...)
	return r, nil
}

// ExportedState is one working state in a data package (GOV-3, WM-13) with its live fields as
// declared.
type ExportedState struct {
	ID        string          `json:"state_id"`
	Agent     string          `json:"agent"`
	ScopeKind string          `json:"scope_kind"`
	Version   int64           `json:"version"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
	ExpiresAt time.Time       `json:"expires_at"`
	Fields    []ExportedField `json:"fields"`
}

// ExportedField is one field of an exported state: its value (masked at write when pii), its
// declared type, pii flag and sensitivity ("low" when undeclared), its last write and when it
// expires (UTC).
type ExportedField struct {
	Field       string          `json:"field"`
	Value       json.RawMessage `json:"value"`
	Type        string          `json:"type"`
	PII         bool            `json:"pii"`
	Sensitivity string          `json:"sensitivity"`
	WrittenAt   time.Time       `json:"written_at"`
	ExpiresAt   time.Time       `json:"expires_at"`
}

// Export returns, read through idb, the live states of a subject Target (subject hash one of
// its handle hashes), unsealed, in id order, as member "states" with counts "states" and
// "fields"; states sealed under a destroyed key or with no live field are left out. A
// conversation Target gives the zero Export. Errors: the store's, the key store's.
func (e Eraser) Export(ctx context.Context, idb bun.IDB, t erasure.Target) (erasure.Export, error) {
	if t.Kind != erasure.Subject || len(t.HandleHashes) == 0 {
		return erasure.Export{}, nil
	}
	if e.S == nil {
		return erasure.Export{}, errors.New("state: the eraser has no service to export with")
	}
	types, err := e.S.Docs.ObjectTypes(ctx, t.SpaceID)
	if err != nil {
		return erasure.Export{}, err
	}
	var rows []models.AgentState
	if err := idb.NewSelect().Model(&rows).Where("space_id = ? AND subject_hash IN (?)", t.SpaceID, bun.In(t.HandleHashes)).
		Order("id ASC").Scan(ctx); err != nil {
		return erasure.Export{}, fmt.Errorf("state: export states: %w", err)
	}
	now := time.Now().UTC()
	if e.S.Now != nil {
		now = e.S.Now().UTC()
	}
	out := []ExportedState{}
	fields := 0
	var touched []string
	for i := range rows {
		r := &rows[i]
		ok, err := e.S.Unseal(ctx, r)
		if err != nil {
			return erasure.Export{}, err
		}
		if !ok {
			continue
		}
		schema, _ := types.SchemaFor(r.Agent)
		es, live := exportedState(r, schema, now)
		if !live {
			continue
		}
		fields += len(es.Fields)
		out = append(out, es)
		touched = append(touched, r.ID)
	}
	return erasure.Export{
		Members: map[string]any{"states": out},
		Counts:  map[string]int{"states": len(out), "fields": fields},
		Touched: touched,
	}, nil
}

// exportedState is r's live fields at now under schema, sorted by name; live is false when
// no field of r is live.
func exportedState(r *models.AgentState, schema spaces.ObjectType, now time.Time) (ExportedState, bool) {
	vals, times, version := LiveFields(r, schema, now)
	if version == 0 {
		return ExportedState{}, false
	}
	es := ExportedState{ID: r.ID, Agent: r.Agent, ScopeKind: r.ScopeKind, Version: version,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC(), Fields: []ExportedField{}}
	names := make([]string, 0, len(vals))
	for n := range vals {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f := schema.Fields[n]
		sens := f.Sensitivity
		if sens == "" {
			sens = "low"
		}
		es.Fields = append(es.Fields, ExportedField{Field: n, Value: vals[n], Type: f.Type, PII: f.PII,
			Sensitivity: sens, WrittenAt: times[n].UTC(), ExpiresAt: times[n].UTC().Add(schema.FieldTTL(n))})
	}
	return es, true
}

// Searched names what the state store's content probe reads.
func (Eraser) Searched() string {
	return "agent_states.body of states stored in clear (no subject); sealed states are unreadable once the keys go"
}

// contentPage is how many states the content probe reads at a time.
const contentPage = 500

// ProbeContent finds the states of t's space stored in clear whose body names t's subject
// (issue 29 §1b): a state without `subject` is not linked to anyone, so only its text can
// tie it to her. Every field is read, declared pii or not (a name that masking did not know
// at write time survives in a pii field). Sealed bodies are read unsealed (a conversation's
// key, a state's own key, another subject's); one whose key is gone holds nothing readable.
func (e Eraser) ProbeContent(ctx context.Context, idb bun.IDB, t erasure.Target) ([]erasure.Finding, error) {
	if t.Content == nil {
		return nil, nil
	}
	var out []erasure.Finding
	after := ""
	for {
		var rows []models.AgentState
		if err := idb.NewSelect().Model(&rows).Column("id", "scope_hash", "scope_kind", "agent", "subject_hash", "body", "field_times").Where("space_id = ? AND id > ?", t.SpaceID, after).
			Order("id ASC").Limit(contentPage).Scan(ctx); err != nil {
			return nil, fmt.Errorf("state: content probe: %w", err)
		}
		for _, r := range rows {
			if isSealed(r.Body) {
				// Sealed under a conversation's key (issue 29 §1) or a subject's: read unsealed.
				if ok, err := e.S.Unseal(ctx, &r); err != nil || !ok {
					if err != nil {
						return nil, err
					}
					continue // its key is gone: nothing readable
				}
			}
			if m := t.Content.Match(string(r.Body)); m != "" {
				out = append(out, erasure.Finding{Kind: KindAgentState, ID: r.ID, Where: "agent_states.body", Match: m})
			}
		}
		if len(rows) < contentPage {
			return out, nil
		}
		after = rows[len(rows)-1].ID
	}
}

// EraseFound deletes the states found (kind KindAgentState) inside tx, and destroys the own
// keys (erasure.StateKeyID) of those sealed under one; their versions stay as their agents'
// floors, as for any erased state.
func (e Eraser) EraseFound(ctx context.Context, tx bun.Tx, spaceID string, found []erasure.Finding) (erasure.Reach, error) {
	ids := erasure.IDsOf(found, KindAgentState)
	if len(ids) != len(found) {
		return nil, fmt.Errorf("state: erase found: a finding of another store")
	}
	if len(ids) == 0 {
		return erasure.Reach{}, nil
	}
	gone, err := deleteStates(ctx, tx, "space_id = ? AND id IN (?)", spaceID, bun.In(ids))
	if err != nil {
		return nil, err
	}
	if e.S != nil {
		if err := e.S.destroyOwnKeys(ctx, gone); err != nil {
			return nil, err
		}
	}
	return erasure.Reach{KindAgentState: idsOf(gone)}, nil
}
