package spaces_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/spaces"
)

// TestParseFeaturesQuotas (issue 34 §1): features.quotas takes each limit from 1 to
// spaces.MaxQuota and per-kind limits only for scope kinds; retention.notes takes a retention
// such as 180d. Anything else is fault.Invalid naming the member.
func TestParseFeaturesQuotas(t *testing.T) {
	f, err := spaces.ParseFeatures([]byte(`{"quotas": {"states_per_space": 5, "states_per_scope_kind": {"subject": 2}, "turns_per_conversation": 9}, "retention": {"notes": "180d"}}`))
	require.NoError(t, err)
	require.Equal(t, int64(5), f.Quotas.StatesPerSpace)
	require.Equal(t, int64(2), f.Quotas.StatesPerScopeKind["subject"])
	require.Equal(t, int64(9), f.Quotas.TurnsPerConversation)
	require.Equal(t, 180*24, int(f.NotesRetention().Hours()))

	for _, tc := range []struct {
		name, doc, member string
	}{
		{"negative", `{"quotas": {"turns_per_space": -1}}`, "quotas.turns_per_space"},
		{"too large", `{"quotas": {"chunks_per_base": 2000000000000}}`, "quotas.chunks_per_base"},
		{"unknown kind", `{"quotas": {"states_per_scope_kind": {"board": 3}}}`, "quotas.states_per_scope_kind"},
		{"zero per kind", `{"quotas": {"states_per_scope_kind": {"task": 0}}}`, "quotas.states_per_scope_kind.task"},
		{"bad retention", `{"retention": {"notes": "soon"}}`, "retention.notes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := spaces.ParseFeatures([]byte(tc.doc))
			fe := fault.As(err)
			require.NotNil(t, fe, "got %v, want fault.Invalid", err)
			require.Equal(t, fault.Invalid, fe.Kind)
			require.Equal(t, tc.member, fe.Details["member"])
		})
	}
	_, err = spaces.ParseFeatures([]byte(`{"quotas": {"states_per_spac": 1}}`))
	require.Error(t, err, "an unknown member of quotas is refused")
}
