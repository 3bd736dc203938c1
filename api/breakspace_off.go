//go:build !conformance_broken

package api

import (
	"context"

	"github.com/agentmemory/agentmemory/internal/auth"
)

// noteReader is the principal GET /v1/agent-memory/notes/{id} reads as: the caller, always.
// A test-only build (tag conformance_broken, breakspace_on.go) replaces it to prove that
// `agentmemory conformance` catches a route whose space check is gone; no configuration of
// a shipped binary reaches that file.
func (s *Server) noteReader(_ context.Context, p auth.Principal, _ string) auth.Principal { return p }
