package dbtest_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db/dbtest"
)

func TestMigratedOnBothEngines(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		var n int
		require.NoError(t, d.NewSelect().TableExpr("agent_states").ColumnExpr("count(*)").Scan(t.Context(), &n))
		require.Equal(t, 0, n)
	})
}
