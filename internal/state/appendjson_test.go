package state

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// encoded is what gin's PureJSON writes for v: a json.Encoder without HTML escaping.
func encoded(t *testing.T, v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(v))
	return b.String()
}

// TestAppendJSONIsPureJSON: the read and write answers written directly are the bytes
// encoding/json writes for them (PureJSON), for bodies with HTML characters, escapes and
// nesting, versions, times in any precision and none; a write result with a reason or fields
// is left to encoding/json.
func TestAppendJSONIsPureJSON(t *testing.T) {
	at := time.Date(2026, 12, 2, 9, 37, 44, 123456789, time.UTC)
	whole := at.Truncate(time.Second)
	for _, r := range []ReadResult{
		{Body: json.RawMessage("{}"), Version: 0},
		{Body: json.RawMessage(`{"a":"<b>&amp;\u2028","n":[1,{"x":null}],"z":-1.5e3}`), Version: 42, UpdatedAt: &at},
		{Body: json.RawMessage(`{"count":7,"step":"merge"}`), Version: 1 << 40, UpdatedAt: &whole},
	} {
		require.Equal(t, encoded(t, r), string(r.AppendJSON(nil)))
	}
	reason := "over_cap"
	for _, w := range []WriteResult{
		{Stored: true, Version: 3},
		{Stored: false, Version: 9, Bytes: 70000, MaxBytes: 65536},
		{Stored: true, Version: 1, Bytes: 12},
		{Stored: false, Reason: &reason, Fields: []string{"a<b"}},
		{Stored: false, Fields: []string{"x"}},
	} {
		b, ok := w.AppendJSON(nil)
		if w.Reason != nil || len(w.Fields) > 0 {
			require.False(t, ok)
			continue
		}
		require.True(t, ok)
		require.Equal(t, encoded(t, w), string(b))
	}
}
