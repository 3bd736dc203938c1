package api

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/proposals"
	"github.com/agentmemory/agentmemory/workflows"
)

// createNotesExport: POST /v1/agent-memory/exports (role admin) {"source_id"} -> 202
// {"export_id", "status": "running"}; AgentMemoryExportWorkflow builds the agent's export
// file (every note version and proposal, sealed, expiring; issue 33 §4). GET
// /v1/agent-memory/export stays the synchronous answer for small agents.
func (s *Server) createNotesExport(c *gin.Context) {
	if err := principal(c).RequireRole(auth.RoleAdmin); err != nil {
		s.writeError(c, err) // before the body is read
		return
	}
	var req proposals.ExportFileRequest
	if err := bind(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	id, err := s.StartNotesExport(s.ctx(c), principal(c), req)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusAccepted, gin.H{"export_id": id, "status": proposals.ExportRunning})
}

// StartNotesExport records agent-memory export file req for p
// (proposals.Service.RequestExportFile) and starts its AgentMemoryExportWorkflow; a start
// the engine does not accept fails the file (503 workflows_unavailable).
func (s *Server) StartNotesExport(ctx context.Context, p auth.Principal, req proposals.ExportFileRequest) (string, error) {
	id, err := s.Proposals.RequestExportFile(ctx, p, req)
	if err != nil {
		return "", err
	}
	in := workflows.AgentMemoryExportInput{SpaceID: p.SpaceID, ExportID: id}
	if err := s.start(ctx, "AgentMemoryExport", workflows.AgentMemoryExportWorkflowID(id), workflows.AgentMemoryExportWorkflow, in); err != nil {
		if ferr := s.Proposals.FailExportFile(context.WithoutCancel(ctx), p.SpaceID, id, "start_failed"); ferr != nil {
			return "", ferr
		}
		return "", err
	}
	return id, nil
}

// getNotesExport: GET /v1/agent-memory/exports/{id} (role admin) -> {export_id, source_id,
// status, created_at, completed_at, expires_at, counts}; 404 once expired or erased.
func (s *Server) getNotesExport(c *gin.Context) {
	v, err := s.Proposals.GetExportFile(s.ctx(c), principal(c), c.Param("export_id"))
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, v)
}

// notesExportFile: GET /v1/agent-memory/exports/{id}/file (role admin) -> the file as a JSON
// download, receipted (notes.export.download); 409 export_not_ready while running or
// failed; 404 once expired or erased.
func (s *Server) notesExportFile(c *gin.Context) {
	id := c.Param("export_id")
	data, err := s.Proposals.ExportFileJSON(s.ctx(c), principal(c), id)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.Header("Content-Disposition", `attachment; filename="`+id+`.json"`)
	c.Header("Cache-Control", "no-store")
	c.Data(http.StatusOK, "application/json", data)
}
