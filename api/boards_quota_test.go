package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/quotas"
	"github.com/agentmemory/agentmemory/internal/spaces"
)

// TestBoardsQuotaPerSpace (issue 31 §5): features.quotas.boards_per_space bounds the space's
// boards, counted by the database like every quota: a write creating one board more is 409
// quota_exceeded naming the quota and its limit and stores nothing (no board, no version, no
// event); writes to the boards that exist still pass; the recount finds the counter right.
func TestBoardsQuotaPerSpace(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		b := newBoardEnv(t, e)
		quotaFeatures(e, map[string]any{"boards_per_space": 2})
		b.grant(t, map[string]any{"vendor": "acme", "access": "read_write"})
		requireError(t, e.Do("PUT", "/v1/documents/features", e.AdminKey, map[string]any{"quotas": map[string]any{"boards_per_space": -1}}),
			http.StatusBadRequest, "invalid_document")
		for _, id := range []string{"inc-1", "inc-2"} {
			require.Equal(t, http.StatusOK, boardWrite(e, b.alice, id, 0, map[string]any{"title": id}).Status)
		}
		require.Equal(t, int64(2), usedOf(t, e, quotas.BoardsPerSpace, ""))
		events := countEvents(t, e)
		m := requireError(t, boardWrite(e, b.alice, "inc-3", 0, map[string]any{"title": "three"}), http.StatusConflict, "quota_exceeded")
		require.Equal(t, "boards_per_space", m["quota"])
		require.Equal(t, jsonNumber("2"), m["limit"])
		r := boardRead(e, b.alice, "inc-3").JSON(t)
		require.Equal(t, jsonNumber("0"), r["version"], "nothing of the refused board is stored")
		require.Equal(t, events, countEvents(t, e), "no event for the refused board")
		require.Equal(t, http.StatusOK, boardWrite(e, b.alice, "inc-1", 1, map[string]any{"title": "again"}).Status, "an existing board still takes writes")
		require.Equal(t, int64(2), usedOf(t, e, quotas.BoardsPerSpace, ""))

		rep, err := quotas.Recount(context.Background(), e.DB)
		require.NoError(t, err)
		require.Empty(t, rep.Fixed, "the counter equals the rows")
		features, err := spaces.Documents{DB: e.DB}.Features(context.Background(), e.SpaceID)
		require.NoError(t, err)
		lines, err := quotas.Usage(context.Background(), e.DB, e.SpaceID, features)
		require.NoError(t, err)
		require.Contains(t, lines, quotas.Line{Quota: quotas.BoardsPerSpace, Scope: "space", Used: 2, Limit: 2})
	})
}

// countEvents counts the outbox events of e's space.
func countEvents(t *testing.T, e *apptest.Env) int {
	t.Helper()
	n, err := e.DB.NewSelect().Table("outbox").Where("space_id = ?", e.SpaceID).Count(context.Background())
	require.NoError(t, err)
	return int(n)
}
