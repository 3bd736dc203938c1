package worker_test

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/agentmemory/agentmemory/activities"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/redact"
	"github.com/agentmemory/agentmemory/internal/turns"
)

// memProposals stands in for internal/notes (not merged on this branch): the proposal store
// and gate the distillation needs, in memory. It implements api.DistillProposals,
// activities.ProposalStore and activities.Gate, and reports every change on changed.
type memProposals struct {
	mu         sync.Mutex
	props      map[string]*memProposal
	edits      map[string]activities.ProposedNote
	notes      map[string]memNote
	lastErrors []string
	changed    chan string // proposal id after every status change
}

type memProposal struct {
	spaceID, sourceID string
	scope             turns.Scope
	status, reason    string
	kinds             []string
	lastError         string
	note              *activities.ProposedNote
	noteID            string
}

type memNote struct {
	activities.ProposedNote
	Origin   string
	Evidence turns.Scope
	By       string
}

func newMemProposals() *memProposals {
	return &memProposals{props: map[string]*memProposal{}, edits: map[string]activities.ProposedNote{},
		notes: map[string]memNote{}, changed: make(chan string, 64)}
}

var errNoProposal = errors.New("memProposals: no such proposal")

func (m *memProposals) get(id string) (*memProposal, error) {
	p, ok := m.props[id]
	if !ok {
		return nil, errNoProposal
	}
	return p, nil
}

func (m *memProposals) set(id string, p *memProposal, status string) {
	p.status = status
	m.changed <- id
}

// CreateDistillProposal implements api.DistillProposals.
func (m *memProposals) CreateDistillProposal(_ context.Context, p auth.Principal, scope turns.Scope, sourceID string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := auth.NewID("prop")
	m.props[id] = &memProposal{spaceID: p.SpaceID, sourceID: sourceID, scope: scope, status: "drafting"}
	return id, nil
}

// CreateDistillProposalOnce implements api.DistillProposals (no idempotency: every call is new).
func (m *memProposals) CreateDistillProposalOnce(ctx context.Context, p auth.Principal, scope turns.Scope, sourceID, _ string) (string, bool, error) {
	id, err := m.CreateDistillProposal(ctx, p, scope, sourceID)
	return id, false, err
}

// AbandonDistillProposal implements api.DistillProposals.
func (m *memProposals) AbandonDistillProposal(ctx context.Context, id string) error {
	return m.MarkFailed(ctx, id, "workflow_unavailable", nil)
}

func (m *memProposals) Distillation(_ context.Context, id string) (activities.Distillation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, err := m.get(id)
	if err != nil {
		return activities.Distillation{}, err
	}
	return activities.Distillation{SpaceID: p.spaceID, Scope: p.scope}, nil
}

func (m *memProposals) SetLastError(_ context.Context, id, code string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, err := m.get(id)
	if err != nil {
		return err
	}
	p.lastError = code
	m.lastErrors = append(m.lastErrors, code)
	return nil
}

func (m *memProposals) MarkPending(_ context.Context, id string, note activities.ProposedNote) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, err := m.get(id)
	if err != nil {
		return err
	}
	if p.status == "drafting" {
		p.note, p.lastError = &note, ""
		m.set(id, p, "pending")
	}
	return nil
}

func (m *memProposals) MarkFailed(_ context.Context, id, reason string, kinds []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, err := m.get(id)
	if err != nil {
		return err
	}
	if p.status == "drafting" {
		p.reason, p.kinds = reason, kinds
		m.set(id, p, "failed")
	}
	return nil
}

func (m *memProposals) Approve(ctx context.Context, id, editsID, by string) (activities.ApproveOutcome, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, err := m.get(id)
	if err != nil {
		return activities.ApproveOutcome{}, err
	}
	if p.status == "approved" {
		return activities.ApproveOutcome{NoteID: p.noteID}, nil
	}
	note := *p.note
	if editsID != "" {
		note = m.edits[editsID]
		if kinds, _ := m.Check(ctx, p.spaceID, note.Title+"\n"+note.Body); len(kinds) > 0 {
			return activities.ApproveOutcome{RefusedKinds: kinds}, nil
		}
	}
	p.noteID = auth.NewID("note")
	m.notes[p.noteID] = memNote{ProposedNote: note, Origin: "distilled", Evidence: p.scope, By: by}
	m.set(id, p, "approved")
	return activities.ApproveOutcome{NoteID: p.noteID}, nil
}

func (m *memProposals) Reject(_ context.Context, id, _, _ string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, err := m.get(id)
	if err != nil {
		return err
	}
	m.set(id, p, "rejected")
	return nil
}

func (m *memProposals) Expire(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, err := m.get(id)
	if err != nil {
		return err
	}
	m.set(id, p, "expired")
	return nil
}

// Check implements activities.Gate with the local layer of the personal-data gate.
func (m *memProposals) Check(_ context.Context, _ string, text string) ([]string, error) {
	var kinds []string
	for _, k := range redact.Detect(text, redact.Options{DefaultRegion: "BR"}) {
		kinds = append(kinds, string(k))
	}
	slices.Sort(kinds)
	return kinds, nil
}

// snapshot returns a copy of the proposal.
func (m *memProposals) snapshot(id string) memProposal {
	m.mu.Lock()
	defer m.mu.Unlock()
	return *m.props[id]
}

func (m *memProposals) note(id string) memNote {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.notes[id]
}

func principalOf(r *rig) auth.Principal { return auth.Principal{SpaceID: r.SpaceID, KeyID: "key_test"} }

func turnsScope(conversationID string) turns.Scope {
	return turns.Scope{ConversationID: conversationID}
}
