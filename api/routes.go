package api

// routes lists the whole API on one screen.
func (s *Server) routes() {
	r := s.engine
	r.GET("/healthz", s.healthz)
	r.GET("/readyz", s.readyz)
	if !s.MetricsOnOwnPort {
		r.GET("/metrics", s.serveMetrics)
	}

	v1 := r.Group("/v1", s.authenticate())

	// Keys and space documents.
	v1.POST("/keys", s.createKey)
	v1.DELETE("/keys/:key_id", s.revokeKey)
	v1.GET("/documents/:name", s.getDocument)
	v1.PUT("/documents/:name", s.putDocument)

	// Subjects.
	v1.POST("/profiles", s.createProfile)
	v1.GET("/profiles/:profile_id", s.getProfile)
	v1.GET("/profiles/:profile_id/agent-state", s.profileAgentState)

	// Working memory (WM).
	v1.PUT("/agent-state", s.writeState)
	v1.POST("/agent-state/read", s.readState)

	// Receipts (GOV-1).
	v1.GET("/receipts", s.listReceipts)
	v1.GET("/receipts/verify", s.verifyReceipts)
}
