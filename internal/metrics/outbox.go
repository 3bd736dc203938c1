package metrics

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/models"
)

// OutboxBacklog reads the backlog from the outbox table of db: rows with no sent_at.
func OutboxBacklog(db bun.IDB) Backlog {
	return func(ctx context.Context) (int64, time.Time, error) {
		n, err := db.NewSelect().Model((*models.OutboxEvent)(nil)).Where("sent_at IS NULL").Count(ctx)
		if err != nil || n == 0 {
			return int64(n), time.Time{}, err
		}
		var oldest models.OutboxEvent
		err = db.NewSelect().Model(&oldest).Column("created_at").Where("sent_at IS NULL").OrderExpr("seq ASC").Limit(1).Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			return int64(n), time.Time{}, nil
		}
		return int64(n), oldest.CreatedAt, err
	}
}
