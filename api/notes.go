package api

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"go.temporal.io/api/serviceerror"

	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/notes"
	"github.com/agentmemory/agentmemory/internal/strictjson"
	"github.com/agentmemory/agentmemory/workflows"
)

// idempotencyKey reads the Idempotency-Key header: at most 200 printable ASCII characters
// (notes.CheckIdempotencyKey).
func idempotencyKey(c *gin.Context) (string, error) {
	k := c.GetHeader("Idempotency-Key")
	return k, notes.CheckIdempotencyKey(k)
}

// duplicateAnswer is the 200 answer of a create identical to an active note of its source
// (issue 17 §2): the existing note, as a 201 shows a note, plus duplicate_of (its id).
type duplicateAnswer struct {
	notes.Note
	DuplicateOf string `json:"duplicate_of"`
}

// answerWrite answers a note write: 201 with the note, 202 {"proposal_id"} when it became
// a proposal (AM-8), or 200 with the existing note and duplicate_of when the write was a
// duplicate (nothing stored). A replay of an Idempotency-Key carries Idempotent-Replayed: true.
func answerWrite(c *gin.Context, res notes.WriteResult) {
	if res.Replayed {
		c.Header("Idempotent-Replayed", "true")
	}
	if res.DuplicateOf != "" {
		c.PureJSON(http.StatusOK, duplicateAnswer{Note: *res.Note, DuplicateOf: res.DuplicateOf})
		return
	}
	if res.ProposalID != "" {
		c.PureJSON(http.StatusAccepted, gin.H{"proposal_id": res.ProposalID})
		return
	}
	c.PureJSON(http.StatusCreated, res.Note)
}

// createNote: POST /v1/agent-memory/notes (AM-1, AM-6..AM-8) -> 201 note | 202 {"proposal_id"}
// | 200 note + duplicate_of (issue 17 §2).
func (s *Server) createNote(c *gin.Context) {
	var in notes.Input
	if err := bind(c, &in); err != nil {
		s.writeError(c, err)
		return
	}
	key, err := idempotencyKey(c)
	if err != nil {
		s.writeError(c, err)
		return
	}
	res, err := s.Notes.Create(s.ctx(c), principal(c), c.GetHeader("Agent-Version"), key, in)
	if err != nil {
		s.writeError(c, err)
		return
	}
	answerWrite(c, res)
}

// listNotes: GET /v1/agent-memory/notes?source_id=&kind=&tag=&status=&after=&limit= -> {"notes"}.
func (s *Server) listNotes(c *gin.Context) {
	limit, err := queryInt(c, "limit", 100, 1, 500)
	if err != nil {
		s.writeError(c, err)
		return
	}
	list, err := s.Notes.List(s.ctx(c), principal(c), notes.ListFilter{
		SourceID: c.Query("source_id"), Kind: c.Query("kind"), Tag: c.Query("tag"),
		Status: c.Query("status"), After: c.Query("after"), Limit: int(limit),
	})
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, gin.H{"notes": list})
}

// getNote: GET /v1/agent-memory/notes/{id}: any version, retired ones too.
func (s *Server) getNote(c *gin.Context) {
	n, err := s.Notes.Get(s.ctx(c), principal(c), c.Param("id"))
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, n)
}

// noteVersion: POST /v1/agent-memory/notes/{id}/versions (an edit) -> 201 note | 202.
func (s *Server) noteVersion(c *gin.Context) {
	var patch notes.Patch
	if err := bind(c, &patch); err != nil {
		s.writeError(c, err)
		return
	}
	key, err := idempotencyKey(c)
	if err != nil {
		s.writeError(c, err)
		return
	}
	res, err := s.Notes.NewVersion(s.ctx(c), principal(c), c.GetHeader("Agent-Version"), key, c.Param("id"), patch)
	if err != nil {
		s.writeError(c, err)
		return
	}
	answerWrite(c, res)
}

// retireNote: POST /v1/agent-memory/notes/{id}/retire -> 200 the retired note.
func (s *Server) retireNote(c *gin.Context) {
	if err := bindOptional(c, &struct{}{}); err != nil {
		s.writeError(c, err)
		return
	}
	n, err := s.Notes.Retire(s.ctx(c), principal(c), c.Param("id"))
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, n)
}

// listProposals: GET /v1/agent-memory/proposals?status=&limit= (admin or reviewer).
func (s *Server) listProposals(c *gin.Context) {
	limit, err := queryInt(c, "limit", 100, 1, 500)
	if err != nil {
		s.writeError(c, err)
		return
	}
	list, err := s.Notes.ListProposals(s.ctx(c), principal(c), c.Query("status"), int(limit))
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, gin.H{"proposals": list})
}

// getProposal: GET /v1/agent-memory/proposals/{id} (admin or reviewer).
func (s *Server) getProposal(c *gin.Context) {
	pr, err := s.Notes.GetProposal(s.ctx(c), principal(c), c.Param("id"))
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, pr)
}

