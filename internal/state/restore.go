package state

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/models"
)

// DropUnreadable deletes, inside idb, every working state sealed under a subject key the key
// store no longer holds (the subject was erased): the restore procedure's step for working
// memory (issue 29 §1, ER-1). The agents' version floors stay, so a state written again never
// restarts at version 1. It returns how many it deleted; with no key store it deletes nothing
// (nothing was sealed). Existence only: a key is never opened.
func (s *Service) DropUnreadable(ctx context.Context, idb bun.IDB) (int, error) {
	if s.Keys == nil {
		return 0, nil
	}
	var hashes []string
	if err := idb.NewSelect().Model((*models.AgentState)(nil)).ColumnExpr("DISTINCT subject_hash").
		Where("subject_hash <> ''").Scan(ctx, &hashes); err != nil {
		return 0, fmt.Errorf("state: list subject keys: %w", err)
	}
	n := 0
	for _, h := range hashes {
		ok, err := s.Keys.Exists(ctx, SubjectKeyID(h))
		if err != nil {
			return 0, fmt.Errorf("state: subject key: %w", err)
		}
		if ok {
			continue
		}
		res, err := idb.NewDelete().Model((*models.AgentState)(nil)).Where("subject_hash = ?", h).Exec(ctx)
		if err != nil {
			return 0, fmt.Errorf("state: drop unreadable: %w", err)
		}
		m, err := res.RowsAffected()
		if err != nil {
			return 0, fmt.Errorf("state: drop unreadable: %w", err)
		}
		n += int(m)
	}
	return n, nil
}
