package metrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/events"
	"github.com/agentmemory/agentmemory/internal/metrics"
	"github.com/agentmemory/agentmemory/models"
)

func TestRecordsByBoundedLabels(t *testing.T) {
	m := metrics.New()
	m.HTTPRequest("PUT", "/v1/agent-state", 200, 3*time.Millisecond)
	m.HTTPRequest("PUT", "/v1/agent-state", 200, 5*time.Millisecond)
	m.HTTPRequest("BREW", "", 404, time.Millisecond)
	m.StateWrite(metrics.StateStored)
	m.StateWrite(metrics.StateOverCap)
	m.StateWrite("made_up")
	m.NoteRefused([]string{"email", "phone", "email"})
	m.NoteRefused([]string{"ana@example.com"})
	m.WorkflowStarted("Distill")
	m.WorkflowFailed("Distill")

	require.Equal(t, 2.0, testutil.ToFloat64(m.HTTPCounter("PUT", "/v1/agent-state", "200")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.HTTPCounter("other", "unmatched", "404")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.StateWriteCounter(metrics.StateStored)))
	require.Equal(t, 1.0, testutil.ToFloat64(m.StateWriteCounter(metrics.StateOverCap)))
	require.Equal(t, 0.0, testutil.ToFloat64(m.StateWriteCounter(metrics.StateConflict)))
	require.Equal(t, 1.0, testutil.ToFloat64(m.NoteRefusedCounter("email")), "a kind counts once per note")
	require.Equal(t, 1.0, testutil.ToFloat64(m.NoteRefusedCounter("phone")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.NoteRefusedCounter("other")), "a value-shaped kind must not become a label")

	n, err := testutil.GatherAndCount(m.Registry(), metrics.NameStateWrites)
	require.NoError(t, err)
	require.Equal(t, 4, n, "state write results pre-declared: got %d series, want 4", n)
	n, err = testutil.GatherAndCount(m.Registry(), metrics.NameWorkflowStarts, metrics.NameWorkflowFailures)
	require.NoError(t, err)
	require.Equal(t, 2, n)
}

func TestNilMetricsRecordNothing(t *testing.T) {
	var m *metrics.Metrics
	m.HTTPRequest("GET", "/healthz", 200, time.Millisecond)
	m.StateWrite(metrics.StateStored)
	m.NoteRefused([]string{"email"})
	m.WorkflowStarted("Distill")
	m.WorkflowFailed("Distill")
	m.WatchOutbox(nil)
	require.Nil(t, m)
}

func TestKindLabelsAreCapped(t *testing.T) {
	m := metrics.New()
	for i := range 40 {
		m.NoteRefused([]string{"kind_" + string(rune('a'+i%26)) + string(rune('a'+i/26))})
	}
	n, err := testutil.GatherAndCount(m.Registry(), metrics.NameNotesRefused)
	require.NoError(t, err)
	require.Equal(t, 33, n, "32 kinds (4 pre-declared) and other: got %d series", n)
}

func TestOutboxBacklog(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		m := metrics.New()
		m.WatchOutbox(metrics.OutboxBacklog(d))
		require.Equal(t, 0.0, gauge(t, m, metrics.NameOutboxPending))
		require.Equal(t, 0.0, gauge(t, m, metrics.NameOutboxOldestAge))

		now := time.Now()
		for i, at := range []time.Time{now.Add(-time.Hour), now.Add(-2 * time.Minute), now.Add(-time.Minute)} {
			_, err := events.Enqueue(ctx, d, events.Event{Type: events.TypeNoteCreated, SpaceID: "sp_test", NoteID: "n" + string(rune('0'+i))}, at)
			require.NoError(t, err)
		}
		sent := now
		_, err := d.NewUpdate().Model((*models.OutboxEvent)(nil)).Set("sent_at = ?", sent).Where("seq = (SELECT min(seq) FROM outbox)").Exec(ctx)
		require.NoError(t, err)

		require.Equal(t, 2.0, gauge(t, m, metrics.NameOutboxPending))
		age := gauge(t, m, metrics.NameOutboxOldestAge)
		require.True(t, age >= 120 && age < 3600, "oldest pending age: got %.0fs, want about 120s (the delivered hour-old event excluded)", age)
	})
}

func gauge(t *testing.T, m *metrics.Metrics, name string) float64 {
	t.Helper()
	mfs, err := m.Registry().Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("metric %s not gathered", name)
	return 0
}
