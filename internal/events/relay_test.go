package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/events"
	"github.com/agentmemory/agentmemory/internal/events/eventstest"
	"github.com/agentmemory/agentmemory/models"
)

const topic = "agentmemory.events"

// partitions of the test topic: more than one, so keys really choose partitions.
const partitions = 3

// startBroker starts an in-process Kafka-protocol broker on port (0: any) with the topic
// seeded, and returns its address.
func startBroker(t *testing.T, port int) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.Ports(port), kfake.SeedTopics(partitions, topic))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

// freePort returns a TCP port nothing listens on (yet).
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

func newKafka(t *testing.T, addr string) *events.Kafka {
	t.Helper()
	k := events.NewKafka([]string{addr}, topic)
	t.Cleanup(func() { _ = k.Close() })
	return k
}

// waitDrained waits until no outbox row waits for Kafka (failing after a minute: a hang).
func waitDrained(t *testing.T, d *bun.DB) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		backlog, _, err := events.Backlog(context.Background(), d)
		require.NoError(t, err)
		if backlog == 0 {
			return
		}
		require.True(t, time.Now().Before(deadline), "backlog stuck at %d", backlog)
		time.Sleep(10 * time.Millisecond)
	}
}

func header(m kafka.Message, key string) string {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// enqueue commits one note_created event of space in its own transaction.
func enqueue(t *testing.T, d *bun.DB, space string) events.Event {
	t.Helper()
	var e events.Event
	err := d.RunInTx(context.Background(), nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		e, err = events.Enqueue(ctx, tx, events.Event{
			Type: events.TypeNoteCreated, SpaceID: space, NoteID: auth.NewID("note"),
			Kind: "procedure", Origin: "agent", SourceID: "key_src",
		}, time.Now())
		return err
	})
	require.NoError(t, err)
	return e
}

// byKey groups consumed event ids by message key, in consumption order.
func byKey(t *testing.T, msgs []kafka.Message) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, m := range msgs {
		out[string(m.Key)] = append(out[string(m.Key)], header(m, events.HeaderEventID))
	}
	return out
}

func ids(es []events.Event) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

func TestRelayPublishesEachCommittedEventOnce(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		addr := startBroker(t, 0)
		want := map[string][]events.Event{}
		for i := range 7 {
			space := []string{"spc_a", "spc_b"}[i%2]
			want[space] = append(want[space], enqueue(t, d, space))
		}
		// A rolled-back transaction leaves no event.
		var rolledBack events.Event
		err := d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			var err error
			rolledBack, err = events.Enqueue(ctx, tx, events.Event{Type: events.TypeNoteCreated, SpaceID: "spc_a", NoteID: "note_x"}, time.Now())
			require.NoError(t, err)
			return errors.New("refused")
		})
		require.Error(t, err)

		r := &events.Relay{DB: d, Publisher: newKafka(t, addr)}
		n, err := r.PublishPending(ctx)
		require.NoError(t, err)
		require.Equal(t, 7, n, "got %d published, want 7", n)
		n, err = r.PublishPending(ctx)
		require.NoError(t, err)
		require.Equal(t, 0, n, "a second pass publishes nothing")

		msgs := eventstest.Consume(t, addr, topic, partitions)
		require.Len(t, msgs, 7, "got %d messages, want exactly 7", len(msgs))
		allowed := map[string]bool{"id": true, "type": true, "space_id": true, "note_id": true, "proposal_id": true, "kind": true, "origin": true, "source_id": true, "occurred_at": true}
		for _, m := range msgs {
			var body map[string]any
			require.NoError(t, json.Unmarshal(m.Value, &body))
			for k := range body {
				require.True(t, allowed[k], "member %q in %s", k, m.Value)
			}
			require.Equal(t, string(m.Key), body["space_id"], "key is the space id")
			require.Equal(t, body["id"], header(m, events.HeaderEventID))
			require.Equal(t, events.TypeNoteCreated, header(m, events.HeaderEventType))
			require.NotEqual(t, rolledBack.ID, body["id"], "a rolled-back event was published")
		}
		got := byKey(t, msgs)
		require.Equal(t, ids(want["spc_a"]), got["spc_a"], "space a: got %v, want %v in order", got["spc_a"], ids(want["spc_a"]))
		require.Equal(t, ids(want["spc_b"]), got["spc_b"])

		backlog, oldest, err := events.Backlog(ctx, d)
		require.NoError(t, err)
		require.Zero(t, backlog)
		require.True(t, oldest.IsZero())
		items, err := events.List(ctx, d, "spc_a", 0, 100)
		require.NoError(t, err)
		require.Len(t, items, 4)
		for _, it := range items {
			require.Equal(t, "sent", it.Published.State)
			require.Equal(t, 1, it.Published.Attempts)
		}
	})
}

func TestRelayWaitsForBrokerThenDeliversInOrder(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		port := freePort(t)
		addr := "127.0.0.1:" + strconv.Itoa(port)
		r := &events.Relay{DB: d, Publisher: newKafka(t, addr), PublishTimeout: 5 * time.Second}

		var want []events.Event
		for range 3 {
			want = append(want, enqueue(t, d, "spc_a"))
		}
		n, err := r.PublishPending(ctx)
		require.Error(t, err, "the broker is down")
		require.Zero(t, n)
		backlog, oldest, err := events.Backlog(ctx, d)
		require.NoError(t, err)
		require.EqualValues(t, 3, backlog)
		require.False(t, oldest.IsZero())
		items, err := events.List(ctx, d, "spc_a", 0, 10)
		require.NoError(t, err)
		for _, it := range items {
			require.Equal(t, "pending", it.Published.State)
			require.Equal(t, 1, it.Published.Attempts)
			require.NotEmpty(t, it.Published.LastError)
		}

		startBroker(t, port)
		runCtx, stop := context.WithCancel(ctx)
		r.Poll, r.MaxBackoff = 20*time.Millisecond, 200*time.Millisecond
		done := make(chan struct{})
		go func() { _ = r.Run(runCtx); close(done) }()
		waitDrained(t, d)
		stop()
		<-done
		msgs := eventstest.Consume(t, addr, topic, partitions)
		require.Len(t, msgs, 3)
		require.Equal(t, ids(want), byKey(t, msgs)["spc_a"], "the 3 events arrive in order with their ids")
		for _, m := range msgs {
			var e events.Event
			require.NoError(t, json.Unmarshal(m.Value, &e))
			require.Equal(t, header(m, events.HeaderEventID), e.ID)
		}
	})
}

