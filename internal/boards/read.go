package boards

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/spaces"
)

// ReadRequest is the body of POST /v1/boards/read: the board, by type and id, and Space, the
// id of another space whose board is read through a bridge (SH-3; empty or the key's own
// space: a board of the key's space).
type ReadRequest struct {
	Type  string `json:"type"`
	ID    string `json:"id"`
	Space string `json:"space,omitempty"`
}

// ReadResult is a board as served: a never-written or expired board reads as an empty body
// at its version (0 when never written) with a null updated_at.
type ReadResult struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Space     string          `json:"space,omitempty"` // a bridged read: the space whose board it is
	Body      json.RawMessage `json:"body"`
	Version   int64           `json:"version"`
	UpdatedAt *time.Time      `json:"updated_at"`
}

// Read returns a board as p may see it (a read or read_write grant; resolve's errors):
// fields past their retention are never served. The read is receipted (board.read, the
// board's id and version) before it is answered. A request naming another space reads
// through a bridge (readBridged), after the same checks of type and id.
func (s *Service) Read(ctx context.Context, p auth.Principal, req ReadRequest) (ReadResult, error) {
	if req.Space != "" && req.Space != p.SpaceID {
		if req.Type == "" {
			return ReadResult{}, invalid("type", "type is required: a board type of object-types (ownership shared)")
		}
		if !idPattern.MatchString(req.ID) {
			return ReadResult{}, invalid("id", "id is 1-256 characters of letters, digits and _ . : @ - starting with a letter or digit")
		}
		return s.readBridged(ctx, p, req)
	}
	req.Space = ""
	t, err := s.resolve(ctx, p, req.Type, req.ID, spaces.AccessRead)
	if err != nil {
		return ReadResult{}, err
	}
	row, err := s.loadBoard(ctx, s.DB, t, false)
	if err != nil {
		return ReadResult{}, wrap("read", err)
	}
	now := s.Now().UTC()
	out := ReadResult{Type: req.Type, ID: req.ID, Body: json.RawMessage("{}")}
	ids := []string{}
	if row != nil {
		ids = append(ids, row.ID)
		out.Version = row.Version
		if fields := liveFields(row, t.schema, now); len(fields) > 0 {
			at := row.UpdatedAt.UTC()
			out.Body, out.UpdatedAt = fields.Join(), &at
		}
	}
	err = receipts.Record(ctx, s.Receipts, s.DB, t.spaceID, receipts.Entry{Kind: receipts.KindBoard, Action: ActionRead, ActorKey: p.KeyID,
		ObjectIDs: ids, Detail: map[string]any{"type": t.typ, "version": out.Version}}, now)
	if err != nil {
		return ReadResult{}, wrap("read receipt", err)
	}
	return out, nil
}
