package state_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/state"
)

// TestLastSeenIsOnlyAHint (issue 16): each replica remembers the last row it saw and writes on
// it without reading first, but a remembered row that another replica moved on never wins: a
// merge keeps the other replica's fields, a compare-and-swap at the version the other replica
// wrote succeeds, one at the remembered version is refused, and a read sees the newest.
func TestLastSeenIsOnlyAHint(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		a, p := newService(t, d, plainMasker{})
		b := &state.Service{DB: a.DB, Docs: a.Docs, Hasher: a.Hasher, Masker: a.Masker, Now: a.Now}
		read := func(s *state.Service) state.ReadResult {
			got, err := s.Read(ctx, p, state.ReadRequest{Scope: &state.Scope{Kind: "conversation", ID: "c-1"}, Agent: "bot"})
			require.NoError(t, err)
			return got
		}
		mustWrite := func(s *state.Service, req state.WriteRequest) int64 {
			res, err := s.Write(ctx, p, "", req)
			require.NoError(t, err)
			require.True(t, res.Stored, "%+v", res)
			return res.Version
		}

		require.Equal(t, int64(1), mustWrite(a, write(`{"step": "a"}`))) // a remembers v1
		require.Equal(t, int64(2), mustWrite(b, write(`{"note": "from b"}`)))
		require.Equal(t, int64(3), mustWrite(a, write(`{"step": "c"}`)), "a's remembered v1 is stale: it reads v2")
		require.JSONEq(t, `{"step": "c", "note": "from b"}`, string(read(b).Body), "the merge kept b's field")

		require.Equal(t, int64(4), mustWrite(b, write(`{"step": "d"}`))) // a still remembers v3
		cas := func(v int64, body string) state.WriteRequest {
			req := write(body)
			req.Mode, req.IfVersion = state.ModeCAS, &v
			return req
		}
		_, err := a.Write(ctx, p, "", cas(3, `{"step": "stale"}`))
		require.Error(t, err, "a compare-and-swap at a's remembered version is refused")
		require.Equal(t, int64(5), mustWrite(a, cas(4, `{"step": "e"}`)), "one at the version b wrote goes through")
		got := read(b)
		require.Equal(t, int64(5), got.Version)
		var body map[string]any
		require.NoError(t, json.Unmarshal(got.Body, &body))
		require.Equal(t, map[string]any{"step": "e"}, body, "a compare-and-swap replaces the whole state")

		// A state tied to a customer is never remembered; writes on it still go through.
		withSubject := write(`{"step": "s"}`)
		withSubject.Scope = &state.Scope{Kind: "conversation", ID: "c-subject"}
		withSubject.Subject = "email:ana@example.com"
		require.Equal(t, int64(1), mustWrite(a, withSubject))
		require.Equal(t, int64(2), mustWrite(a, withSubject))
		require.Equal(t, 0, a.RememberedWithSubject(), "no customer's state is kept in memory")
	})
}

// plainMasker masks nothing.
type plainMasker struct{}

func (plainMasker) MaskText(_ context.Context, _, text string) (string, error) { return text, nil }
