package state

import (
	"context"
	"strings"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/events"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/redact"
)

// ActionDelete is the action of the compliance receipt a state delete leaves.
const ActionDelete = "agent_state.delete"

// TypeStateDeleted is the outbox event of every deleted state (ids only: the state's id, its
// agent as source_id and its last version; never its scope, subject or body).
const TypeStateDeleted = "agent_state.deleted"

// DeleteRequest is the body of POST /v1/agent-state/delete (issue 29 §3): exactly one of
// Scope (one state, of Agent, named as a write names it) or Subject (a customer handle: every
// state tied to it by its scope or its subject member, of Agent only when Agent is set).
type DeleteRequest struct {
	Scope   *Scope `json:"scope"`
	Agent   string `json:"agent"`
	Subject string `json:"subject"`
}

// DeleteResult is the answer of a delete: how many states were deleted, their ids (st_...)
// and the receipt recording it (empty when nothing was deleted: then nothing was written).
type DeleteResult struct {
	Deleted   int      `json:"deleted"`
	StateIDs  []string `json:"state_ids"`
	ReceiptID string   `json:"receipt_id,omitempty"`
}

// deleteTarget is a resolved delete: the condition on agent_states and its arguments.
type deleteTarget struct {
	where string
	args  []any
	agent string
	seen  *target // the one state of a scope delete, to forget it from lastSeen
	form  string  // "scope" or "subject", the receipt's detail
}

// Delete removes the states req names (issue 29 §3), whole: the rows go, and the own key of
// each one sealed under one (an object or agent scope naming no customer,
// erasure.StateKeyID) is destroyed, so no backup opens it again (their versions stay
// as their agents' version floors, floors.go, so a state written again never restarts at a
// version an old compare-and-swap holds), with a compliance receipt ActionDelete naming the
// state ids and one outbox event TypeStateDeleted per state, in one transaction. Reads go to
// the store (a state is never served from memory), so the next read on any replica answers
// version 0; this replica's last-seen row of the state is forgotten at once, and another
// replica's (never served, lastSeen) cannot apply a write: its conditional update names the
// deleted row's id. Who may: by scope, an agent key with scope agent_state for its own agent
// (as writes), a person with role integration, compliance or admin naming the agent; by
// subject, a person with role compliance or admin. The feature need not be on (a space that
// turned working memory off can still delete what it holds). Errors: fault.Invalid (naming
// the member), fault.Forbidden (scope_required, agent_mismatch, role_required).
func (s *Service) Delete(ctx context.Context, p auth.Principal, req DeleteRequest) (DeleteResult, error) {
	dt, err := s.resolveDelete(ctx, p, req)
	if err != nil {
		return DeleteResult{}, err
	}
	out := DeleteResult{StateIDs: []string{}}
	now := s.Now().UTC()
	err = s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		rows, err := deleteStates(ctx, tx, dt.where, dt.args...)
		if err != nil || len(rows) == 0 {
			return err
		}
		if err := s.destroyOwnKeys(ctx, rows); err != nil {
			return err
		}
		ids := idsOf(rows)
		r, err := receipts.Append(ctx, tx, p.SpaceID, receipts.Entry{Kind: receipts.KindCompliance, Action: ActionDelete,
			ActorKey: p.KeyID, ObjectIDs: ids, Detail: map[string]any{"by": dt.form, "states": len(ids)}}, now)
		if err != nil {
			return err
		}
		evs := make([]events.Event, 0, len(rows))
		for _, row := range rows {
			evs = append(evs, events.Event{Type: TypeStateDeleted, SpaceID: p.SpaceID, StateID: row.ID, SourceID: row.Agent, Version: row.Version})
		}
		if _, err := events.EnqueueAll(ctx, tx, evs, now); err != nil {
			return err
		}
		out = DeleteResult{Deleted: len(ids), StateIDs: ids, ReceiptID: r.ID}
		return nil
	})
	if dt.seen != nil {
		s.seen.drop(*dt.seen)
	}
	if err != nil {
		return DeleteResult{}, err
	}
	return out, nil
}

// resolveDelete checks who may delete what req names and returns the condition selecting it.
func (s *Service) resolveDelete(ctx context.Context, p auth.Principal, req DeleteRequest) (deleteTarget, error) {
	if (req.Scope == nil) == (strings.TrimSpace(req.Subject) == "") {
		return deleteTarget{}, invalid("scope", "give exactly one of scope (with agent) or subject")
	}
	agent, err := deleteAgent(p, req)
	if err != nil {
		return deleteTarget{}, err
	}
	features, err := s.Docs.Features(ctx, p.SpaceID)
	if err != nil {
		return deleteTarget{}, err
	}
	if req.Scope != nil {
		_, scopeHash, _, err := s.hashScope(p.SpaceID, features, req.Scope)
		if err != nil {
			return deleteTarget{}, err
		}
		t := target{spaceID: p.SpaceID, scopeHash: scopeHash, agent: agent}
		return deleteTarget{where: "space_id = ? AND scope_hash = ? AND agent = ?", args: []any{p.SpaceID, scopeHash, agent},
			agent: agent, seen: &t, form: "scope"}, nil
	}
	c, err := redact.CanonicalHandle(req.Subject, features.Region())
	if err != nil {
		return deleteTarget{}, invalid("subject", "subject is a customer handle such as email:... or phone:...")
	}
	dt := deleteTarget{where: "space_id = ? AND subject_hash = ?", args: []any{p.SpaceID, s.Hasher.Hash(p.SpaceID, "subject", c)}, form: "subject"}
	if agent != "" {
		dt.where += " AND agent = ?"
		dt.args = append(dt.args, agent)
		dt.agent = agent
	}
	return dt, nil
}

// deleteAgent returns the agent whose states req deletes (empty: every agent's, subject form
// only), or the refusal of p.
func deleteAgent(p auth.Principal, req DeleteRequest) (string, error) {
	agent := strings.TrimSpace(req.Agent)
	if len(agent) > 128 {
		return "", invalid("agent", "agent must be at most 128 characters")
	}
	if req.Scope == nil {
		if !p.HasRole(auth.RoleCompliance) && !p.HasRole(auth.RoleAdmin) {
			return "", fault.New(fault.Forbidden, "role_required", "deleting a customer's states needs role compliance or admin")
		}
		return agent, nil
	}
	if p.IsAgent() {
		if !p.HasScope(auth.ScopeAgentState) {
			return "", fault.New(fault.Forbidden, "scope_required", "this key lacks scope agent_state")
		}
		if agent != "" && agent != p.Agent {
			return "", fault.New(fault.Forbidden, "agent_mismatch", "an agent key deletes only its own agent's state")
		}
		return p.Agent, nil
	}
	if !p.HasRole(auth.RoleIntegration) && !p.HasRole(auth.RoleCompliance) && !p.HasRole(auth.RoleAdmin) {
		return "", fault.New(fault.Forbidden, "role_required", "a person needs role integration, compliance or admin to delete a state")
	}
	if agent == "" {
		return "", invalid("agent", "agent is required with a person key")
	}
	return agent, nil
}
