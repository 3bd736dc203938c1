package compliance_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"gocloud.dev/blob/fileblob"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/app"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/compliance"
	"github.com/agentmemory/agentmemory/internal/feed"
	"github.com/agentmemory/agentmemory/internal/signing"
	"github.com/agentmemory/agentmemory/models"
	"github.com/agentmemory/agentmemory/workflows"
)

// sinkEnv is newEnv with export sinks: directory sinks under dir, Kafka sinks on brokers, a
// manifest signer, and the space's features naming sinks (agent state enabled). The sinks'
// workflows run on the test's task queue, polling every 100 ms.
func sinkEnv(t *testing.T, engine, dir string, brokers []string, sinks []map[string]any) *apptest.Env {
	t.Helper()
	if temporalClient == nil {
		t.Skip("integration test: needs the Temporal dev server (not in -short)")
	}
	tq := "sinks-" + auth.NewID("tq")
	e := apptest.New(t, engine, func(d *api.Deps) { d.Workflows = temporalClient; d.TaskQueue = tq })
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	e.App.Signer, err = signing.NewSigner(priv, time.Time{})
	require.NoError(t, err)
	e.App.Config.ExportDir, e.App.Config.KafkaBrokers = dir, brokers
	w := newWorker(t, e, app.WorkerOptions{TaskQueue: tq, NoReconcile: true})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	seedSpace(e)
	e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}, "export": map[string]any{"sinks": sinks}})
	for _, s := range sinks {
		name := s["name"].(string)
		id := workflows.SinkWorkflowID(e.SpaceID, name)
		_, err := temporalClient.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: tq},
			workflows.SinkWorkflow, workflows.SinkInput{SpaceID: e.SpaceID, Sink: name, Poll: 100 * time.Millisecond})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = temporalClient.TerminateWorkflow(context.Background(), id, "", "test over") // may have ended already
		})
	}
	return e
}

// eraseSubjectState writes one subject-scoped state for the subject and starts her erasure;
// it returns the state's id (its feed key) and the erasure's id.
func eraseSubjectState(t *testing.T, e *apptest.Env, email string) (stateID, erasureID string) {
	t.Helper()
	crm := e.AgentKey("crm-bot", "acme", auth.ScopeAgentState)
	comp := e.PersonKey("dpo", auth.RoleCompliance)
	e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", crm, map[string]any{
		"scope": map[string]any{"kind": "subject", "id": "email:" + email}, "body": map[string]any{"tier": "gold"},
	})
	require.NoError(t, e.DB.NewSelect().Model((*models.AgentState)(nil)).Column("id").Where("space_id = ?", e.SpaceID).
		Scan(context.Background(), &stateID))
	erasureID = e.MustDo(http.StatusAccepted, "POST", "/v1/erasures", comp, map[string]any{"subject": "email:" + email}).JSON(t)["erasure_id"].(string)
	return stateID, erasureID
}

// erasureView reads GET /v1/erasures/{id} as a compliance person.
func erasureView(t *testing.T, e *apptest.Env, id string) compliance.ErasureView {
	t.Helper()
	var v compliance.ErasureView
	comp := e.PersonKey("dpo2", auth.RoleCompliance)
	require.NoError(t, json.Unmarshal(e.MustDo(http.StatusOK, "GET", "/v1/erasures/"+id, comp, nil).Body, &v))
	return v
}

// waitStatus polls the erasure until it shows status (a minute at most).
func waitStatus(t *testing.T, e *apptest.Env, id, status string) compliance.ErasureView {
	t.Helper()
	var v compliance.ErasureView
	require.Eventually(t, func() bool { v = erasureView(t, e, id); return v.Status == status }, time.Minute, 100*time.Millisecond,
		"erasure %s never reached %s", id, status)
	return v
}

