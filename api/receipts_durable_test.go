package api_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/receipts"
)

// Issue 16: on PostgreSQL the receipt routes show the chain only once it is durable. Before
// each request a receipt is committed asynchronously (as a group commit is, before its
// flush); when the route answers, the WAL is flushed past that commit, so nothing signed,
// listed, verified or proved can be lost by a crash.
func TestReceiptRoutesShowOnlyDurableChain(t *testing.T) {
	dbtest.SkipPostgresShort(t)
	e := apptest.New(t, "postgres")
	e.Server = api.NewServer(withSigner(e.Deps, newTestSigner(t)))
	ctx := context.Background()
	at := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	var last receipts.Receipt
	asyncReceipt := func() string {
		require.NoError(t, e.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			if _, err := tx.ExecContext(ctx, "SET LOCAL synchronous_commit = off"); err != nil {
				return err
			}
			var err error
			last, err = receipts.Append(ctx, tx, e.SpaceID, receipts.Entry{Kind: receipts.KindAgentMemory, Action: "block.read", ActorKey: "key_1"}, at)
			return err
		}))
		var lsn string
		require.NoError(t, e.DB.QueryRowContext(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&lsn))
		return lsn
	}
	for _, path := range []string{"/v1/receipts/head", "/v1/receipts?after=0", "/v1/receipts/verify", "proof"} {
		lsn := asyncReceipt()
		if path == "proof" {
			path = fmt.Sprintf("/v1/receipts/%s/proof", last.ID)
		}
		e.MustDo(http.StatusOK, "GET", path, e.AdminKey, nil)
		var flushed bool
		require.NoError(t, e.DB.QueryRowContext(ctx, "SELECT pg_current_wal_flush_lsn() >= ?::pg_lsn", lsn).Scan(&flushed))
		require.True(t, flushed, "%s answered with the WAL flushed past what it read", path)
	}
}
