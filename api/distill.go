package api

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"
	"go.temporal.io/sdk/client"

	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/proposals"
	"github.com/agentmemory/agentmemory/internal/turns"
	"github.com/agentmemory/agentmemory/workflows"
)

// Workflows is the part of the Temporal client the API uses (client.Client has it): start a
// workflow, signal it, and wait for its result.
type Workflows interface {
	ExecuteWorkflow(ctx context.Context, options client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error)
	SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg any) error
	GetWorkflow(ctx context.Context, workflowID, runID string) client.WorkflowRun
}

// DistillRequest is the body of POST /v1/agent-memory/distill.
type DistillRequest struct {
	turns.Scope
	// SourceID names the agent the note will belong to (people); agents distil for themselves.
	SourceID string `json:"source_id,omitempty"`
}

// distill: POST /v1/agent-memory/distill {"conversation_id"|"task_id", "source_id"?} (AM-9)
// -> 202 {"proposal_id", "status": "drafting"}, after starting DistillWorkflow with a
// workflow id derived from the proposal id. Role admin or integration, or an agent key with
// agent_memory:write; the proposal store checks the rest.
//
// Retries (issue 11 §3; startRow's policy): when the workflow service does not answer, the
// answer is 503 workflows_unavailable ("retry", Retry-After). With an Idempotency-Key the
// proposal stays drafting and the retry with the same key returns the same proposal (202,
// header Idempotent-Replayed: true), starting its workflow if it is still missing (the
// worker's reconciler may start it first: already started counts as started); never a second
// proposal. Without a key the proposal is ended failed (workflow_unavailable) before the 503,
// so nothing runs it later on its own.
func (s *Server) distill(c *gin.Context) {
	p := principal(c)
	if err := proposals.AuthorizeDistill(p); err != nil { // the one check, before the body is read
		s.writeError(c, err)
		return
	}
	key, err := idempotencyKey(c)
	if err != nil {
		s.writeError(c, err)
		return
	}
	var req DistillRequest
	if err := bind(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	if _, _, err := req.Scope.KindID(); err != nil {
		s.writeError(c, err)
		return
	}
	if s.Proposals == nil || s.Workflows == nil {
		s.writeError(c, fault.New(fault.Unavailable, "distillation_unavailable", "distillation is not configured on this server"))
		return
	}
	id, replayed, err := s.Proposals.CreateDistillProposalOnce(s.ctx(c), p, req.Scope, req.SourceID, key)
	if err != nil {
		s.writeError(c, err)
		return
	}
	st := rowStart{name: "Distill", id: workflows.DistillID(id), workflow: workflows.DistillWorkflow,
		arg: workflows.DistillStart(id, s.ApprovalDeadline)}
	if key == "" { // no key to retry under: the proposal is ended (startRow's rule 2)
		st.end = func(ctx context.Context) error { return s.Proposals.AbandonDistillProposal(ctx, id) }
	}
	if err := s.startRow(s.ctx(c), st); err != nil {
		s.writeError(c, err)
		return
	}
	if replayed {
		c.Header("Idempotent-Replayed", "true")
	}
	c.PureJSON(http.StatusAccepted, gin.H{"proposal_id": id, "status": proposals.StatusDrafting})
}