// TestErasureTombstonesReachEverySink: a subject erasure in a space with a directory sink and
// a Kafka sink (kfake over TCP) completes only once both delivered its tombstones; the
// certificate names both sinks with their acknowledged cursors, at or past the feed cursor
// of the erasure; the directory's signed manifest and the Kafka topic hold the erased
// state's delete (key only, a null value on Kafka).
func TestErasureTombstonesReachEverySink(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			c, err := kfake.NewCluster(kfake.SeedTopics(1, exportTopics()...))
			require.NoError(t, err)
			t.Cleanup(c.Close)
			addr := c.ListenAddrs()[0]
			dir := t.TempDir()
			e := sinkEnv(t, engine, dir, []string{addr}, []map[string]any{{"name": "lake", "kind": "directory"}, {"name": "stream", "kind": "kafka"}})
			stateID, id := eraseSubjectState(t, e, "ana@example.com")
			waitWorkflow(t, workflows.ErasureWorkflowID(id))
			v := erasureView(t, e, id)
			require.Equal(t, compliance.StatusCompleted, v.Status)
			cert := v.Certificate
			require.NotNil(t, cert)
			require.NotNil(t, cert.FeedCursor)
			require.Len(t, cert.Sinks, 2)
			names := map[string]string{}
			for _, s := range cert.Sinks {
				names[s.Name] = s.Kind
				require.GreaterOrEqual(t, s.Cursor, *cert.FeedCursor, "sink %s acknowledged the tombstones", s.Name)
			}
			require.Equal(t, map[string]string{"lake": feed.KindDirectory, "stream": feed.KindKafka}, names)

			// The directory sink: the manifest (signature verified) lists the state's delete.
			b, err := fileblob.OpenBucket(filepath.Join(dir, e.SpaceID, "lake"), nil)
			require.NoError(t, err)
			t.Cleanup(func() { _ = b.Close() }) // read only
			m, err := feed.ReadManifest(context.Background(), b, e.App.Signer.Keys())
			require.NoError(t, err)
			recs, err := feed.VerifyParts(context.Background(), b, m)
			require.NoError(t, err)
			require.Equal(t, feed.OpDelete, lastOp(recs, "agent_states", stateID), "the directory sink got the tombstone")
			for _, r := range recs {
				if r.Key == stateID && r.Op == feed.OpDelete {
					require.Nil(t, r.Row, "a tombstone carries the key only")
				}
			}

			// The Kafka sink: the last message of the state's key is its tombstone (null value).
			var last *kafka.Message
			for _, msg := range consumeTopic(t, addr, "agentmemory.export.agent_states") {
				if string(msg.Key) == e.SpaceID+"/"+stateID {
					last = &msg
				}
			}
			require.NotNil(t, last, "the Kafka sink got the state's records")
			require.Equal(t, feed.OpDelete, kafkaHeader(*last, feed.HeaderOp))
			require.Nil(t, last.Value, "a tombstone: key only")
		})
	}
}

// TestErasureHeldAtPendingSinks: a sink that cannot be reached (its directory is blocked by a
// file) holds the erasure at pending_sinks, without a certificate; once the sink is reachable
// again it catches up and the erasure completes, naming it.
func TestErasureHeldAtPendingSinks(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			dir := t.TempDir()
			e := sinkEnv(t, engine, dir, nil, []map[string]any{{"name": "lake", "kind": "directory"}})
			blocker := filepath.Join(dir, e.SpaceID)
			require.NoError(t, os.WriteFile(blocker, []byte("not a directory"), 0o600))
			_, id := eraseSubjectState(t, e, "bruno@example.com")
			v := waitStatus(t, e, id, compliance.StatusPendingSinks)
			require.Nil(t, v.Certificate, "no certificate while a sink has not delivered")
			var row models.ExportSink
			require.NoError(t, e.DB.NewSelect().Model(&row).Where("space_id = ? AND name = 'lake'", e.SpaceID).Scan(context.Background()))
			require.NotEmpty(t, row.LastError, "the sink's failure shows")

			require.NoError(t, os.Remove(blocker))
			waitWorkflow(t, workflows.ErasureWorkflowID(id))
			v = erasureView(t, e, id)
			require.Equal(t, compliance.StatusCompleted, v.Status)
			require.Len(t, v.Certificate.Sinks, 1)
			require.Equal(t, "lake", v.Certificate.Sinks[0].Name)
			require.GreaterOrEqual(t, v.Certificate.Sinks[0].Cursor, *v.Certificate.FeedCursor)
		})
	}
}

