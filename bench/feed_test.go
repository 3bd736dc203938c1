package bench

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/models"
)

// BenchmarkFeedTrigger measures what the export feed's capture triggers (issue 33,
// migration 20261205050000: one feed_changes insert per agent_states insert or update)
// cost a working-state write, on SQLite and PostgreSQL, in process and one at a time: two
// spaces on two fresh databases, "feed" as migrated and "no_feed" with the agent_states
// triggers dropped, each doing api_merge (PUT /v1/agent-state merge_by_key of 2 fields,
// through the handler) and sql_update (one UPDATE of the state's row, the trigger's cost
// alone). Compare ns/op and cpu-ns/op of feed against no_feed (docs/bench.md):
//
//	go test -run '^$' -bench FeedTrigger -benchmem -benchtime 2000x ./bench
func BenchmarkFeedTrigger(b *testing.B) {
	for _, engine := range []string{"sqlite", "postgres"} {
		b.Run(engine, func(b *testing.B) {
			for _, mode := range []string{"feed", "no_feed"} {
				b.Run(mode, func(b *testing.B) { benchFeedWrites(b, engine, mode == "feed") })
			}
		})
	}
}

func benchFeedWrites(b *testing.B, engine string, withFeed bool) {
	e := apptest.New(b, engine)
	if !withFeed {
		dropStateCapture(b, e.DB)
	}
	fields := map[string]any{"count": map[string]any{"type": "integer"}, "step": map[string]any{"type": "string"}}
	e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}})
	e.PutDocument("object-types", map[string]any{"types": []any{map[string]any{
		"type": "bench-agent", "ownership": "agent", "fields": fields,
		"agent_state": map[string]any{"scope": "conversation", "max_bytes": 65536}}}})
	key := e.AgentKey("bench-agent-0", "bench", "agent_state")
	scope := `{"kind":"conversation","id":"bench-0"}`
	e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", key, `{"scope":`+scope+`,"mode":"merge_by_key","body":{"count":0,"step":"init"}}`)
	var stateID string
	if err := e.DB.NewSelect().Model((*models.AgentState)(nil)).Column("id").
		Scan(context.Background(), &stateID); err != nil {
		b.Fatal(err)
	}
	w := &sink{}
	merge := func(i int) {
		req, err := http.NewRequest("PUT", "http://bench/v1/agent-state",
			strings.NewReader(fmt.Sprintf(`{"scope":%s,"mode":"merge_by_key","body":{"count":%d,"step":"merge"}}`, scope, i)))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		w.reset()
		e.Server.ServeHTTP(w, req)
		if w.status != http.StatusOK || !strings.Contains(w.body.String(), `"stored":true`) {
			b.Fatalf("merge: %d %s", w.status, w.body.Bytes())
		}
	}
	update := func(int) {
		if _, err := e.DB.NewUpdate().Model((*models.AgentState)(nil)).Set("version = version + 1").
			Where("id = ?", stateID).Exec(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		op   func(int)
	}{{"api_merge", merge}, {"sql_update", update}} {
		runWithCPU(b, c.name, c.op)
	}
}

// dropStateCapture drops the feed's agent_states triggers of d (the benchmark's no_feed
// side; the database is the benchmark's own).
func dropStateCapture(b *testing.B, d *bun.DB) {
	on := " ON agent_states"
	if db.IsSQLite(d) {
		on = ""
	}
	for _, op := range []string{"ins", "upd", "del"} {
		if _, err := d.ExecContext(context.Background(), "DROP TRIGGER feed_agent_states_"+op+on); err != nil {
			b.Fatal(err)
		}
	}
}
