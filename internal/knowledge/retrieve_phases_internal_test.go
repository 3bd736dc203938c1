package knowledge

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/fault"
)

// The fusion phase of retrieve: reciprocal rank fusion of the two rankings, ties by id, cut
// to top_k, with each chunk's rank in each ranking.
func TestFuse(t *testing.T) {
	rrf := func(ranks ...int) float64 {
		s := 0.0
		for _, r := range ranks {
			s += 1.0 / float64(RRFK+r)
		}
		return s
	}
	for _, tc := range []struct {
		name     string
		vec, lex []string
		topK     int
		ranked   []string
		score    map[string]float64
	}{
		{"nothing", nil, nil, 5, []string{}, map[string]float64{}},
		{"vector only", []string{"b", "a"}, nil, 5, []string{"b", "a"}, map[string]float64{"b": rrf(1), "a": rrf(2)}},
		{"both rankings add up", []string{"a", "b"}, []string{"b", "c"}, 5, []string{"b", "a", "c"},
			map[string]float64{"a": rrf(1), "b": rrf(2, 1), "c": rrf(2)}},
		{"ties by id", []string{"z"}, []string{"y"}, 5, []string{"y", "z"}, map[string]float64{"y": rrf(1), "z": rrf(1)}},
		{"cut to top_k", []string{"a", "b", "c"}, nil, 2, []string{"a", "b"}, map[string]float64{"a": rrf(1), "b": rrf(2), "c": rrf(3)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fuse(tc.vec, tc.lex, tc.topK)
			require.Equal(t, tc.ranked, f.ranked)
			require.InDeltaMapValues(t, tc.score, f.score, 1e-12)
			for i, id := range tc.vec {
				require.Equal(t, i+1, f.vrank[id])
			}
			for i, id := range tc.lex {
				require.Equal(t, i+1, f.lrank[id])
			}
		})
	}
}

// The plan phase's checks of the request, before and after the first base's defaults.
func TestRetrievalRequestChecks(t *testing.T) {
	ok := RetrieveRequest{Query: "refunds", KBs: []string{"kb_1"}}
	for _, tc := range []struct {
		name   string
		edit   func(r *RetrieveRequest)
		member string // "" for valid
	}{
		{"valid", func(*RetrieveRequest) {}, ""},
		{"blank query", func(r *RetrieveRequest) { r.Query = "  " }, "query"},
		{"long query", func(r *RetrieveRequest) { r.Query = strings.Repeat("a", MaxQueryRunes+1) }, "query"},
		{"no base", func(r *RetrieveRequest) { r.KBs = nil }, "kbs"},
		{"too many bases", func(r *RetrieveRequest) { r.KBs = make([]string, MaxBasesPerQuery+1) }, "kbs"},
		{"min_score above 1", func(r *RetrieveRequest) { r.MinScore = 1.5 }, "min_score"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ok
			tc.edit(&r)
			checkMember(t, validateRetrieval(r), tc.member)
		})
	}
	first := Settings{TopK: 4, MaxTokens: MinContextTokens}
	r, err := withDefaults(ok, first)
	require.NoError(t, err)
	require.Equal(t, [2]int{4, MinContextTokens}, [2]int{r.TopK, r.MaxTokens}, "left out: the first base's settings")
	_, err = withDefaults(RetrieveRequest{TopK: MaxTopK + 1}, first)
	checkMember(t, err, "top_k")
	_, err = withDefaults(RetrieveRequest{MaxTokens: MaxContextTokens + 1}, first)
	checkMember(t, err, "max_tokens")
}

func checkMember(t *testing.T, err error, member string) {
	t.Helper()
	if member == "" {
		require.NoError(t, err)
		return
	}
	fe := fault.As(err)
	require.NotNil(t, fe, "want an error naming %s", member)
	require.Equal(t, fault.Invalid, fe.Kind)
	require.Equal(t, member, fe.Details["member"])
}