// TestTwoRelaysKeepOrderWithoutDuplicates runs two relays at once while events are written.
// At-least-once allows a duplicate only when a relay stops between publishing and marking
// (not the case here), so every event arrives exactly once and each space keeps its order.
func TestTwoRelaysKeepOrderWithoutDuplicates(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		addr := startBroker(t, 0)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for range 2 {
			r := &events.Relay{DB: d, Publisher: newKafka(t, addr), Poll: 5 * time.Millisecond, Batch: 7}
			wg.Go(func() { _ = r.Run(ctx) })
		}
		want := map[string][]string{}
		for i := range 45 {
			space := fmt.Sprintf("spc_%d", i%3)
			want[space] = append(want[space], enqueue(t, d, space).ID)
		}
		waitDrained(t, d)
		cancel()
		wg.Wait()

		msgs := eventstest.Consume(t, addr, topic, partitions)
		require.Len(t, msgs, 45, "got %d messages, want 45 (no duplicates)", len(msgs))
		require.Equal(t, want, byKey(t, msgs), "each space's events in order")
	})
}

// recorder is a Publisher that keeps what it was given and fails the messages named in fail
// (by event id), reporting a *PartialError like the Kafka publisher does.
type recorder struct {
	got  []events.Message
	fail map[string]bool
}

func (p *recorder) Publish(_ context.Context, msgs []events.Message) error {
	errs := make([]error, len(msgs))
	failed := false
	for i, m := range msgs {
		if p.fail[m.EventID] {
			errs[i], failed = errors.New("leader not available"), true
			continue
		}
		p.got = append(p.got, m)
	}
	if failed {
		return &events.PartialError{Errs: errs}
	}
	return nil
}

func TestRelayPartialFailureKeepsSpaceOrder(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		a1, a2, b1, a3 := enqueue(t, d, "spc_a"), enqueue(t, d, "spc_a"), enqueue(t, d, "spc_b"), enqueue(t, d, "spc_a")
		p := &recorder{fail: map[string]bool{a2.ID: true}}
		r := &events.Relay{DB: d, Publisher: p}
		n, err := r.PublishPending(ctx)
		var pe *events.PartialError
		require.ErrorAs(t, err, &pe)
		require.Equal(t, 2, n, "a1 and b1 are marked; a3 waits behind a2")
		items, err := events.List(ctx, d, "spc_a", 0, 10)
		require.NoError(t, err)
		require.Equal(t, []string{"sent", "pending", "pending"}, []string{items[0].Published.State, items[1].Published.State, items[2].Published.State})

		p.fail = nil
		n, err = r.PublishPending(ctx)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		var got []string
		for _, m := range p.got {
			got = append(got, m.EventID)
		}
		// a3 went out twice (at least once); its first copy came after a1 and before a2 only
		// because a2 failed inside the same batch: consumers dedupe by id.
		require.Equal(t, []string{a1.ID, b1.ID, a3.ID, a2.ID, a3.ID}, got)
	})
}

func TestPruneDeletesOnlyOldSentRows(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		sent := enqueue(t, d, "spc_a")
		r := &events.Relay{DB: d, Publisher: &recorder{}, Retention: time.Hour}
		_, err := r.PublishPending(ctx)
		require.NoError(t, err)
		pending := enqueue(t, d, "spc_a")

		n, err := r.Prune(ctx)
		require.NoError(t, err)
		require.Zero(t, n, "a sent row younger than the retention stays")

		later := &events.Relay{DB: d, Retention: time.Hour, Now: func() time.Time { return time.Now().Add(2 * time.Hour) }}
		n, err = later.Prune(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		var left []models.OutboxEvent
		require.NoError(t, d.NewSelect().Model(&left).Scan(ctx))
		require.Len(t, left, 1)
		require.Equal(t, pending.ID, left[0].ID, "the pending row stays; %s was pruned", sent.ID)
	})
}

func TestMetricsReportBacklogAndErrors(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		m := events.NewMetrics()
		reg := prometheus.NewPedanticRegistry()
		require.NoError(t, reg.Register(m))
		e1 := enqueue(t, d, "spc_a")
		enqueue(t, d, "spc_a")
		r := &events.Relay{DB: d, Publisher: &recorder{fail: map[string]bool{e1.ID: true}}, Metrics: m}
		_, err := r.PublishPending(ctx)
		require.Error(t, err)

		values := gather(t, reg)
		backlog, oldest, err := events.Backlog(ctx, d)
		require.NoError(t, err)
		require.Equal(t, int64(2), backlog, "e1 failed and e2 waits behind it")
		require.False(t, oldest.IsZero())
		require.Equal(t, 1.0, values["agentmemory_events_publish_errors_total"])
		require.Equal(t, 0.0, values["agentmemory_events_published_total"])
	})
}

func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch {
			case m.GetGauge() != nil:
				out[mf.GetName()] += m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				out[mf.GetName()] += m.GetCounter().GetValue()
			}
		}
	}
	return out
}
