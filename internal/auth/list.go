package auth

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/models"
)

// Page returns at most limit keys of spaceID whose id sorts after after ("" for the first
// page), in id order (ids are time-ordered, so oldest first), revoked ones too, and whether
// more follow. Never a secret or a hash: only what KeyInfo holds.
func Page(ctx context.Context, db bun.IDB, spaceID, after string, limit int) ([]KeyInfo, bool, error) {
	var rows []models.APIKey
	q := db.NewSelect().Model(&rows).ExcludeColumn("hash").Where("space_id = ?", spaceID)
	if after != "" {
		q = q.Where("id > ?", after)
	}
	if err := q.Order("id ASC").Limit(int64(limit) + 1).Scan(ctx); err != nil {
		return nil, false, fmt.Errorf("auth: list keys: %w", err)
	}
	more := len(rows) > limit
	if more {
		rows = rows[:limit]
	}
	return keyInfos(rows), more, nil
}

// keyInfos converts stored key rows to KeyInfo, times in UTC.
func keyInfos(rows []models.APIKey) []KeyInfo {
	out := make([]KeyInfo, 0, len(rows))
	for _, r := range rows {
		out = append(out, KeyInfo{ID: r.ID, Kind: r.Kind, Agent: r.Agent, Vendor: r.Vendor, Name: r.Name,
			Scopes: nonNil(r.Scopes), Roles: nonNil(r.Roles), Purposes: nonNil(r.Purposes), CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt.UTC(),
			RevokedAt: utcPtr(r.RevokedAt), LastUsedAt: utcPtr(r.LastUsedAt)})
	}
	return out
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
