package noterows_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/keyed"
	"github.com/agentmemory/agentmemory/internal/noterows"
)

func TestEvidenceColumnsRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ev       *noterows.Evidence
		kind, id string
	}{
		{"none", nil, "", ""},
		{"conversation", &noterows.Evidence{ConversationID: "cv_1"}, "conversation", "cv_1"},
		{"task", &noterows.Evidence{TaskID: "t_1"}, "task", "t_1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, id := noterows.EvidenceColumns(tc.ev)
			require.Equal(t, [2]string{tc.kind, tc.id}, [2]string{k, id})
			require.Equal(t, tc.ev, noterows.EvidenceOf(k, id))
		})
	}
	require.Nil(t, noterows.EvidenceOf("other", "x"), "an unknown kind reads as no evidence")
}

func TestTagsCodec(t *testing.T) {
	for _, tc := range []struct {
		in     []string
		stored string
	}{
		{nil, "[]"},
		{[]string{}, "[]"},
		{[]string{"a", "b.c"}, `["a","b.c"]`},
	} {
		s := noterows.EncodeTags(tc.in)
		require.Equal(t, tc.stored, s)
		want := tc.in
		if want == nil {
			want = []string{}
		}
		require.Equal(t, want, noterows.DecodeTags(s))
	}
	require.Equal(t, []string{}, noterows.DecodeTags("not json"), "a bad value reads as no tags")
}

func TestRateLimited(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	times := func(n int, oldest time.Duration) []time.Time {
		out := make([]time.Time, n)
		for i := range out {
			out[i] = now.Add(-oldest + time.Duration(i)*time.Second)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		times []time.Time
		retry time.Duration // 0: allowed
	}{
		{"under the limit", times(noterows.RateLimit-1, 10*time.Minute), 0},
		{"at the limit: until the oldest leaves the hour", times(noterows.RateLimit, 10*time.Minute), 50 * time.Minute},
		{"at least one second", times(noterows.RateLimit, noterows.RateWindow), time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := noterows.RateLimited(tc.times, now, "at most %d; retry after %d s")
			if tc.retry == 0 {
				require.NoError(t, err)
				return
			}
			fe := fault.As(err)
			require.NotNil(t, fe)
			require.Equal(t, noterows.CodeRateLimited, fe.Code)
			require.Equal(t, tc.retry, fe.RetryAfter)
		})
	}
}

func TestCapReached(t *testing.T) {
	require.NoError(t, noterows.CapReached(4, 5))
	fe := fault.As(noterows.CapReached(5, 5))
	require.NotNil(t, fe)
	require.Equal(t, fault.Conflict, fe.Kind)
	require.Equal(t, noterows.CodeCapReached, fe.Code)
}

func TestIdemHashAndRequestHash(t *testing.T) {
	require.Equal(t, "", noterows.IdemHash(keyed.Hasher{}, "sp_1", ""), "no key stays no key")
	a := noterows.HashRequest("create", map[string]string{"title": "x"})
	require.Equal(t, a, noterows.HashRequest("create", map[string]string{"title": "x"}))
	require.NotEqual(t, a, noterows.HashRequest("version:n1", map[string]string{"title": "x"}))
}
