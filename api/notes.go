package api

import (
	"bytes"
	"context"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/notes"
	"github.com/agentmemory/agentmemory/internal/proposals"
	"github.com/agentmemory/agentmemory/internal/spaces"
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
	DuplicateOf string   `json:"duplicate_of"`
	UnknownTags []string `json:"unknown_tags,omitempty"`
}

// writtenAnswer is the 201 answer of a note write: the note, plus unknown_tags (CTX-1) when
// some of its tags are outside the space's vocabulary.
type writtenAnswer struct {
	notes.Note
	UnknownTags []string `json:"unknown_tags,omitempty"`
}

// proposalAnswer is the 202 answer of a write held as a proposal (AM-8): Review lists the
// gate's kinds when a hit sent it to review (GATE-2, GATE-3), UnknownTags as writtenAnswer.
type proposalAnswer struct {
	ProposalID  string   `json:"proposal_id"`
	Review      []string `json:"review,omitempty"`
	UnknownTags []string `json:"unknown_tags,omitempty"`
}

// answerWrite answers a note write: 201 with the note, 202 {"proposal_id"} when it became
// a proposal (AM-8; with "review": the gate's kinds when a hit sent it to review, GATE-2,
// GATE-3), or 200 with the existing note and duplicate_of when the write was a duplicate
// (nothing stored); each with unknown_tags, the written tags outside the space's vocabulary
// (notes.UnknownTags, CTX-1), when there are any. A replay of an Idempotency-Key carries
// Idempotent-Replayed: true.
func answerWrite(c *gin.Context, res notes.WriteResult, unknown []string) {
	if res.Replayed {
		c.Header("Idempotent-Replayed", "true")
	}
	if res.DuplicateOf != "" {
		c.PureJSON(http.StatusOK, duplicateAnswer{Note: *res.Note, DuplicateOf: res.DuplicateOf, UnknownTags: unknown})
		return
	}
	if res.ProposalID != "" {
		c.PureJSON(http.StatusAccepted, proposalAnswer{ProposalID: res.ProposalID, Review: res.Review, UnknownTags: unknown})
		return
	}
	c.PureJSON(http.StatusCreated, writtenAnswer{Note: *res.Note, UnknownTags: unknown})
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
	unknown, err := s.Notes.UnknownTags(s.ctx(c), principal(c).SpaceID, notes.WrittenTags(res, in.Tags, nil))
	if err != nil {
		s.writeError(c, err) // the note is stored: a retry with the same Idempotency-Key answers it
		return
	}
	answerWrite(c, res, unknown)
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
	n, err := s.Notes.Get(s.ctx(c), s.noteReader(s.ctx(c), principal(c), c.Param("id")), c.Param("id"))
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
	unknown, err := s.Notes.UnknownTags(s.ctx(c), principal(c).SpaceID, notes.WrittenTags(res, nil, patch.Tags))
	if err != nil {
		s.writeError(c, err) // the version is stored: a retry with the same Idempotency-Key answers it
		return
	}
	answerWrite(c, res, unknown)
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
	list, err := s.Proposals.List(s.ctx(c), principal(c), c.Query("status"), int(limit))
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, gin.H{"proposals": list})
}

