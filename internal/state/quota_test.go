package state_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/keyed"
	"github.com/agentmemory/agentmemory/internal/quotas"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/internal/state"
)

// withQuotas puts the features document with working memory on and quotas q (a JSON object).
func withQuotas(t *testing.T, d *bun.DB, p auth.Principal, q string) {
	t.Helper()
	docs := spaces.Documents{DB: d}
	_, _, err := docs.Put(context.Background(), d, p, spaces.DocFeatures, []byte(`{"agent_state": {"enabled": true}, "quotas": `+q+`}`), time.Now())
	require.NoError(t, err)
}

func writeScope(id, body string) state.WriteRequest {
	return state.WriteRequest{Scope: &state.Scope{Kind: "conversation", ID: id}, Agent: "bot", Body: json.RawMessage(body)}
}

func used(t *testing.T, d bun.IDB, spaceID, quota, key string) int64 {
	t.Helper()
	n, err := quotas.Used(context.Background(), d, spaceID, quota, key)
	require.NoError(t, err)
	return n
}

func requireOverQuota(t *testing.T, res state.WriteResult, quota string, limit, version int64) {
	t.Helper()
	require.False(t, res.Stored, "got stored, want over_quota")
	require.NotNil(t, res.Reason)
	require.Equal(t, quotas.ReasonOverQuota, *res.Reason)
	require.Equal(t, quota, res.Quota)
	require.Equal(t, limit, res.Limit)
	require.Equal(t, version, res.Version)
}

// TestStateQuotasAtTheBoundary (issue 34 §1): the states per scope kind and per space and the
// bytes per space are stored up to their limit exactly; the write past it answers 200
// stored:false over_quota naming the quota, leaves the previous state as it was and counts
// nothing; a delete frees its place.
func TestStateQuotasAtTheBoundary(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		s, p := newService(t, d, plainMasker{})
		withQuotas(t, d, p, `{"states_per_scope_kind": {"conversation": 2}, "states_per_space": 3}`)
		for _, id := range []string{"c-1", "c-2"} {
			res, err := s.Write(ctx, p, "", writeScope(id, `{"step": "a"}`))
			require.NoError(t, err)
			require.True(t, res.Stored)
		}
		res, err := s.Write(ctx, p, "", writeScope("c-3", `{"step": "a"}`))
		require.NoError(t, err)
		requireOverQuota(t, res, quotas.StatesPerScopeKind, 2, 0)
		read, err := s.Read(ctx, p, state.ReadRequest{Scope: &state.Scope{Kind: "conversation", ID: "c-3"}, Agent: "bot"})
		require.NoError(t, err)
		require.Equal(t, int64(0), read.Version, "a refused first write stores nothing")
		require.Equal(t, int64(2), used(t, d, p.SpaceID, quotas.StatesPerScopeKind, "conversation"))
		require.Equal(t, int64(2), used(t, d, p.SpaceID, quotas.StatesPerSpace, ""))

		withQuotas(t, d, p, `{"states_per_space": 2}`)
		res, err = s.Write(ctx, p, "", writeScope("c-3", `{"step": "a"}`))
		require.NoError(t, err)
		requireOverQuota(t, res, quotas.StatesPerSpace, 2, 0)

		del, err := s.Delete(ctx, p, state.DeleteRequest{Scope: &state.Scope{Kind: "conversation", ID: "c-2"}, Agent: "bot"})
		require.NoError(t, err)
		require.Equal(t, 1, del.Deleted)
		require.Equal(t, int64(1), used(t, d, p.SpaceID, quotas.StatesPerSpace, ""))
		res, err = s.Write(ctx, p, "", writeScope("c-3", `{"step": "a"}`))
		require.NoError(t, err)
		require.True(t, res.Stored, "a deleted state frees its place")
	})
}

