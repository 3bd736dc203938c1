package noterows

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/spaces"
)

// Error codes of the lookups.
const (
	CodeFeatureDisabled = "feature_disabled"
	CodeUnknownSource   = "unknown_source"
)

// Features returns the features of space spaceID from docs, or fault.Forbidden
// feature_disabled when agent memory is off (AM-3).
func Features(ctx context.Context, docs spaces.Documents, spaceID string) (spaces.Features, error) {
	f, err := docs.Features(ctx, spaceID)
	if err != nil {
		return f, err
	}
	if !f.AgentMemory.Enabled {
		return f, fault.New(fault.Forbidden, CodeFeatureDisabled, "agent memory is off for this space (features.agent_memory.enabled)")
	}
	return f, nil
}

// SourceVendor returns the vendor of agent sourceID of space spaceID, from its newest key (a
// statement prepared once per pool: db.QueryOne): fault.Invalid invalid_member when sourceID
// is empty (a person names the agent), fault.Invalid unknown_source when no agent of the
// space has that name.
func SourceVendor(ctx context.Context, d *bun.DB, spaceID, sourceID string) (string, error) {
	if sourceID == "" {
		return "", Invalid("source_id", "a person names the agent the note belongs to in source_id")
	}
	var vendor string
	err := db.QueryOne(ctx, d, "SELECT vendor FROM api_keys WHERE space_id = ? AND kind = ? AND agent = ? ORDER BY created_at DESC LIMIT 1",
		[]any{&vendor}, spaceID, auth.KindAgent, sourceID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fault.New(fault.Invalid, CodeUnknownSource, "source_id names no agent of this space").With("member", "source_id")
	}
	if err != nil {
		return "", fmt.Errorf("notes: source vendor: %w", err)
	}
	return vendor, nil
}