// getProposal: GET /v1/agent-memory/proposals/{id} (admin or reviewer).
func (s *Server) getProposal(c *gin.Context) {
	pr, err := s.Proposals.Get(s.ctx(c), principal(c), c.Param("id"))
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
const DefaultDecisionWait = workflows.DefaultDecisionWait

// approveProposal: POST /v1/agent-memory/proposals/{id}/approve {"edits"?} (admin, or
// reviewer when the space grants it; proposals.Service.Decide) -> the note: 201 when this
// call approved the proposal, 200 with the same note when it was approved already; 202
// {"proposal_id", "status": "pending"} when the proposal's workflow has not applied the
// decision yet.
func (s *Server) approveProposal(c *gin.Context) {
	var req approveRequest
	if err := bindOptional(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	res, err := s.Proposals.Decide(s.ctx(c), principal(c), c.Param("id"), proposals.Decision{Kind: proposals.DecisionApprove, Edits: req.Edits})
	if err != nil {
		s.writeError(c, err)
		return
	}
	answerDecision(c, c.Param("id"), res)
}

// rejectRequest is the optional body of .../reject.
type rejectRequest struct {
	Reason string `json:"reason"`
}

// rejectProposal: POST /v1/agent-memory/proposals/{id}/reject {"reason"?}
// (proposals.Service.Decide) -> 200 the proposal; 202 {"proposal_id", "status": "pending"}
// when the proposal's workflow has not applied the decision yet.
func (s *Server) rejectProposal(c *gin.Context) {
	var req rejectRequest
	if err := bindOptional(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	res, err := s.Proposals.Decide(s.ctx(c), principal(c), c.Param("id"), proposals.Decision{Kind: proposals.DecisionReject, Reason: req.Reason})
	if err != nil {
		s.writeError(c, err)
		return
	}
	answerDecision(c, c.Param("id"), res)
}

// answerDecision answers Decide's result for proposal id: 202 while the workflow has not
// applied it, 201 the note this call wrote, 200 the note approved already, or 200 the
// rejected proposal.
func answerDecision(c *gin.Context, id string, res proposals.Result) {
	switch {
	case res.Pending:
		c.PureJSON(http.StatusAccepted, gin.H{"proposal_id": id, "status": proposals.StatusPending})
	case res.Note != nil && res.Created:
		c.PureJSON(http.StatusCreated, res.Note)
	case res.Note != nil:
		c.PureJSON(http.StatusOK, res.Note)
	default:
		c.PureJSON(http.StatusOK, res.Proposal)
	}
}

// exportNotes: GET /v1/agent-memory/export (role admin) -> every note version and proposal
// of the space as one JSON document (AM-12), sent as a download.
func (s *Server) exportNotes(c *gin.Context) {
	x, err := s.Proposals.Export(s.ctx(c), principal(c))
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.Header("Content-Disposition", `attachment; filename="agent-memory.json"`)
	c.Header("Cache-Control", "no-store")
	c.PureJSON(http.StatusOK, x)
}

// noteBlock: GET /v1/agent-memory/block?max_tokens=&tags=a,b&view=&source_id= (AM-4), with
// the headers Agent-Run-Id and Agent-Run-Budget in a run (CTX-3) -> {text, enabled, note_ids,
// tokens, and in a run: run, budget_exhausted} with ETag; If-None-Match -> 304. The key and
// documents come from the replica's KeyCache (withConfig: reloaded when the block finds them
// stale).
func (s *Server) noteBlock(c *gin.Context) {
	max, err := queryInt(c, "max_tokens", notes.DefaultBlockTokens, notes.MinBlockTokens, notes.MaxBlockTokens)
	if err != nil {
		s.writeError(c, err)
		return
	}
	run, err := runHeaders(c)
	if err != nil {
		s.writeError(c, err)
		return
	}
	req := notes.BlockRequest{
		MaxTokens: int(max), Tags: splitList(c.Query("tags")), View: c.Query("view"),
		SourceID: c.Query("source_id"), IfNoneMatch: c.GetHeader("If-None-Match"), Run: run,
	}
	var b notes.Block
	err = s.withConfig(c, func(ctx context.Context, p auth.Principal, snap spaces.Snapshot) (err error) {
		b, err = s.Notes.BlockAt(ctx, snap, p, req)
		return err
	})
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.Header("ETag", b.ETag)
	c.Header("Cache-Control", cacheControl(b.MaxAge))
	if b.NotModified {
		c.Status(http.StatusNotModified)
		return
	}
	if b.Run != nil {
		c.PureJSON(http.StatusOK, b) // a run's figures change with every call: encoded now
		return
	}
	// The block's JSON as PureJSON writes it, encoded once per block (notes.Block.Body).
	c.Data(http.StatusOK, "application/json; charset=utf-8", b.Body())
}

// searchNotes: GET /v1/agent-memory/search?q=&tags=&limit=&source_id= (AM-14), with the
// headers Agent-Run-Id and Agent-Run-Budget in a run (CTX-3) -> {enabled, notes, and in a run:
// run, budget_exhausted}.
func (s *Server) searchNotes(c *gin.Context) {
	limit, err := queryInt(c, "limit", notes.DefaultSearchLimit, 1, notes.MaxSearchLimit)
	if err != nil {
		s.writeError(c, err)
		return
	}
	run, err := runHeaders(c)
	if err != nil {
		s.writeError(c, err)
		return
	}
	res, err := s.Notes.Search(s.ctx(c), principal(c), notes.SearchRequest{
		Q: c.Query("q"), Tags: splitList(c.Query("tags")), Limit: int(limit), SourceID: c.Query("source_id"), Run: run,
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
