package state

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestEncodeTimesIsEncodingJSON: encodeTimes writes the same bytes as encoding/json's
// encoding of the map of RFC 3339 times it replaced, for plain names and for names encoding/json
// escapes (quotes, backslashes, HTML characters, control characters, non-ASCII, invalid
// UTF-8), in any zone and precision, and for no field at all.
func TestEncodeTimesIsEncodingJSON(t *testing.T) {
	at := time.Date(2026, 12, 2, 9, 37, 44, 123456789, time.FixedZone("CET", 3600))
	names := []string{"count", "step", "a b", `q"uote`, `back\slash`, "<tag>", "a&b", "tab\t", "nul\x00",
		"é", "日本", "bad\xffutf8", "\u2028", "", "Count", "z", "0"}
	for n := 0; n <= len(names); n++ {
		times := map[string]time.Time{}
		want := map[string]string{}
		for i, name := range names[:n] {
			ti := at.Add(time.Duration(i) * 1500 * time.Millisecond)
			if i%3 == 0 {
				ti = ti.Truncate(time.Second)
			}
			times[name] = ti
			want[name] = ti.UTC().Format(time.RFC3339Nano)
		}
		b, err := json.Marshal(want)
		require.NoError(t, err)
		require.Equal(t, string(b), encodeTimes(times), "%d names", n)
	}
}
