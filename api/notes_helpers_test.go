package api_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/notes"
	"github.com/agentmemory/agentmemory/internal/proposals"
)

// clock is a settable clock for the services of one Env (state.Service.Now, notes).
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func (c *clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// eachClocked runs fn on a fresh Env per engine whose clock is clk's.
func eachClocked(t *testing.T, fn func(t *testing.T, e *apptest.Env, clk *clock)) {
	t.Helper()
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			clk := newClock()
			e := apptest.New(t, engine, func(d *api.Deps) { d.Now = clk.Now })
			fn(t, e, clk)
		})
	}
}

// enableNotes turns agent memory on with extra settings merged in.
func enableNotes(e *apptest.Env, extra map[string]any) {
	am := map[string]any{"enabled": true}
	for k, v := range extra {
		am[k] = v
	}
	e.PutDocument("features", map[string]any{"agent_memory": am})
}

// note is a valid note body with title and body; more adds or replaces members.
func note(title, body string, more ...any) map[string]any {
	m := map[string]any{"kind": "procedure", "title": title, "body": body}
	for i := 0; i+1 < len(more); i += 2 {
		m[more[i].(string)] = more[i+1]
	}
	return m
}

const notesPath = "/v1/agent-memory/notes"

// writer mints an agent key that reads and writes notes.
func writer(e *apptest.Env, agent, vendor string) string {
	return e.AgentKey(agent, vendor, "agent_memory", "agent_memory:write")
}

// create posts a note that must be stored and returns its id.
func create(e *apptest.Env, key string, body map[string]any) string {
	e.T.Helper()
	r := e.MustDo(http.StatusCreated, "POST", notesPath, key, body)
	return r.JSON(e.T)["id"].(string)
}

// ids returns the "id" of each object of list.
func ids(list any) []string {
	out := []string{}
	for _, x := range list.([]any) {
		out = append(out, x.(map[string]any)["id"].(string))
	}
	return out
}

// listIDs lists the notes key sees (query appended) and returns their ids.
func listIDs(e *apptest.Env, key, query string) []string {
	e.T.Helper()
	r := e.MustDo(http.StatusOK, "GET", notesPath+query, key, nil)
	return ids(r.JSON(e.T)["notes"])
}

// receiptsOf returns the space's receipts with action.
func receiptsOf(e *apptest.Env, action string) []map[string]any {
	e.T.Helper()
	r := e.MustDo(http.StatusOK, "GET", "/v1/receipts?limit=1000", e.AdminKey, nil)
	var out []map[string]any
	for _, x := range r.JSON(e.T)["receipts"].([]any) {
		m := x.(map[string]any)
		if m["action"] == action {
			out = append(out, m)
		}
	}
	return out
}

func strs(v any) []string {
	out := []string{}
	for _, x := range v.([]any) {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

func notesDraft(e *apptest.Env) proposals.DraftRequest {
	return proposals.DraftRequest{SpaceID: e.SpaceID, SourceID: "shop-bot", Vendor: "acme", ActorKey: "key_test", Evidence: notes.Evidence{ConversationID: "conv-9"}}
}

func distilled(title, body string) notes.ProposedNote {
	return notes.ProposedNote{Kind: "procedure", Title: title, Body: body, Tags: []string{"refund"}}
}
