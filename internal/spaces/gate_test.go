package spaces

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/fault"
)

// GATE-2, GATE-3: agent_memory.gate parses, defaults to refuse, and names a bad member.
func TestFeaturesGate(t *testing.T) {
	ok := []struct {
		name, doc         string
		names, instructns bool
	}{
		{"absent: refuse", `{"agent_memory": {"enabled": true}}`, false, false},
		{"empty object: refuse", `{"agent_memory": {"gate": {}}}`, false, false},
		{"names review", `{"agent_memory": {"gate": {"names": "review"}}}`, true, false},
		{"instructions review", `{"agent_memory": {"gate": {"names": "refuse", "instructions": "review"}}}`, false, true},
	}
	for _, tc := range ok {
		f, err := ParseFeatures([]byte(tc.doc))
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.names, f.GateReview(GateKindName), "%s: names", tc.name)
		require.Equal(t, tc.instructns, f.GateReview(GateKindInstruction), "%s: instructions", tc.name)
		require.False(t, f.GateReview("email"), "%s: other kinds are never reviewable", tc.name)
	}
	bad := []struct{ name, doc, member string }{
		{"unknown names value", `{"agent_memory": {"gate": {"names": "allow"}}}`, "agent_memory.gate.names"},
		{"unknown instructions value", `{"agent_memory": {"gate": {"instructions": "Review"}}}`, "agent_memory.gate.instructions"},
	}
	for _, tc := range bad {
		_, err := ParseFeatures([]byte(tc.doc))
		fe := fault.As(err)
		require.NotNil(t, fe, "%s: got %v, want a fault", tc.name, err)
		require.Equal(t, fault.Invalid, fe.Kind, tc.name)
		require.Equal(t, tc.member, fe.Details["member"], tc.name)
	}
	for _, doc := range []string{`{"agent_memory": {"gate": {"people": "review"}}}`, `{"agent_memory": {"gate": {"names": true}}}`} {
		_, err := ParseFeatures([]byte(doc))
		require.Error(t, err, doc)
	}
}