// exportTopics are the Kafka sink's topics of every feed table (default prefix).
func exportTopics() []string {
	var out []string
	for _, n := range feed.TableNames() {
		out = append(out, "agentmemory.export."+n)
	}
	return out
}

// lastOp is the op of the last record of table's key in recs ("" when none).
func lastOp(recs []feed.Record, table, key string) string {
	op := ""
	for _, r := range recs {
		if r.Table == table && r.Key == key {
			op = r.Op
		}
	}
	return op
}

// consumeTopic reads every message of partition 0 of topic, from the start.
func consumeTopic(t *testing.T, addr, topic string) []kafka.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := kafka.DialLeader(ctx, "tcp", addr, topic, 0)
	require.NoError(t, err)
	last, err := conn.ReadLastOffset()
	require.NoError(t, err)
	require.NoError(t, conn.Close())
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, Topic: topic, Partition: 0, MaxWait: 50 * time.Millisecond})
	defer func() { _ = r.Close() }() // a reader: nothing to flush
	var out []kafka.Message
	for i := int64(0); i < last; i++ {
		m, err := r.ReadMessage(ctx)
		require.NoError(t, err)
		out = append(out, m)
	}
	return out
}

func kafkaHeader(m kafka.Message, key string) string {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// TestSinkWorkflowEndsWhenItsSinkIsRemoved: a directory sink's workflow delivers what is
// written (its acknowledged cursor reaches the feed's head, the manifest lists the records),
// sleeps when nothing is new, and completes once the sink leaves features export.sinks.
// Re-record the replay fixture with AGENTMEMORY_RECORD_SINK=sink_removed.json go test
// ./internal/compliance -run TestSinkWorkflowEndsWhenItsSinkIsRemoved/sqlite.
func TestSinkWorkflowEndsWhenItsSinkIsRemoved(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			e := sinkEnv(t, engine, dir, nil, []map[string]any{{"name": "lake", "kind": "directory"}})
			crm := e.AgentKey("crm-bot", "acme", auth.ScopeAgentState)
			e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", crm, map[string]any{
				"scope": map[string]any{"kind": "subject", "id": "email:carla@example.com"}, "body": map[string]any{"tier": "gold"},
			})
			require.NoError(t, feed.AdvanceAll(ctx, e.DB, e.SpaceID))
			head, _, err := feed.Head(ctx, e.DB, e.SpaceID)
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				c, err := feed.SinkCursor(ctx, e.DB, e.SpaceID, "lake")
				return err == nil && c >= head
			}, time.Minute, 50*time.Millisecond, "the sink acknowledged the feed's head %d", head)
			b, err := fileblob.OpenBucket(filepath.Join(dir, e.SpaceID, "lake"), nil)
			require.NoError(t, err)
			t.Cleanup(func() { _ = b.Close() }) // read only
			m, err := feed.ReadManifest(ctx, b, e.App.Signer.Keys())
			require.NoError(t, err)
			recs, err := feed.VerifyParts(ctx, b, m)
			require.NoError(t, err)
			require.GreaterOrEqual(t, int64(len(recs)), head, "every record up to the head is in the parts")
			id := workflows.SinkWorkflowID(e.SpaceID, "lake")
			slept := timersFired(t, id)
			require.Eventually(t, func() bool { return timersFired(t, id) >= slept+2 }, time.Minute, 50*time.Millisecond,
				"with nothing new the workflow sleeps its poll (a few empty rounds)")

			e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}})
			wctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			require.NoError(t, temporalClient.GetWorkflow(wctx, id, "").Get(wctx, nil), "the workflow completes once its sink is removed")
			if name := os.Getenv("AGENTMEMORY_RECORD_SINK"); name != "" && engine == "sqlite" {
				recordHistory(t, id, filepath.Join("..", "..", "workflows", "testdata", name))
			}
		})
	}
}

// timersFired counts the TimerFired events in the history of workflow id's current run (its
// empty rounds' poll sleeps): the test waits on the workflow's own progress, not a clock.
func timersFired(t *testing.T, id string) int {
	t.Helper()
	it := temporalClient.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	n := 0
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		if ev.GetEventType() == enumspb.EVENT_TYPE_TIMER_FIRED {
			n++
		}
	}
	return n
}