// TestStateBytesQuotaKeepsThePreviousState (issue 34 §1, WM-8's rule): a write that would grow
// the space's state bytes past state_bytes_per_space is not stored; the state keeps its
// previous body and version and the byte count stays the stored states' sum; a write that
// lands exactly on the limit is stored.
func TestStateBytesQuotaKeepsThePreviousState(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		s, p := newService(t, d, plainMasker{})
		res, err := s.Write(ctx, p, "", writeScope("c-1", `{"step": "a"}`))
		require.NoError(t, err)
		require.True(t, res.Stored)
		small := used(t, d, p.SpaceID, quotas.StateBytesPerSpace, "")
		require.Equal(t, int64(len(`{"step":"a"}`)), small)
		// Exactly at the limit: stored. One byte over: refused.
		at := `{"step": "` + strings.Repeat("x", 20) + `"}`
		limit := int64(len(`{"step":"`) + 20 + len(`"}`))
		withQuotas(t, d, p, fmt.Sprintf(`{"state_bytes_per_space": %d}`, limit))
		res, err = s.Write(ctx, p, "", writeScope("c-1", at))
		require.NoError(t, err)
		require.True(t, res.Stored, "a write landing exactly on the limit is stored")
		require.Equal(t, limit, used(t, d, p.SpaceID, quotas.StateBytesPerSpace, ""))

		over := `{"step": "` + strings.Repeat("y", 21) + `"}`
		res, err = s.Write(ctx, p, "", writeScope("c-1", over))
		require.NoError(t, err)
		requireOverQuota(t, res, quotas.StateBytesPerSpace, limit, 2)
		read, err := s.Read(ctx, p, state.ReadRequest{Scope: &state.Scope{Kind: "conversation", ID: "c-1"}, Agent: "bot"})
		require.NoError(t, err)
		require.Equal(t, int64(2), read.Version)
		require.JSONEq(t, at, string(read.Body), "the previous state is kept")
		require.Equal(t, limit, used(t, d, p.SpaceID, quotas.StateBytesPerSpace, ""))

		// A shrinking write is always stored and lowers the count.
		res, err = s.Write(ctx, p, "", writeScope("c-1", `{"step": "b"}`))
		require.NoError(t, err)
		require.True(t, res.Stored)
		require.Equal(t, small, used(t, d, p.SpaceID, quotas.StateBytesPerSpace, ""))
	})
}

// TestStateQuotaDefaultsMatchTheDatabase: with no quotas in the features document each state
// quota's limit is quotas.Defaults' (the database's triggers hold the same numbers). The
// count is set just under the default, then one write fits and the next does not.
func TestStateQuotaDefaultsMatchTheDatabase(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		s, p := newService(t, d, plainMasker{})
		for _, q := range []string{quotas.StatesPerSpace, quotas.StatesPerScopeKind} {
			t.Run(q, func(t *testing.T) {
				key := ""
				if q == quotas.StatesPerScopeKind {
					key = "conversation"
				}
				_, err := d.ExecContext(ctx, `DELETE FROM agent_states WHERE space_id = ?`, p.SpaceID)
				require.NoError(t, err)
				_, err = d.ExecContext(ctx, `DELETE FROM quota_usage WHERE space_id = ?`, p.SpaceID)
				require.NoError(t, err)
				_, err = d.ExecContext(ctx, `INSERT INTO quota_usage (space_id, quota, scope_key, used) VALUES (?, ?, ?, ?)`,
					p.SpaceID, q, key, quotas.Defaults[q]-1)
				require.NoError(t, err)
				res, err := s.Write(ctx, p, "", writeScope(q+"-1", `{"step": "a"}`))
				require.NoError(t, err)
				require.True(t, res.Stored)
				res, err = s.Write(ctx, p, "", writeScope(q+"-2", `{"step": "a"}`))
				require.NoError(t, err)
				requireOverQuota(t, res, q, quotas.Defaults[q], 0)
			})
		}
	})
}

// TestStateQuotaConcurrentReplicas (issue 34 §1): writers on two replicas (two services over
// two connection pools of one database) creating states at once never store more than the
// limit, and the count equals the stored states exactly.
func TestStateQuotaConcurrentReplicas(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			u := dbtest.URL(t, engine)
			open := func() *bun.DB {
				d, err := db.Open(ctx, u, dbtest.Shipped())
				require.NoError(t, err)
				t.Cleanup(func() { db.Close(d) })
				_, err = db.Migrate(ctx, d)
				require.NoError(t, err)
				return d
			}
			d1, d2 := open(), open()
			s1, p := newService(t, d1, plainMasker{})
			withQuotas(t, d1, p, `{"states_per_space": 10}`)
			s2 := &state.Service{DB: d2, Docs: spaces.Documents{DB: d2}, Hasher: keyed.New([]byte("state-test-secret-0123456789abcdef")), Masker: plainMasker{}, Now: time.Now}
			var wg sync.WaitGroup
			var mu sync.Mutex
			stored, refused := 0, 0
			for i := 0; i < 24; i++ {
				s := s1
				if i%2 == 1 {
					s = s2
				}
				wg.Add(1)
				go func(i int, s *state.Service) {
					defer wg.Done()
					res, err := s.Write(ctx, p, "", writeScope(fmt.Sprintf("c-%d", i), `{"step": "a"}`))
					mu.Lock()
					defer mu.Unlock()
					require.NoError(t, err)
					if res.Stored {
						stored++
					} else {
						require.Equal(t, quotas.StatesPerSpace, res.Quota)
						refused++
					}
				}(i, s)
			}
			wg.Wait()
			require.Equal(t, 10, stored, "got %d stored, want exactly the limit", stored)
			require.Equal(t, 14, refused)
			var rows int64
			require.NoError(t, d1.NewRaw(`SELECT count(*) FROM agent_states WHERE space_id = ?`, p.SpaceID).Scan(ctx, &rows))
			require.Equal(t, int64(10), rows)
			require.Equal(t, rows, used(t, d2, p.SpaceID, quotas.StatesPerSpace, ""))
		})
	}
}
