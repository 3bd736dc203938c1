package spaces

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A retention is a positive count of days or hours up to 100 years; a larger one would
// overflow time.Duration into a negative age that hides everything.
func TestParseRetention(t *testing.T) {
	for in, want := range map[string]time.Duration{"30d": 30 * 24 * time.Hour, "12h": 12 * time.Hour, "36500d": 36500 * 24 * time.Hour} {
		got, err := ParseRetention(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "d", "0d", "-1d", "1w", "36501d", "876001h", "99999999999h", "9223372036854775807d"} {
		_, err := ParseRetention(in)
		require.Error(t, err, in)
	}
}
