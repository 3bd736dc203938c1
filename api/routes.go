package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/agentmemory/agentmemory/api/console"
	"github.com/agentmemory/agentmemory/internal/boards"
	"github.com/agentmemory/agentmemory/internal/state"
)

// routes lists the whole API on one screen: each area's routes are in the function named
// for it below, in this order.
func (s *Server) routes() {
	r := s.engine
	s.publicRoutes(r)
	s.consoleRoutes(r)
	v1 := r.Group("/v1", s.authenticate())
	s.keyRoutes(v1)
	s.memoryRoutes(v1)
	s.agentMemoryRoutes(v1)
	s.complianceRoutes(v1)
	s.knowledgeRoutes(v1)
}

// publicRoutes are the probes, metrics, the OpenAPI document, MCP (its own authentication)
// the public signing keys and the operator's space creation.
func (s *Server) publicRoutes(r *gin.Engine) {
	r.GET("/healthz", s.healthz)
	r.GET("/readyz", s.readyz)
	if !s.MetricsOnOwnPort {
		r.GET("/metrics", s.serveMetrics)
	}
	r.GET("/openapi.json", s.openAPI)

	// MCP (AM-5): Streamable HTTP, the same Bearer keys; tools follow the key and features.
	r.Any("/mcp", s.authenticate(), s.mcpServer(), gin.WrapH(s.newMCPHandler()))

	// Signing keys (PR-3): public, so third parties verify certificates without a key.
	r.GET("/v1/signing-keys", s.signingKeys)

	// Spaces (issue 34 §3): created by a deployment operator's key, which no other route
	// accepts, so it reads no space (api/spaces.go).
	r.POST("/v1/spaces", s.createSpace)
}

// consoleRoutes mounts the Console and the answers to unknown paths and methods.
func (s *Server) consoleRoutes(r *gin.Engine) {
	// The Console (CON-1, CON-2): HTML pages for people, signed in by session, calling the
	// same services (and, for keys, erasures and exports, the same Server methods) as below.
	// Its routes are not in openapi.json: they are pages, not the API.
	con := console.New(console.Deps{
		DB: s.DB, Logger: s.log, Notes: s.Notes, Proposals: s.Proposals, Context: s.contextService(), Knowledge: s.Knowledge,
		Docs: s.Docs, Changes: s.Changes, Boards: s.Boards,
		Compliance: s.Compliance, Subjects: s.Subjects, State: s.State, Turns: s.Turns,
		Signer: s.Signer, Ops: s, Now: s.Now,
	})
	con.Mount(r)
	// Unknown paths and methods: under /console the Console's page (with its headers), else JSON.
	r.NoRoute(con.Unmatched(http.StatusNotFound), s.noRoute)
	r.NoMethod(con.Unmatched(http.StatusMethodNotAllowed), s.noMethod)
}

// keyRoutes are keys, space documents and their change requests, and subjects' profiles.
func (s *Server) keyRoutes(v1 *gin.RouterGroup) {
	// Keys and space documents.
	v1.POST("/keys", s.createKey)
	v1.GET("/keys", s.listKeys) // api/keys.go
	v1.GET("/keys/self", s.keySelf)
	v1.DELETE("/keys/:key_id", s.revokeKey)
	v1.GET("/documents/:name", s.getDocument)
	v1.PUT("/documents/:name", s.putDocument)
	v1.POST("/documents/:name/changes", s.proposeChange)
	v1.GET("/documents/:name/changes", s.listChanges)
	v1.GET("/documents/:name/changes/:id", s.getChange)
	v1.POST("/documents/:name/changes/:id/approve", s.approveChange)
	v1.POST("/documents/:name/changes/:id/reject", s.rejectChange)

	// Subjects.
	v1.POST("/profiles", s.createProfile)
	v1.GET("/profiles/:profile_id", s.getProfile)
	v1.GET("/profiles/:profile_id/agent-state", s.profileAgentState)
}

// memoryRoutes are working memory, boards and bridges.
func (s *Server) memoryRoutes(v1 *gin.RouterGroup) {
	// Working memory (WM).
	v1.PUT("/agent-state", s.writeState)
	v1.POST("/agent-state/read", s.readState)
	v1.POST("/agent-state/delete", s.deleteState)                  // issue 29 §3
	v1.POST("/agent-state/lease", s.stateLease(state.ActionLease)) // issue 31
	v1.POST("/agent-state/lease/renew", s.stateLease(state.ActionRenew))
	v1.POST("/agent-state/lease/release", s.stateLease(state.ActionRelease))

	// Boards (issue 31): shared memory by grant, conflicts settled by the space's rules, leases.
	v1.GET("/boards", s.listBoards)
	v1.PUT("/boards", s.writeBoard)
	v1.POST("/boards/read", s.readBoard)
	v1.POST("/boards/lease", s.boardLease(boards.ActionLease))
	v1.POST("/boards/lease/renew", s.boardLease(boards.ActionRenew))
	v1.POST("/boards/lease/release", s.boardLease(boards.ActionRelease))
	v1.GET("/boards/:type/grants", s.listBoardGrants)
	v1.POST("/boards/:type/grants", s.grantBoard)
	v1.DELETE("/boards/:type/grants/:grant_id", s.revokeBoardGrant)

	// Bridges (issue 31, SH-3): another space's boards read through a bridge both approved.
	v1.GET("/bridges", s.listBridges)
	v1.POST("/bridges", s.proposeBridge)
	v1.DELETE("/bridges/:bridge_id", s.revokeBridge)
}

