package turns

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/models"
)

// DropUnreadable deletes, inside idb, every turn sealed under a key the key store no longer
// holds (its profile or its conversation was erased): the restore procedure's step for turns
// (issue 29 §1, ER-1), so a backup restored after an erasure keeps no row of it, not even
// sealed bytes. It returns how many it deleted. Existence only: a key is never opened.
func (s *Service) DropUnreadable(ctx context.Context, idb bun.IDB) (int, error) {
	n := 0
	for _, column := range []string{"profile_id", "sealed_key"} {
		var keyIDs []string
		if err := idb.NewSelect().Model((*models.Turn)(nil)).ColumnExpr("DISTINCT ?", bun.Ident(column)).
			Where("? <> ''", bun.Ident(column)).Scan(ctx, &keyIDs); err != nil {
			return 0, fmt.Errorf("turns: list keys: %w", err)
		}
		var gone []string
		for _, k := range keyIDs {
			ok, err := s.Keys.Exists(ctx, k)
			if err != nil {
				return 0, fmt.Errorf("turns: key: %w", err)
			}
			if !ok {
				gone = append(gone, k)
			}
		}
		for _, part := range chunks(gone) {
			res, err := idb.NewDelete().Model((*models.Turn)(nil)).Where("? IN (?)", bun.Ident(column), bun.In(part)).Exec(ctx)
			if err != nil {
				return 0, fmt.Errorf("turns: drop unreadable: %w", err)
			}
			m, err := res.RowsAffected()
			if err != nil {
				return 0, fmt.Errorf("turns: drop unreadable: %w", err)
			}
			n += int(m)
		}
	}
	return n, nil
}