// approveRequest is the optional body of .../approve.
type approveRequest struct {
	Edits *notes.Patch `json:"edits"`
}

// DefaultDecisionWait is how long approve and reject wait for a distilled proposal's
// workflow to apply the decision before answering 202.
const DefaultDecisionWait = 5 * time.Second

// approveProposal: POST /v1/agent-memory/proposals/{id}/approve {"edits"?} (admin, or
// reviewer when the space grants it) -> the note: 201 when this call approved the proposal,
// 200 with the same note when it was approved already (a repeated approve changes nothing,
// whatever its edits). A distilled proposal is approved by its DistillWorkflow: the role,
// the state (drafting, failed, rejected, expired -> 409 proposal_not_pending), the edits
// (400, 422) and the cap (409) are checked first, the edits stored, the workflow signalled
// with their id only, and the outcome awaited briefly: 201 the note when this call's decision
// was applied, or 202 {"proposal_id", "status": "pending"} when it is not applied yet. Of
// concurrent approvals only the one applied answers 201; another answers 200 with the note
// when its edits are the applied ones, else 409 proposal_already_decided.
func (s *Server) approveProposal(c *gin.Context) {
	var req approveRequest
	if err := bindOptional(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	p, id := principal(c), c.Param("id")
	viaWorkflow, err := s.viaWorkflow(c, id)
	if err != nil {
		s.writeError(c, err)
		return
	}
	if !viaWorkflow {
		n, created, err := s.Notes.Approve(s.ctx(c), p, id, req.Edits)
		if err != nil {
			s.writeError(c, err)
			return
		}
		answerApproval(c, n, created)
		return
	}
	st, err := s.Notes.StageDecision(s.ctx(c), p, id, notes.DecisionApprove, req.Edits, "")
	if err != nil {
		s.writeError(c, err)
		return
	}
	if st.Note != nil {
		answerApproval(c, *st.Note, false)
		return
	}
	sent, err := s.signalDecision(c, id, workflows.Approval{Decision: workflows.DecisionApprove, ByKeyID: p.KeyID, EditsID: st.DecisionID})
	if err != nil {
		s.writeError(c, err)
		return
	}
	if !sent {
		// The workflow is gone (its history lost, or it ended approving another caller's
		// decision): decide through the same notes path.
		n, created, err := s.Notes.Approve(s.ctx(c), p, id, req.Edits)
		if err != nil {
			s.writeError(c, err)
			return
		}
		if !created {
			s.answerStaged(c, n, id, st.DecisionID)
			return
		}
		answerApproval(c, n, created)
		return
	}
	pr, n, err := s.Notes.Decided(s.ctx(c), p, id, st.DecisionID)
	switch {
	case err != nil:
		s.writeError(c, err)
	case n != nil:
		s.answerStaged(c, *n, id, st.DecisionID)
	case pr.Status == notes.ProposalPending:
		c.PureJSON(http.StatusAccepted, gin.H{"proposal_id": id, "status": pr.Status})
	default:
		s.writeError(c, fault.New(fault.Conflict, notes.CodeProposalNotPending, "the proposal is %s, not pending", pr.Status).With("status", pr.Status))
	}
}

// answerStaged answers an approval whose staged decision decisionID found proposal id
// approved: 201 when its decision was the one applied, 200 when another was applied with
// the same edits, 409 proposal_already_decided when another was applied with other edits.
func (s *Server) answerStaged(c *gin.Context, n notes.Note, id, decisionID string) {
	applied, err := s.Notes.CheckApplied(s.ctx(c), id, decisionID)
	if err != nil {
		s.writeError(c, err)
		return
	}
	answerApproval(c, n, applied)
}

// answerApproval answers the approved note: 201 when this call wrote it, else 200.
func answerApproval(c *gin.Context, n notes.Note, created bool) {
	if created {
		c.PureJSON(http.StatusCreated, n)
		return
	}
	c.PureJSON(http.StatusOK, n)
}

// viaWorkflow reports whether proposal id is decided through its DistillWorkflow: it was
// born of distillation and this server has a Temporal client. It checks the caller's role
// and that the proposal exists first.
func (s *Server) viaWorkflow(c *gin.Context, id string) (bool, error) {
	pr, err := s.Notes.GetProposal(s.ctx(c), principal(c), id)
	if err != nil {
		return false, err
	}
	return pr.Origin == notes.OriginDistilled && s.Workflows != nil, nil
}

// signalDecision signals the proposal's workflow and waits (DecisionWait) for it to end. It
// reports false when the workflow no longer exists.
func (s *Server) signalDecision(c *gin.Context, id string, a workflows.Approval) (bool, error) {
	err := workflows.SendApproval(s.ctx(c), s.Workflows, id, a)
	var missing *serviceerror.NotFound
	if errors.As(err, &missing) {
		return false, nil
	}
	if err != nil {
		return false, workflowError(err)
	}
	wait := s.DecisionWait
	if wait <= 0 {
		wait = DefaultDecisionWait
	}
	// The answer comes from the stored proposal; the workflow's own result (or its failure)
	// only tells when to look.
	if _, _, err := workflows.AwaitOutcome(s.ctx(c), s.Workflows, id, wait); err != nil {
		s.log.WarnContext(s.ctx(c), "distillation outcome unknown", "request_id", c.GetString(requestIDKey))
	}
	return true, nil
}

// rejectRequest is the optional body of .../reject.
type rejectRequest struct {
	Reason string `json:"reason"`
}

// rejectProposal: POST /v1/agent-memory/proposals/{id}/reject {"reason"?} -> 200 the
// proposal. A distilled proposal is rejected by its DistillWorkflow (role, state and reason
// checked first, the reason stored, the signal carrying its id); 202 {"proposal_id",
// "status": "pending"} when the workflow has not applied it yet.
func (s *Server) rejectProposal(c *gin.Context) {
	var req rejectRequest
	if err := bindOptional(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	p, id := principal(c), c.Param("id")
	viaWorkflow, err := s.viaWorkflow(c, id)
	if err != nil {
		s.writeError(c, err)
		return
	}
	sent := false
	if viaWorkflow {
		st, err := s.Notes.StageDecision(s.ctx(c), p, id, notes.DecisionReject, nil, req.Reason)
		if err != nil {
			s.writeError(c, err)
			return
		}
		if sent, err = s.signalDecision(c, id, workflows.Approval{Decision: workflows.DecisionReject, ByKeyID: p.KeyID, EditsID: st.DecisionID}); err != nil {
			s.writeError(c, err)
			return
		}
	}
	if sent {
		pr, _, err := s.Notes.Decided(s.ctx(c), p, id, "")
		switch {
		case err != nil:
			s.writeError(c, err)
		case pr.Status == notes.ProposalRejected:
			c.PureJSON(http.StatusOK, pr)
		case pr.Status == notes.ProposalPending:
			c.PureJSON(http.StatusAccepted, gin.H{"proposal_id": id, "status": pr.Status})
		default:
			s.writeError(c, fault.New(fault.Conflict, notes.CodeProposalNotPending, "the proposal is %s, not pending", pr.Status).With("status", pr.Status))
		}
		return
	}
	pr, err := s.Notes.Reject(s.ctx(c), p, id, req.Reason)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, pr)
}

// exportNotes: GET /v1/agent-memory/export (role admin) -> every note version and proposal
// of the space as one JSON document (AM-12), sent as a download.
func (s *Server) exportNotes(c *gin.Context) {
	x, err := s.Notes.Export(s.ctx(c), principal(c))
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.Header("Content-Disposition", `attachment; filename="agent-memory.json"`)
	c.Header("Cache-Control", "no-store")
	c.PureJSON(http.StatusOK, x)
}

// noteBlock: GET /v1/agent-memory/block?max_tokens=&tags=a,b&view=&source_id= (AM-4) ->
// {text, enabled, note_ids, tokens} with ETag; If-None-Match -> 304.
func (s *Server) noteBlock(c *gin.Context) {
	max, err := queryInt(c, "max_tokens", notes.DefaultBlockTokens, notes.MinBlockTokens, notes.MaxBlockTokens)
	if err != nil {
		s.writeError(c, err)
		return
	}
	b, err := s.Notes.Block(s.ctx(c), principal(c), notes.BlockRequest{
		MaxTokens: int(max), Tags: splitList(c.Query("tags")), View: c.Query("view"),
		SourceID: c.Query("source_id"), IfNoneMatch: c.GetHeader("If-None-Match"),
	})
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.Header("ETag", b.ETag)
	c.Header("Cache-Control", "private, no-cache")
	if b.NotModified {
		c.Status(http.StatusNotModified)
		return
	}
	c.PureJSON(http.StatusOK, b)
}

// searchNotes: GET /v1/agent-memory/search?q=&tags=&limit=&source_id= (AM-14) -> {enabled, notes}.
func (s *Server) searchNotes(c *gin.Context) {
	limit, err := queryInt(c, "limit", notes.DefaultSearchLimit, 1, notes.MaxSearchLimit)
	if err != nil {
		s.writeError(c, err)
		return
	}
	res, err := s.Notes.Search(s.ctx(c), principal(c), notes.SearchRequest{
		Q: c.Query("q"), Tags: splitList(c.Query("tags")), Limit: int(limit), SourceID: c.Query("source_id"),
	})
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, res)
}

// splitList splits a comma-separated query value, dropping empty items.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// bindOptional is bind for a body that may be absent or empty.
func bindOptional(c *gin.Context, v any) error {
	data, err := readBody(c)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	return strictjson.Decode(data, v)
}
