package api_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/models"
)

// spaceCount is how many spaces the database holds.
func spaceCount(t *testing.T, e *apptest.Env) int64 {
	t.Helper()
	n, err := e.DB.NewSelect().Model((*models.Space)(nil)).Count(context.Background())
	require.NoError(t, err)
	return n
}

// Issue 34 §3: POST /v1/spaces creates a space and its admin key with an operator key only,
// receipted in the new space with the operator key as actor; a space's keys (its admin's
// too), no key, a revoked operator key and a bad body are refused with the error shape and
// create nothing; the operator key itself reads no space.
func TestCreateSpaceWithOperatorKey(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		opID, op, err := spaces.MintOperatorKey(ctx, e.DB, "conformance runner", time.Now())
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(op, spaces.OperatorPrefix))
		before := spaceCount(t, e)

		// Refused, nothing created.
		agent := e.AgentKey("shop-bot", "acme-ai", "agent_state", "agent_memory")
		for _, tc := range []struct {
			key    string
			body   any
			status int
			code   string
		}{
			{"", map[string]any{"name": "x"}, 401, "missing_key"},
			{e.AdminKey, map[string]any{"name": "x"}, 403, "operator_key_required"},
			{agent, map[string]any{"name": "x"}, 403, "operator_key_required"},
			{"amop_" + strings.Repeat("A", 43), map[string]any{"name": "x"}, 401, "invalid_key"},
			{op, map[string]any{"name": "x", "tenant": "sp_other"}, 400, ""},
			{op, map[string]any{"name": " "}, 400, "invalid_member"},
			{op, `{"name":`, 400, ""},
		} {
			r := e.Do("POST", "/v1/spaces", tc.key, tc.body)
			require.Equal(t, tc.status, r.Status, "%v: %s", tc.body, r.Body)
			if tc.code != "" {
				require.Equal(t, tc.code, r.ErrorCode(t), "%s", r.Body)
			}
		}
		require.Equal(t, before, spaceCount(t, e), "a refused request created a space")

		// Created: the admin key works in the new space, and only there.
		r := e.MustDo(201, "POST", "/v1/spaces", op, map[string]any{"name": "conformance-a", "direct_put": true})
		m := r.JSON(t)
		spaceID, admin := m["space_id"].(string), m["admin_key"].(string)
		require.NotEqual(t, e.SpaceID, spaceID)
		self := e.MustDo(200, "GET", "/v1/keys/self", admin, nil).JSON(t)
		require.Equal(t, spaceID, self["space_id"])
		e.MustDo(200, "PUT", "/v1/documents/features", admin, map[string]any{"agent_memory": map[string]any{"enabled": true}}) // direct_put
		require.Equal(t, before+1, spaceCount(t, e))
		var acts []models.Receipt
		require.NoError(t, e.DB.NewSelect().Model(&acts).Where("space_id = ? AND action IN ('space.create', 'key.create')", spaceID).Scan(ctx))
		require.Len(t, acts, 2)
		for _, a := range acts {
			require.Equal(t, opID, a.ActorKeyID, "%s names the operator key", a.Action)
		}

		// The operator key reads no space: every space route refuses it.
		for _, path := range []string{"/v1/keys/self", "/v1/keys", "/v1/agent-memory/notes", "/v1/receipts/verify"} {
			r := e.Do("GET", path, op, nil)
			require.Equal(t, 401, r.Status, "%s: %s", path, r.Body)
			require.Equal(t, "invalid_key", r.ErrorCode(t))
		}

		// Revoked: refused on the next request.
		require.NoError(t, spaces.RevokeOperatorKey(ctx, e.DB, opID, time.Now()))
		r = e.Do("POST", "/v1/spaces", op, map[string]any{"name": "late"})
		require.Equal(t, 401, r.Status, "%s", r.Body)
		require.Equal(t, before+1, spaceCount(t, e))
		require.Error(t, spaces.RevokeOperatorKey(ctx, e.DB, opID, time.Now()), "revoking twice is key_not_found")
	})
}
