package logs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/logs"
)

func TestJSONWithRequestID(t *testing.T) {
	var buf bytes.Buffer
	log := logs.New("json", "info", &buf)
	ctx := logs.WithRequestID(context.Background(), "req-1")
	log.InfoContext(ctx, "hello", "n", 1)
	log.InfoContext(ctx, "explicit", logs.RequestIDKey, "req-2")
	log.With("component", "api").InfoContext(context.Background(), "no request")
	log.DebugContext(ctx, "hidden at info")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 3, "got %q", buf.String())
	var recs []map[string]any
	for _, l := range lines {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), "line %q is not JSON", l)
		recs = append(recs, m)
	}
	require.Equal(t, "req-1", recs[0][logs.RequestIDKey])
	require.Equal(t, "req-2", recs[1][logs.RequestIDKey])
	require.Equal(t, 1, strings.Count(lines[1], logs.RequestIDKey), "request_id once: %s", lines[1])
	require.NotContains(t, recs[2], logs.RequestIDKey)
	require.Equal(t, "api", recs[2]["component"])
}

func TestTextAndLevel(t *testing.T) {
	var buf bytes.Buffer
	log := logs.New("text", "debug", &buf)
	log.DebugContext(logs.WithRequestID(context.Background(), "r9"), "shown")
	require.Contains(t, buf.String(), "msg=shown")
	require.Contains(t, buf.String(), "request_id=r9")
}
