package spaces

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/fault"
)

// TestParseBridges: a bridges document is refused naming the member of its first fault, and
// a valid one comes back in canonical form (agents and boards sorted, without repeats), so
// two sides listing the same terms in another order hold the same bridge.
func TestParseBridges(t *testing.T) {
	bad := []struct {
		name, doc, member string
	}{
		{"unknown member", `{"bridges":[{"id":"br_1","from":"sp_a","to":"sp_b","agents":["x"],"boards":[{"type":"findings"}],"write":true}]}`, ""},
		{"bad id", `{"bridges":[{"id":"bg_1","from":"sp_a","to":"sp_b","agents":["x"],"boards":[{"type":"findings"}]}]}`, "bridges[0].id"},
		{"repeated id", `{"bridges":[{"id":"br_1","from":"sp_a","to":"sp_b","agents":["x"],"boards":[{"type":"findings"}]},{"id":"br_1","from":"sp_a","to":"sp_c","agents":["x"],"boards":[{"type":"findings"}]}]}`, "bridges[1].id"},
		{"from not a space", `{"bridges":[{"id":"br_1","from":"a","to":"sp_b","agents":["x"],"boards":[{"type":"findings"}]}]}`, "bridges[0].from"},
		{"to is from", `{"bridges":[{"id":"br_1","from":"sp_a","to":"sp_a","agents":["x"],"boards":[{"type":"findings"}]}]}`, "bridges[0].to"},
		{"no agents", `{"bridges":[{"id":"br_1","from":"sp_a","to":"sp_b","agents":[],"boards":[{"type":"findings"}]}]}`, "bridges[0].agents"},
		{"bad agent", `{"bridges":[{"id":"br_1","from":"sp_a","to":"sp_b","agents":["a b"],"boards":[{"type":"findings"}]}]}`, "bridges[0].agents[0]"},
		{"no boards", `{"bridges":[{"id":"br_1","from":"sp_a","to":"sp_b","agents":["x"],"boards":[]}]}`, "bridges[0].boards"},
		{"no boards nor bases", `{"bridges":[{"id":"br_1","from":"sp_a","to":"sp_b","agents":["x"],"knowledge_bases":[]}]}`, "bridges[0].boards"},
		{"bad base name", `{"bridges":[{"id":"br_1","from":"sp_a","to":"sp_b","agents":["x"],"knowledge_bases":["Handbook"]}]}`, "bridges[0].knowledge_bases[0]"},
		{"too many bases", `{"bridges":[{"id":"br_1","from":"sp_a","to":"sp_b","agents":["x"],"knowledge_bases":["a","b","c","d","e","f","g","h","i","j","k"]}]}`, "bridges[0].knowledge_bases"},
		{"bad type", `{"bridges":[{"id":"br_1","from":"sp_a","to":"sp_b","agents":["x"],"boards":[{"type":"Findings"}]}]}`, "bridges[0].boards[0].type"},
		{"bad pattern", `{"bridges":[{"id":"br_1","from":"sp_a","to":"sp_b","agents":["x"],"boards":[{"type":"findings","ids":"["}]}]}`, "bridges[0].boards[0].ids"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseBridges([]byte(tc.doc))
			fe := fault.As(err)
			require.NotNil(t, fe, "got %v, want a fault", err)
			require.Equal(t, fault.Invalid, fe.Kind, "got %v, want invalid", fe.Kind)
			if tc.member != "" {
				require.Equal(t, tc.member, fe.Details["member"], "got member %v, want %s", fe.Details["member"], tc.member)
			}
		})
	}

	one, err := ParseBridges([]byte(`{"bridges":[{"id":"br_1","from":"sp_a","to":"sp_b","agents":["zed","amy","zed"],"boards":[{"type":"notes"},{"type":"findings","ids":"inc-*"}]}]}`))
	require.NoError(t, err)
	other, err := ParseBridges([]byte(`{"bridges":[{"id":"br_1","from":"sp_a","to":"sp_b","agents":["amy","zed"],"boards":[{"type":"findings","ids":"inc-*"},{"type":"notes"}]}]}`))
	require.NoError(t, err)
	require.Equal(t, []string{"amy", "zed"}, one.Bridges[0].Agents)
	require.True(t, one.Bridges[0].SameTerms(other.Bridges[0]), "got %+v and %+v, want the same terms", one.Bridges[0], other.Bridges[0])
	b := one.Bridges[0]
	require.True(t, b.Allows("findings", "inc-7", "amy"))
	require.True(t, b.Allows("notes", "anything", "zed"))
	require.False(t, b.Allows("findings", "audit-1", "amy"), "an id the pattern does not match")
	require.False(t, b.Allows("findings", "inc-7", "bob"), "an agent it does not name")
	require.False(t, b.Allows("audit", "inc-7", "amy"), "a type it does not list")
	require.Error(t, checkBridgesOf(one, "sp_c"), "a space that is neither side")
	require.NoError(t, checkBridgesOf(one, "sp_b"))
	require.Equal(t, []string{}, b.KnowledgeBases, "an absent list is empty in canonical form")
	require.False(t, b.AllowsBase("handbook", "amy"), "a bridge of boards only lets no base cross")

	// Knowledge bases (by name) alone, in any order and with repeats: the same terms.
	kb1, err := ParseBridges([]byte(`{"bridges":[{"id":"br_2","from":"sp_a","to":"sp_b","agents":["amy"],"knowledge_bases":["runbooks","handbook","runbooks"]}]}`))
	require.NoError(t, err)
	kb2, err := ParseBridges([]byte(`{"bridges":[{"id":"br_2","from":"sp_a","to":"sp_b","agents":["amy"],"boards":[],"knowledge_bases":["handbook","runbooks"]}]}`))
	require.NoError(t, err)
	k := kb1.Bridges[0]
	require.Equal(t, []string{"handbook", "runbooks"}, k.KnowledgeBases)
	require.True(t, k.SameTerms(kb2.Bridges[0]), "got %+v and %+v, want the same terms", k, kb2.Bridges[0])
	require.True(t, k.AllowsBase("handbook", "amy"))
	require.False(t, k.AllowsBase("handbook", "zed"), "an agent it does not name")
	require.False(t, k.AllowsBase("secrets", "amy"), "a base it does not list")
	require.False(t, k.Allows("findings", "inc-7", "amy"), "a bridge of bases only lets no board cross")
	require.False(t, k.SameTerms(one.Bridges[0]))
}
