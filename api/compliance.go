package api

import (
	"bytes"
	"context"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/compliance"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/strictjson"
	"github.com/agentmemory/agentmemory/workflows"
)

// createErasure: POST /v1/erasures (role compliance) {"subject"} | {"conversation_id"} ->
// 202 {"erasure_id", "status": "pending"}; ErasureWorkflow does the rest (GOV-2, WM-13), its
// first step moving the erasure to running. The row is pending whether the start was
// acknowledged or its answer was ambiguous (a deadline, unavailable after send): the
// reconciler starts the workflow if it does not exist. Only a definite refusal
// (definiteRefusal) fails the erasure: 503 workflows_unavailable.
func (s *Server) createErasure(c *gin.Context) {
	if err := compliance.MayRequest(principal(c)); err != nil {
		s.writeError(c, err) // before the body is read (issue 11 §1)
		return
	}
	var req compliance.ErasureRequest
	if err := bind(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	id, err := s.StartErasure(s.ctx(c), principal(c), req)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusAccepted, gin.H{"erasure_id": id, "status": compliance.StatusPending})
}

// StartErasure records erasure req for p (compliance.Service.RequestErasure) and starts its
// ErasureWorkflow: POST /v1/erasures and the Console's Compliance screen. A definite refusal
// of the start fails the erasure and is errStartFailed; an ambiguous answer leaves it pending
// for the reconciler (startRow's policy, rule 3).
func (s *Server) StartErasure(ctx context.Context, p auth.Principal, req compliance.ErasureRequest) (string, error) {
	id, err := s.Compliance.RequestErasure(ctx, p, req)
	if err != nil {
		return "", err
	}
	if err := s.startRow(ctx, rowStart{name: "Erasure", id: workflows.ErasureWorkflowID(id), workflow: workflows.ErasureWorkflow,
		arg: workflows.ErasureInput{SpaceID: p.SpaceID, ErasureID: id}, keepAmbiguous: true,
		end: func(ctx context.Context) error { return s.Compliance.FailErasure(ctx, p.SpaceID, id, "start_failed") },
	}); err != nil {
		return "", err
	}
	return id, nil
}

// StartExport records export req for p (compliance.Service.RequestExport) and starts its
// ExportWorkflow: POST /v1/exports and the Console's Compliance screen. A start the engine
// does not accept fails the export (startRow's policy, rule 2).
func (s *Server) StartExport(ctx context.Context, p auth.Principal, req compliance.ExportRequest) (string, error) {
	id, err := s.Compliance.RequestExport(ctx, p, req)
	if err != nil {
		return "", err
	}
	if err := s.startRow(ctx, rowStart{name: "Export", id: workflows.ExportWorkflowID(id), workflow: workflows.ExportWorkflow,
		arg: workflows.ExportInput{SpaceID: p.SpaceID, ExportID: id},
		end: func(ctx context.Context) error { return s.Compliance.FailExport(ctx, p.SpaceID, id, "start_failed") },
	}); err != nil {
		return "", err
	}
	return id, nil
}

// decideResidue: POST /v1/erasures/{id}/residue/{finding_id} (role compliance)
// {"decision": "erase"|"not_subject"} -> 200 the residue item as decided, receipted (issue 29
// §1b).
func (s *Server) decideResidue(c *gin.Context) {
	p := principal(c)
	if err := compliance.MayRequest(p); err != nil {
		s.writeError(c, err) // before the body is read (issue 11 §1)
		return
	}
	var req compliance.ResidueDecision
	if err := bind(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	it, err := s.Compliance.DecideResidue(s.ctx(c), p, c.Param("erasure_id"), c.Param("finding_id"), req)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, it)
}

// getErasure: GET /v1/erasures/{id} (compliance or admin) -> {erasure_id, status, certificate}.
func (s *Server) getErasure(c *gin.Context) {
	v, err := s.Compliance.GetErasure(s.ctx(c), principal(c), c.Param("erasure_id"))
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, v)
}

