package logs_test

import (
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/logs"
	"github.com/agentmemory/agentmemory/internal/logs/logstest"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func lines(t *testing.T, buf *logstest.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		out = append(out, m)
	}
	return out
}

// A model that stays down for an hour, retried every 5 seconds (720 failures), logs the first
// failure at ERROR, then one summary every 5 minutes with the count, then one line when it
// answers again: 1 + 11 + 1 lines, not 720 (issue 27). The clock is driven by the test.
func TestOutageLogsFirstThenSummariesThenRecovery(t *testing.T) {
	var buf logstest.Buffer
	c := &clock{t: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)}
	o := &logs.Outage{Log: slog.New(slog.NewJSONHandler(&buf, nil)), Name: "model server", Every: 5 * time.Minute, Now: c.now}
	o.Success() // up: nothing to say
	for i := range 720 {
		if i > 0 {
			c.add(5 * time.Second)
		}
		o.Failure("code", "model_unreachable")
	}
	c.add(5 * time.Second)
	o.Success()
	o.Success() // once
	got := lines(t, &buf)
	require.Len(t, got, 13, "%s", buf.String())
	require.Equal(t, "ERROR", got[0]["level"])
	require.Equal(t, "model server unreachable", got[0]["msg"])
	require.Equal(t, "model_unreachable", got[0]["code"])
	total := 1
	for _, l := range got[1:12] {
		require.Equal(t, "WARN", l["level"])
		require.Equal(t, "model server still unreachable", l["msg"])
		require.Equal(t, float64(60), l["failures"], "5 minutes of failures every 5 s")
		require.Equal(t, "5m0s", l["in"])
		total += int(l["failures"].(float64))
	}
	require.Equal(t, "55m0s", got[11]["down_for"])
	last := got[12]
	require.Equal(t, "INFO", last["level"])
	require.Equal(t, "model server reachable again", last["msg"])
	require.Equal(t, float64(720), last["failures"])
	require.Equal(t, "1h0m0s", last["down_for"])
	require.Equal(t, 661, total, "the summaries count every failure after the first up to the last summary")

	// The next failure starts a new outage: an ERROR line again.
	c.add(time.Minute)
	o.Failure()
	got = lines(t, &buf)
	require.Len(t, got, 14)
	require.Equal(t, "ERROR", got[13]["level"])

	var none *logs.Outage
	none.Failure()
	none.Success()
}

// Failures from many goroutines at once are counted exactly (run with -race).
func TestOutageConcurrentFailures(t *testing.T) {
	var buf logstest.Buffer
	c := &clock{t: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)}
	o := &logs.Outage{Log: slog.New(slog.NewJSONHandler(&buf, nil)), Name: "embedder", Every: time.Minute, Now: c.now}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				o.Failure()
			}
		})
	}
	wg.Wait()
	c.add(time.Minute)
	o.Success()
	got := lines(t, &buf)
	require.Len(t, got, 2, "%s", buf.String())
	require.Equal(t, float64(800), got[1]["failures"])
}