// agentMemoryRoutes are agents' notes and proposals, the context call, turns and
// distillation.
func (s *Server) agentMemoryRoutes(v1 *gin.RouterGroup) {
	// Agent memory (AM).
	v1.POST("/agent-memory/notes", s.createNote)
	v1.GET("/agent-memory/notes", s.listNotes)
	v1.DELETE("/agent-memory/notes", s.eraseAgentNotes)
	v1.GET("/agent-memory/notes/:id", s.getNote)
	v1.DELETE("/agent-memory/notes/:id", s.deleteNote) // issue 29 §3
	v1.POST("/agent-memory/notes/:id/versions", s.noteVersion)
	v1.POST("/agent-memory/notes/:id/retire", s.retireNote)
	v1.GET("/agent-memory/proposals", s.listProposals)
	v1.GET("/agent-memory/proposals/:id", s.getProposal)
	v1.POST("/agent-memory/proposals/:id/approve", s.approveProposal)
	v1.POST("/agent-memory/proposals/:id/reject", s.rejectProposal)
	v1.GET("/agent-memory/block", s.noteBlock)
	v1.GET("/agent-memory/search", s.searchNotes)
	v1.GET("/agent-memory/export", s.exportNotes)
	v1.POST("/agent-memory/exports", s.createNotesExport)              // api/notes_export.go
	v1.GET("/agent-memory/exports/:export_id", s.getNotesExport)       // the file's status
	v1.GET("/agent-memory/exports/:export_id/file", s.notesExportFile) // the sealed file, opened

	// The context call (CTX-2): the block, knowledge evidence and the task section in one budget.
	v1.POST("/context", s.buildContext)

	// Turns and identity links (AM-9).
	v1.POST("/turns", s.writeTurns)
	v1.POST("/turns/read", s.readTurns)
	v1.POST("/identity-links", s.linkIdentity)

	// Distillation (AM-9); approve/reject live with the proposals.
	v1.POST("/agent-memory/distill", s.distill)
}

// complianceRoutes are erasures, exports, the retention sweep, receipts, the events and the
// export feed.
func (s *Server) complianceRoutes(v1 *gin.RouterGroup) {
	// Compliance (GOV-2, GOV-3, WM-12, WM-13): workflows started here. Agent-note erasure
	// (AM-12) is DELETE /agent-memory/notes above (NoteErasureWorkflow).
	v1.POST("/erasures", s.createErasure)
	v1.GET("/erasures/:erasure_id", s.getErasure)
	v1.GET("/erasures/:erasure_id/certificate", s.erasureCertificate)     // signed (PR-3)
	v1.POST("/erasures/:erasure_id/residue/:finding_id", s.decideResidue) // issue 29 §1b
	v1.POST("/exports", s.createExport)
	v1.GET("/exports/:export_id", s.getExport)
	v1.GET("/exports/:export_id/package", s.exportPackage)
	v1.POST("/retention/sweep", s.runSweep)

	// Receipts (GOV-1).
	v1.GET("/receipts", s.listReceipts)
	v1.GET("/receipts/verify", s.verifyReceipts)
	v1.GET("/receipts/head", s.receiptsHead) // signed (PR-3)
	v1.GET("/receipts/:receipt_id/proof", s.receiptProof)
	v1.GET("/receipts/checkpoint", s.receiptsCheckpoint)   // signed (issue 32)
	v1.GET("/receipts/consistency", s.receiptsConsistency) // issue 32

	// Events (AM-13, GOV-4): the outbox and the webhook signing secret.
	v1.GET("/events", s.listEvents)
	v1.GET("/events/webhook-secret", s.webhookSecret)
	v1.GET("/export/feed", s.exportFeed) // api/export_feed.go
}

// knowledgeRoutes are knowledge bases, their documents and retrieval.
func (s *Server) knowledgeRoutes(v1 *gin.RouterGroup) {
	// Knowledge (KN-1..KN-4): bases, documents (ingested by IngestWorkflow), retrieval.
	v1.POST("/knowledge", s.createKnowledgeBase)
	v1.GET("/knowledge", s.listKnowledgeBases)
	v1.POST("/knowledge/retrieve", s.retrieveKnowledge)
	v1.PUT("/knowledge/:kb/readers", s.setKnowledgeReaders)
	v1.POST("/knowledge/:kb/documents", s.submitKnowledgeDocument)
	v1.GET("/knowledge/:kb/documents", s.listKnowledgeDocuments)
	v1.GET("/knowledge/:kb/documents/:id", s.getKnowledgeDocument)
	v1.DELETE("/knowledge/:kb/documents/:id", s.deleteKnowledgeDocument)
}