// createExport: POST /v1/exports (role compliance) {"subject"} -> 202 {"export_id", "status"};
// ExportWorkflow builds the package (GOV-3).
func (s *Server) createExport(c *gin.Context) {
	if err := compliance.MayRequest(principal(c)); err != nil {
		s.writeError(c, err) // before the body is read (issue 11 §1)
		return
	}
	var req compliance.ExportRequest
	if err := bind(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	id, err := s.StartExport(s.ctx(c), principal(c), req)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusAccepted, gin.H{"export_id": id, "status": compliance.StatusRunning})
}

// getExport: GET /v1/exports/{id} (role compliance) -> {export_id, status, expires_at, counts}.
func (s *Server) getExport(c *gin.Context) {
	v, err := s.Compliance.GetExport(s.ctx(c), principal(c), c.Param("export_id"))
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, v)
}

// exportPackage: GET /v1/exports/{id}/package (role compliance) -> the package as a JSON
// download; 409 export_not_ready while running; 404 once expired or erased.
func (s *Server) exportPackage(c *gin.Context) {
	id := c.Param("export_id")
	data, err := s.Compliance.PackageJSON(s.ctx(c), principal(c), id)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.Header("Content-Disposition", `attachment; filename="`+id+`.json"`)
	c.Header("Cache-Control", "no-store")
	c.Data(http.StatusOK, "application/json", data)
}

// runSweep: POST /v1/retention/sweep (role admin) -> 202 {"workflow_id"}: one retention
// sweep of the caller's space, now (the schedule sweeps every space hourly).
func (s *Server) runSweep(c *gin.Context) {
	p := principal(c)
	if err := p.RequireRole(auth.RoleAdmin); err != nil {
		s.writeError(c, err)
		return
	}
	// The body is optional; when given it must be an empty object.
	if body, err := readBody(c); err != nil {
		s.writeError(c, err)
		return
	} else if len(bytes.TrimSpace(body)) > 0 {
		if err := strictjson.Decode(body, &struct{}{}); err != nil {
			s.writeError(c, err)
			return
		}
	}
	id := workflows.SweepWorkflowID(auth.NewID("sw"))
	if err := s.start(s.ctx(c), "RetentionSweep", id, workflows.RetentionSweepWorkflow, workflows.RetentionSweepInput{SpaceID: p.SpaceID}); err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusAccepted, gin.H{"workflow_id": id})
}

// deleteNote: DELETE /v1/agent-memory/notes/{id} (role admin; issue 29 §3) -> 200
// {"note_ids", "proposal_ids", "receipt_id"}: the note with all its versions and the
// proposals holding its text are gone, with their search rows, and every replica's cached
// blocks at its next read (proposals.Service.DeleteNote); 404 note_not_found.
func (s *Server) deleteNote(c *gin.Context) {
	res, err := s.Proposals.DeleteNote(s.ctx(c), principal(c), c.Param("id"))
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, res)
}

// eraseAgentNotes: DELETE /v1/agent-memory/notes?source_id= (role admin) -> 202
// {"workflow_id", "status": "running"}: NoteErasureWorkflow erases every note (all versions)
// and proposal of that agent, with their search-index rows and a notes.erase receipt (AM-12).
func (s *Server) eraseAgentNotes(c *gin.Context) {
	p := principal(c)
	if err := p.RequireRole(auth.RoleAdmin); err != nil {
		s.writeError(c, err)
		return
	}
	source := strings.TrimSpace(c.Query("source_id"))
	if source == "" || len(source) > 64 {
		s.writeError(c, fault.New(fault.Invalid, "invalid_member", "source_id (the agent) is required").With("member", "source_id"))
		return
	}
	id := workflows.NoteErasureWorkflowID(auth.NewID("ne"))
	if err := s.start(s.ctx(c), "NoteErasure", id, workflows.NoteErasureWorkflow, workflows.NoteErasureInput{SpaceID: p.SpaceID, SourceID: source, ActorKey: p.KeyID}); err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusAccepted, gin.H{"workflow_id": id, "status": "running"})
}
