package skips

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLine(t *testing.T) {
	cases := []struct {
		name, test, reason, want string
	}{
		{"plain", "TestX", "pgvector is missing", "TestX\tpgvector is missing\n"},
		{"sub test", "TestX/postgres", "no veth", "TestX/postgres\tno veth\n"},
		{"breaks and tabs flattened", "TestX", "ip netns add: exit 1\nOutput:\tdenied\n", "TestX\tip netns add: exit 1 Output: denied\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, Line(c.test, c.reason))
		})
	}
}

// TestCapabilityRecordsTheSkip: a capability skip lands in the log, one line per skip, and
// the test is skipped.
func TestCapabilityRecordsTheSkip(t *testing.T) {
	log := filepath.Join(t.TempDir(), "skips.log")
	t.Setenv(LogEnv, log)
	for _, name := range []string{"one", "two"} {
		t.Run(name, func(t *testing.T) {
			defer func() { require.True(t, t.Skipped(), "the test is skipped") }()
			Capability(t, "the %s tool is missing", name)
		})
	}
	data, err := os.ReadFile(log)
	require.NoError(t, err)
	require.Equal(t, "TestCapabilityRecordsTheSkip/one\tthe one tool is missing\nTestCapabilityRecordsTheSkip/two\tthe two tool is missing\n", string(data))
}
