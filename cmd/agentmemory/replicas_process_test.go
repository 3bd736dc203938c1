package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.temporal.io/sdk/client"

	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/events"
	"github.com/agentmemory/agentmemory/internal/events/eventstest"
	"github.com/agentmemory/agentmemory/internal/llm/llmtest"
	"github.com/agentmemory/agentmemory/models"
	"github.com/agentmemory/agentmemory/sdk"
	"github.com/agentmemory/agentmemory/workflows"
)

// replicaTopic is the Kafka topic of the replica test, seeded with replicaPartitions
// partitions on the in-process broker (more than one, so the space key really picks one).
const (
	replicaTopic      = "agentmemory.events"
	replicaPartitions = 3
)

// Issue 16, "correct with several replicas": the real binary, as production runs it. ONE
// Temporal dev server, ONE Kafka-protocol broker (kfake, in this test binary, over TCP), ONE
// PostgreSQL database (a fresh schema) and a shared PostgreSQL key store, with TWO
// `agentmemory serve` (A and B) and TWO `agentmemory worker` processes, all configured only
// through their environment. It shows, in order:
//
//   - read-your-writes across replicas through the Go SDK: a write acknowledged by A at version
//     N is read at N from B by a client that never saw it (WM-10);
//   - a key revoked on A is refused (401) on B at its very next request; a features change and
//     an object-types change made on A are in force on B at its next request;
//   - a customer's profile created on A is a known subject for B's notes gate at B's next
//     request (a note naming them is refused 422);
//   - an erasure started on A leaves nothing of the subject on B: B served the subject's
//     state and profile before, and serves neither after; an agent-note erasure started on A
//     changes B's prompt block at once (a 200 without the notes, not a 304 of the old block);
//   - issue 29 §2: a working state deleted or erased through B, a note hard-deleted through B
//     and a knowledge document deleted through B are gone from A's very next answer, although
//     A had just served them (forgetOnB);
//   - one retention schedule exists in Temporal although two workers started at once;
//   - 32 writers spread over A and B, B killed with SIGKILL mid-run (then restarted): every
//     acknowledged working-memory write reads back (each write is its own state, so each
//     acknowledged write is checked, at version 1 with its body); every acknowledged note is
//     there, and its receipt (note.create naming the note id) is in the chain; the chain
//     verifies (GET /v1/receipts/verify: ok). Working-memory writes leave no receipt by
//     design (receipts record note, key, document and compliance actions), so for them the
//     check is the read-back alone;
//   - every outbox event reaches Kafka exactly once (no event id twice, none missing, no
//     message that is not an outbox event) and, per space, in outbox position order, with two
//     relays (one per worker) running all along.
//
// Run it alone with `go test -count=1 -run TestReplicasAsProcesses ./cmd/agentmemory/` (it
// needs PostgreSQL and ./bin/temporal; skipped under -short).
func TestReplicasAsProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary, starts a Temporal dev server and four processes on PostgreSQL")
	}
	ctx := context.Background()
	srv := devServer(t)
	tc := srv.Client()
	bin := buildBinary(t)

	ports, err := freePorts(5)
	require.NoError(t, err)
	broker, err := kfake.NewCluster(kfake.Ports(ports[0]), kfake.SeedTopics(replicaPartitions, replicaTopic))
	require.NoError(t, err)
	t.Cleanup(broker.Close)
	brokerAddr := broker.ListenAddrs()[0]

	mainURL := dbtest.URL(t, "postgres")
	embedder := llmtest.NewEmbed(t) // knowledge's embedding model (Ollama's /api/embed)
	env := append(shippedEnviron(),
		"OLLAMA_HOST="+embedder.URL,
		"DATABASE_URL="+mainURL,
		"AGENTMEMORY_SECRET=replica-process-secret-0123456789abcdef",
		"AGENTMEMORY_KEYSTORE_URL="+dbtest.URL(t, "postgres"),
		"AGENTMEMORY_KEK="+randomBase64(t),
		"AGENTMEMORY_SIGNING_KEY="+randomBase64(t), // a 32-byte Ed25519 seed
		"TEMPORAL_ADDRESS="+srv.FrontendHostPort(),
		"AGENTMEMORY_TASK_QUEUE=replicas-process",
		"KAFKA_BROKERS="+brokerAddr,
		"KAFKA_TOPIC="+replicaTopic,
		// Four processes share one PostgreSQL with other tests: a small pool each.
		"AGENTMEMORY_DB_MAX_OPEN_CONNS=8",
		"AGENTMEMORY_SHUTDOWN_TIMEOUT=10s",
		"AGENTMEMORY_LOG_FORMAT=json",
	)
	with := func(extra ...string) []string {
		return append(append(slices.Clip(env), "AGENTMEMORY_DATA_DIR="+t.TempDir()), extra...)
	}

	var out bytes.Buffer
	create := exec.Command(bin, "space", "create", "replicas", "--direct-put")
	create.Env, create.Stdout, create.Stderr = with(), &out, &out
	require.NoError(t, create.Run(), "space create: %s", out.String())
	var space struct {
		SpaceID  string `json:"space_id"`
		AdminKey string `json:"admin_key"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &space), "space create printed %q", out.String())
	admin := space.AdminKey

	// Two workers started at the same moment (each ensures the retention schedule and runs a
	// relay), then the two API replicas.
	workers := make([]*proc, 2)
	for i := range workers {
		workers[i] = start(t, bin, with(fmt.Sprintf("AGENTMEMORY_METRICS_ADDR=127.0.0.1:%d", ports[3+i])), "worker")
	}
	for i, w := range workers {
		waitHealthy(t, w, fmt.Sprintf("http://127.0.0.1:%d/healthz", ports[3+i]))
	}
	addrA, addrB := fmt.Sprintf("127.0.0.1:%d", ports[1]), fmt.Sprintf("127.0.0.1:%d", ports[2])
	envB := with("AGENTMEMORY_ADDR=" + addrB)
	serveA := start(t, bin, with("AGENTMEMORY_ADDR="+addrA), "serve")
	serveB := start(t, bin, envB, "serve")
	baseA, baseB := "http://"+addrA, "http://"+addrB
	waitHealthy(t, serveA, baseA+"/healthz")
	waitHealthy(t, serveB, baseB+"/healthz")
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	a := client2{t: t, base: baseA, http: hc}
	b := client2{t: t, base: baseB, http: hc}
	ready := b.must(http.StatusOK, "GET", "/readyz", "", nil)
	require.Equal(t, map[string]any{"database": "ok", "keystore": "ok", "temporal": "ok", "kafka": "ok"}, ready["checks"])

	features := func(stateOn bool) map[string]any {
		return map[string]any{
			"agent_state": map[string]any{"enabled": stateOn},
			// cache_seconds 0: the SDK revalidates every block read (CTX-4), so each read below
			// reaches a replica and shows what that replica serves.
			"agent_memory": map[string]any{"enabled": true, "writes": "agents", "max_notes_per_source": 500, "cache_seconds": 0},
		}
	}
	objectTypes := func(fields ...string) map[string]any {
		declared := map[string]any{
			"step": map[string]any{"type": "string"},
			"tier": map[string]any{"type": "string"},
			"note": map[string]any{"type": "text", "pii": true},
		}
		for _, f := range fields {
			declared[f] = map[string]any{"type": "string"}
		}
		return map[string]any{"types": []any{map[string]any{
			"type": "replica-bot", "ownership": "agent", "fields": declared,
			"agent_state": map[string]any{"scope": "conversation"},
		}}}
	}
	a.must(http.StatusOK, "PUT", "/v1/documents/features", admin, features(true))
	a.must(http.StatusOK, "PUT", "/v1/documents/object-types", admin, objectTypes())
	agentScopes := []string{"agent_state", "agent_memory", "agent_memory:write"}
	mint := func(agent string) (id, key string) {
		m := a.must(http.StatusCreated, "POST", "/v1/keys", admin, map[string]any{"kind": "agent", "agent": agent, "vendor": "acme", "scopes": agentScopes})
		return m["key_id"].(string), m["key"].(string)
	}
	person := func(name string, roles ...string) string {
		return a.must(http.StatusCreated, "POST", "/v1/keys", admin, map[string]any{"kind": "person", "name": name, "roles": roles})["key"].(string)
	}
	sdkClient := func(base, key string) *sdk.Client {
		c, err := sdk.New(sdk.Options{BaseURL: base, Key: key, HTTPClient: hc, MaxRetries: -1})
		require.NoError(t, err)
		return c
	}

	t.Run("read your writes across replicas", func(t *testing.T) {
		_, key := mint("replica-bot")
		onA := sdkClient(baseA, key).AgentState(sdk.Conversation("ryw"))
		for i := 1; i <= 20; i++ {
			step := fmt.Sprintf("step-%d", i)
			res, err := onA.Put(ctx, map[string]any{"step": step})
			require.NoError(t, err)
			require.True(t, res.Stored && !res.Queued, "write %d on A: %+v", i, res)
			require.Equal(t, int64(i), res.Version)
			// A client that never saw the write, on the other replica.
			got, err := sdkClient(baseB, key).AgentState(sdk.Conversation("ryw")).Get(ctx)
			require.NoError(t, err)
			require.Equal(t, res.Version, got.Version, "B read version %d after A acknowledged %d", got.Version, res.Version)
			require.JSONEq(t, fmt.Sprintf("%q", step), string(got.Body["step"]))
		}
	})

	t.Run("revocation and document changes reach the other replica at its next request", func(t *testing.T) {
		keyID, key := mint("replica-bot")
		onB := sdkClient(baseB, key).AgentState(sdk.Conversation("docs"))
		res, err := onB.Put(ctx, map[string]any{"extra": "x"})
		require.NoError(t, err)
		require.False(t, res.Stored)
		require.Equal(t, "not_declared_field", *res.Reason)

		a.must(http.StatusOK, "PUT", "/v1/documents/object-types", admin, objectTypes("extra"))
		res, err = onB.Put(ctx, map[string]any{"extra": "x"})
		require.NoError(t, err)
		require.True(t, res.Stored, "B still refuses a field A just declared: %+v", res)

		a.must(http.StatusOK, "PUT", "/v1/documents/features", admin, features(false))
		_, err = onB.Get(ctx)
		var se *sdk.Error
		require.ErrorAs(t, err, &se, "B still serves working memory that A just turned off")
		require.Equal(t, http.StatusForbidden, se.Status, "%v", err)
		a.must(http.StatusOK, "PUT", "/v1/documents/features", admin, features(true))
		_, err = onB.Get(ctx)
		require.NoError(t, err)

		require.Equal(t, http.StatusNoContent, a.status("DELETE", "/v1/keys/"+keyID, admin))
		_, err = onB.Get(ctx)
		require.ErrorAs(t, err, &se, "B still accepts a key A just revoked")
		require.Equal(t, http.StatusUnauthorized, se.Status, "%v", err)
	})

	t.Run("an erasure started on A leaves nothing of the subject on B", func(t *testing.T) {
		_, key := mint("replica-bot")
		dpo := person("dpo", "compliance")
		integ := person("integrator", "integration")
		_, tipsKey := mint("tips")
		tips := sdkClient(baseA, tipsKey)
		tipsOnB := sdkClient(baseB, tipsKey)
		// B's gate loads the space's known subjects (none yet) with this first note.
		first, err := tipsOnB.Remember(ctx, sdk.Note{Kind: "procedure", Title: "Exchanges", Body: "Offer an exchange before a refund."}, "")
		require.NoError(t, err)
		const handle = "email:ana.souza@example.com"
		profileID := a.must(http.StatusCreated, "POST", "/v1/profiles", integ, map[string]any{"name": "Ana Souza", "handles": []string{handle}})["profile_id"].(string)
		// The customer created on A is a known subject for B's gate at its next request (written
		// in capitals, which the name layer of GATE-2 leaves alone, so only the known subject
		// can refuse it).
		_, err = tipsOnB.Remember(ctx, sdk.Note{Kind: "pitfall", Title: "Call back", Body: "Call ANA SOUZA about the exchange."}, "")
		require.ErrorIs(t, err, sdk.ErrPersonalData, "B let a note naming a customer created on A into agent memory")
		res, err := sdkClient(baseA, key).AgentState(sdk.Conversation("c-ana"), sdk.WithSubject(handle)).Put(ctx, map[string]any{"tier": "gold", "note": "prefers letters"})
		require.NoError(t, err)
		require.True(t, res.Stored)
		// B serves the subject's state and profile before the erasure.
		readB := func() sdk.State {
			st, err := sdkClient(baseB, key).AgentState(sdk.Conversation("c-ana")).Get(ctx)
			require.NoError(t, err)
			return st
		}
		require.JSONEq(t, `"gold"`, string(readB().Body["tier"]))
		b.must(http.StatusOK, "GET", "/v1/profiles/"+profileID, integ, nil)

		// Notes of agent "tips" in B's prompt block (B builds and caches it).
		noteIDs := []string{first.Note.ID}
		for _, title := range []string{"Refund to a gift card", "Check the order status first"} {
			r, err := tips.Remember(ctx, sdk.Note{Kind: "procedure", Title: title, Body: "Ask which order it is, then follow the refund policy.", Tags: []string{"refund"}}, "")
			require.NoError(t, err)
			noteIDs = append(noteIDs, r.Note.ID)
		}
		blockReader := sdkClient(baseB, tipsKey)
		before, err := blockReader.Block(ctx, sdk.BlockOptions{Tags: []string{"refund"}})
		require.NoError(t, err)
		require.ElementsMatch(t, noteIDs, before.NoteIDs)
		again, err := blockReader.Block(ctx, sdk.BlockOptions{Tags: []string{"refund"}})
		require.NoError(t, err)
		require.True(t, again.NotModified, "B's second read of an unchanged block is a 304")

		erasureID := a.must(http.StatusAccepted, "POST", "/v1/erasures", dpo, map[string]any{"subject": handle})["erasure_id"].(string)
		noteErasure := a.must(http.StatusAccepted, "DELETE", "/v1/agent-memory/notes?source_id=tips", admin, nil)["workflow_id"].(string)
		waitWorkflow(t, tc, workflows.ErasureWorkflowID(erasureID))
		waitWorkflow(t, tc, noteErasure)
		require.Equal(t, "completed", b.must(http.StatusOK, "GET", "/v1/erasures/"+erasureID, dpo, nil)["status"])

		st := readB()
		require.Zero(t, st.Version, "B still serves the erased subject's state: %+v", st)
		require.Empty(t, st.Body)
		b.must(http.StatusNotFound, "GET", "/v1/profiles/"+profileID, integ, nil)
		after, err := blockReader.Block(ctx, sdk.BlockOptions{Tags: []string{"refund"}})
		require.NoError(t, err)
		require.False(t, after.NotModified, "B answered 304 for a block whose notes were erased")
		require.Empty(t, after.NoteIDs)
		require.NotContains(t, after.Text, "gift card")
	})

	t.Run("a delete or an erasure on B is in force on A at its very next request", func(t *testing.T) {
		forgetOnB(t, a, b, tc, admin, mint, person, sdkClient, features(true))
	})

	t.Run("one retention schedule for two workers", func(t *testing.T) {
		d, err := tc.ScheduleClient().GetHandle(ctx, workflows.RetentionScheduleID).Describe(ctx)
		require.NoError(t, err)
		action, ok := d.Schedule.Action.(*client.ScheduleWorkflowAction)
		require.True(t, ok, "the schedule's action is %T", d.Schedule.Action)
		require.Equal(t, "replicas-process", action.TaskQueue)
		// The list comes from Temporal's visibility store, which may trail the create: wait
		// (bounded) until it shows the schedule, then count.
		var ids []string
		deadline := time.Now().Add(30 * time.Second)
		for {
			ids = ids[:0]
			it, err := tc.ScheduleClient().List(ctx, client.ScheduleListOptions{PageSize: 100})
			require.NoError(t, err)
			for it.HasNext() {
				e, err := it.Next()
				require.NoError(t, err)
				ids = append(ids, e.ID)
			}
			if slices.Contains(ids, workflows.RetentionScheduleID) || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		require.Equal(t, []string{workflows.RetentionScheduleID}, ids, "want exactly one schedule in the namespace")
	})

	t.Run("32 writers, SIGKILL of a replica, nothing acknowledged lost", func(t *testing.T) {
		const writers, writes = 32, 40
		type stateAck struct{ scope, step string }
		type noteAck struct{ id, title string }
		keys := make([]string, writers)
		for w := range keys {
			_, keys[w] = mint(fmt.Sprintf("load-%s", letters(w)))
		}
		stateAcks := make([][]stateAck, writers)
		noteAcks := make([][]noteAck, writers)
		var acked atomic.Int64
		killAt := make(chan struct{})
		var once sync.Once
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := range writes {
					c := a
					if (w+i)%2 == 1 {
						c = b
					}
					if i%5 == 0 {
						title := fmt.Sprintf("Routine %s %s", letters(w), letters(i))
						status, m, err := c.do("POST", "/v1/agent-memory/notes", keys[w], map[string]any{
							"kind": "procedure", "title": title, "body": "Confirm the order before any refund.", "tags": []string{"load"},
						})
						if err == nil && status == http.StatusCreated {
							noteAcks[w] = append(noteAcks[w], noteAck{id: m["id"].(string), title: title})
						}
					}
					scope := fmt.Sprintf("load-%s-%s", letters(w), letters(i))
					step := fmt.Sprintf("s-%d-%d", w, i)
					status, m, err := c.do("PUT", "/v1/agent-state", keys[w], map[string]any{
						"scope": map[string]any{"kind": "conversation", "id": scope}, "body": map[string]any{"step": step},
					})
					if err != nil || status != http.StatusOK || m["stored"] != true {
						continue // not acknowledged (B is gone, or the request died with it)
					}
					stateAcks[w] = append(stateAcks[w], stateAck{scope: scope, step: step})
					if acked.Add(1) == writers*writes/4 {
						once.Do(func() { close(killAt) })
					}
				}
			})
		}
		select {
		case <-killAt:
		case <-time.After(2 * time.Minute): // a hang guard, not a timing assertion
			t.Fatalf("a quarter of the writes not acknowledged within 2 minutes; A:\n%s\nB:\n%s", serveA.stderr.String(), serveB.stderr.String())
		}
		require.NoError(t, serveB.cmd.Process.Signal(syscall.SIGKILL))
		err := <-serveB.done
		require.Error(t, err, "B must die of SIGKILL")
		wg.Wait()

		// B comes back on the same database; the read-back goes through both replicas.
		serveB = start(t, bin, envB, "serve")
		waitHealthy(t, serveB, baseB+"/healthz")
		var states, notes int
		for w := range writers {
			for j, ack := range stateAcks[w] {
				c := []client2{a, b}[j%2]
				m := c.must(http.StatusOK, "POST", "/v1/agent-state/read", keys[w], map[string]any{"scope": map[string]any{"kind": "conversation", "id": ack.scope}})
				require.Equal(t, json.Number("1"), m["version"], "%s: an acknowledged write is missing", ack.scope)
				require.Equal(t, ack.step, m["body"].(map[string]any)["step"], "%s", ack.scope)
			}
			for _, n := range noteAcks[w] {
				m := b.must(http.StatusOK, "GET", "/v1/agent-memory/notes/"+n.id, keys[w], nil)
				require.Equal(t, n.title, m["title"], "note %s", n.id)
			}
			states += len(stateAcks[w])
			notes += len(noteAcks[w])
		}
		t.Logf("%d working-memory writes and %d notes acknowledged; all read back after B's SIGKILL", states, notes)
		require.Less(t, int64(states), int64(writers*writes), "B's SIGKILL cost no write: the kill came too late to test anything")

		// The receipt chain verifies, and every acknowledged note has its note.create receipt.
		v := a.must(http.StatusOK, "GET", "/v1/receipts/verify", admin, nil)
		require.Equal(t, true, v["ok"], "the receipt chain does not verify: %v", v)
		recorded := receiptStrings(t, a, admin)
		for w := range writers {
			for _, n := range noteAcks[w] {
				require.True(t, recorded[n.id], "no receipt names the acknowledged note %s", n.id)
			}
		}

		// Every outbox event reaches Kafka exactly once, in per-space position order, and every
		// acknowledged note has its event.
		d, err := db.Open(ctx, mainURL, db.Options{MaxOpenConns: 2})
		require.NoError(t, err)
		defer db.Close(d)
		deadline := time.Now().Add(time.Minute)
		for {
			backlog, _, err := events.Backlog(ctx, d)
			require.NoError(t, err)
			if backlog == 0 {
				break
			}
			require.True(t, time.Now().Before(deadline), "the relays left %d events unsent for a minute", backlog)
			time.Sleep(50 * time.Millisecond)
		}
		var outbox []models.OutboxEvent
		require.NoError(t, d.NewSelect().Model(&outbox).Order("space_id", "position").Scan(ctx))
		position := map[string]int64{}
		noteEvent := map[string]bool{}
		for _, e := range outbox {
			position[e.ID] = e.Position
			var ev events.Event
			require.NoError(t, json.Unmarshal([]byte(e.Payload), &ev))
			noteEvent[ev.NoteID] = true
		}
		msgs := eventstest.Consume(t, brokerAddr, replicaTopic, replicaPartitions)
		seen := map[string]int{}
		last := map[string]int64{} // space -> last position seen, in partition order
		for _, m := range msgs {
			id := kafkaHeader(m, events.HeaderEventID)
			seen[id]++
			require.Equal(t, 1, seen[id], "event %s published twice", id)
			p, ok := position[id]
			require.True(t, ok, "Kafka holds event %s that is not in the outbox", id)
			space := string(m.Key)
			require.Greater(t, p, last[space], "event %s (position %d) after position %d of its space", id, p, last[space])
			last[space] = p
		}
		require.Len(t, msgs, len(outbox), "every outbox event once")
		for w := range writers {
			for _, n := range noteAcks[w] {
				require.True(t, noteEvent[n.id], "no event for the acknowledged note %s", n.id)
			}
		}
		t.Logf("%d outbox events, each published once by one of the two relays", len(outbox))
		for _, p := range append(workers, serveA, serveB) {
			require.NotContains(t, p.stderr.String(), admin, "a key in the logs")
			require.NotContains(t, p.stderr.String(), "ana.souza", "a subject's handle in the logs")
		}
	})
}

// letters writes n in base 26 with the letters a to z (so titles and scopes carry no digits
// the personal-data gate might take for a number).
func letters(n int) string {
	s := string(rune('a' + n%26))
	for n /= 26; n > 0; n /= 26 {
		s = string(rune('a'+n%26)) + s
	}
	return s
}

func randomBase64(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return base64.StdEncoding.EncodeToString(b)
}

// status sends a request whose answer has no body (204) and returns its status.
func (c client2) status(method, path, key string) int {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, nil)
	require.NoError(c.t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := c.http.Do(req)
	require.NoError(c.t, err)
	res.Body.Close()
	return res.StatusCode
}

// receiptStrings pages through GET /v1/receipts and returns every string value any receipt
// holds (ids, actions, hashes), so that a check of "a receipt names X" does not depend on the
// receipts' exact shape.
func receiptStrings(t *testing.T, c client2, key string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			out[v] = true
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	after := json.Number("0")
	for {
		page := c.must(http.StatusOK, "GET", "/v1/receipts?limit=1000&after="+after.String(), key, nil)
		list, _ := page["receipts"].([]any)
		if len(list) == 0 {
			return out
		}
		walk(list)
		seq, ok := list[len(list)-1].(map[string]any)["seq"].(json.Number)
		require.True(t, ok, "a receipt without seq: cannot page")
		after = seq
	}
}

func kafkaHeader(m kafka.Message, key string) string {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}
