package subjects

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/models"
)

// DropUnreadable deletes, inside idb, every profile whose key the key store no longer holds
// (the subject was erased) with its handles, and bumps the profile revision of each space it
// touched: the restore procedure's step for profiles (issue 29 §1, ER-1). It returns how many
// profiles it deleted. Existence only: a key is never opened.
func (s *Service) DropUnreadable(ctx context.Context, idb bun.IDB) (int, error) {
	var rows []models.Profile
	if err := idb.NewSelect().Model(&rows).Column("id", "space_id").Order("id").Scan(ctx); err != nil {
		return 0, fmt.Errorf("subjects: list profiles: %w", err)
	}
	touched := map[string]bool{}
	n := 0
	for _, r := range rows {
		ok, err := s.Keys.Exists(ctx, r.ID)
		if err != nil {
			return 0, fmt.Errorf("subjects: profile key: %w", err)
		}
		if ok {
			continue
		}
		if _, err := idb.NewDelete().Model((*models.ProfileHandle)(nil)).Where("profile_id = ?", r.ID).Exec(ctx); err != nil {
			return 0, fmt.Errorf("subjects: drop handles: %w", err)
		}
		if _, err := idb.NewDelete().Model((*models.Profile)(nil)).Where("id = ?", r.ID).Exec(ctx); err != nil {
			return 0, fmt.Errorf("subjects: drop profile: %w", err)
		}
		touched[r.SpaceID] = true
		n++
	}
	for sp := range touched { // order does not matter: each bump is independent
		if err := spaces.BumpRevision(ctx, idb, sp, spaces.RevisionProfiles); err != nil {
			return 0, err
		}
	}
	return n, nil
}
