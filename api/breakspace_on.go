//go:build conformance_broken

package api

import (
	"context"

	"github.com/agentmemory/agentmemory/internal/auth"
)

// noteReader, in the deliberately broken test build (go build -tags conformance_broken; only
// cmd/agentmemory's conformance test builds it), reads a note as if the caller belonged to the
// note's own space: GET /v1/agent-memory/notes/{id} loses its space check, so a key of another
// space reads the note. Never built into a shipped binary.
func (s *Server) noteReader(ctx context.Context, p auth.Principal, id string) auth.Principal {
	var space string
	if err := s.DB.NewRaw("SELECT space_id FROM notes WHERE id = ?", id).Scan(ctx, &space); err == nil {
		p.SpaceID = space // the broken part: the space comes from the row, not the key
	}
	return p
}
