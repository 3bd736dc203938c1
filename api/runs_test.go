package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/notes"
	"github.com/agentmemory/agentmemory/internal/receipts"
)

const (
	searchPath   = "/v1/agent-memory/search"
	retrievePath = "/v1/knowledge/retrieve"
)

// runHeaders are the headers naming run id with budget (0: none) on a GET.
func runHeaders(id string, budget int) []string {
	if budget == 0 {
		return []string{"Agent-Run-Id", id}
	}
	return []string{"Agent-Run-Id", id, "Agent-Run-Budget", strconv.Itoa(budget)}
}

// runOf returns the answer's run member as {budget, used, remaining} and cut.
func runOf(t *testing.T, a map[string]any) (budget, used, remaining int, cut bool) {
	t.Helper()
	r, ok := a["run"].(map[string]any)
	require.True(t, ok, "the answer has a run member: %v", a)
	return mustInt(t, r["budget_tokens"]), mustInt(t, r["used_tokens"]), mustInt(t, r["remaining_tokens"]), r["cut"] == true
}

// noteCost is what a note delivered by a search draws: the tokens of its block rendering.
func noteCost(t *testing.T, n map[string]any) int {
	t.Helper()
	k, err := notes.CountTokens("\n## " + n["title"].(string) + " (" + n["kind"].(string) + ")\n" + n["body"].(string) + "\n")
	require.NoError(t, err)
	return k
}

// lastReceipt is the newest receipt of action in e's space.
func lastReceipt(t *testing.T, e *apptest.Env, action string) receipts.Receipt {
	t.Helper()
	var last *receipts.Receipt
	for _, r := range spaceReceipts(t, e, e.AdminKey) {
		if r.Action == action {
			last = &r
		}
	}
	require.NotNil(t, last, "no %s receipt", action)
	return *last
}

// detailInt is a number of a receipt's detail.
func detailInt(t *testing.T, v any) int {
	t.Helper()
	f, ok := v.(float64)
	require.True(t, ok, "got %T, want a number", v)
	return int(f)
}

// runsRows counts the rows of agent_runs.
func runsRows(t *testing.T, e *apptest.Env) int {
	t.Helper()
	n, err := e.DB.NewSelect().Table("agent_runs").Count(context.Background())
	require.NoError(t, err)
	return int(n)
}

// CTX-3: the first call of a run sets its budget; every memory read of the run (block, note
// search, knowledge retrieval, context call) draws the tokens it delivers, counted by the real
// tokenizer; receipts name the run and what it drew; a 304 draws nothing.
func TestRunDrawsEveryRead(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		c := newContextEnv(t, e)
		all := e.AgentKey("shop-bot", "acme-ai", "context", "agent_memory", "knowledge:read")
		const budget = 100000

		plain := e.MustDo(http.StatusOK, "GET", blockPath, all, nil)
		r := e.MustDo(http.StatusOK, "GET", blockPath, all, nil, runHeaders("run-1", budget)...)
		b := r.JSON(t)
		require.Equal(t, plain.JSON(t)["text"], b["text"], "a run with room gives the block as it is")
		require.Equal(t, plain.Header.Get("ETag"), r.Header.Get("ETag"))
		bt := mustInt(t, b["tokens"])
		require.Positive(t, bt)
		got, used, remaining, cut := runOf(t, b)
		require.Equal(t, budget, got)
		require.Equal(t, bt, used, "the block drew its tokens")
		require.Equal(t, budget-bt, remaining)
		require.False(t, cut)
		rc := lastReceipt(t, e, "block.read")
		require.Equal(t, "run-1", rc.Detail["run_id"])
		require.Equal(t, bt, detailInt(t, rc.Detail["run_tokens"]))

		// A 304 draws nothing: the next call's figures start where the block left them.
		require.Equal(t, http.StatusNotModified, e.Do("GET", blockPath, all, nil, append(runHeaders("run-1", 0), "If-None-Match", r.Header.Get("ETag"))...).Status)

		s := e.MustDo(http.StatusOK, "GET", searchPath+"?q=refunds", all, nil, runHeaders("run-1", 0)...).JSON(t)
		found := s["notes"].([]any)
		require.NotEmpty(t, found)
		cost := 0
		for _, n := range found {
			cost += noteCost(t, n.(map[string]any))
		}
		_, used, _, cut = runOf(t, s)
		require.Equal(t, bt+cost, used, "the search drew its notes' tokens (the 304 drew nothing)")
		require.False(t, cut)
		rc = lastReceipt(t, e, "search")
		require.Equal(t, "run-1", rc.Detail["run_id"])
		require.Equal(t, cost, detailInt(t, rc.Detail["run_tokens"]))
		drawn := bt + cost

		k := e.MustDo(http.StatusOK, "POST", retrievePath, all, map[string]any{"kbs": []string{c.kb}, "query": "refund card payments", "run": map[string]any{"id": "run-1"}}).JSON(t)
		ct := mustInt(t, k["context_tokens"])
		require.Positive(t, ct)
		exact, err := notes.CountTokens(k["context"].(string))
		require.NoError(t, err)
		require.Equal(t, exact, ct)
		for _, ch := range k["chunks"].([]any) {
			require.Equal(t, true, ch.(map[string]any)["in_context"], "a run's retrieval lists only what its context holds")
		}
		_, used, _, _ = runOf(t, k)
		require.Equal(t, drawn+ct, used)
		rc = lastReceipt(t, e, "retrieve")
		require.Equal(t, "run-1", rc.Detail["run_id"])
		require.Equal(t, ct, detailInt(t, rc.Detail["run_tokens"]))
		drawn += ct

		x := e.MustDo(http.StatusOK, "POST", contextPath, all, map[string]any{"view": "voice", "max_tokens": 1500,
			"knowledge": map[string]any{"kbs": []string{c.kb}, "query": "refund card payments"}, "run": map[string]any{"id": "run-1", "budget_tokens": budget}}).JSON(t)
		total := mustInt(t, x["tokens"].(map[string]any)["total"])
		_, used, remaining, _ = runOf(t, x)
		require.Equal(t, drawn+total, used, "naming the same budget again is fine")
		require.Equal(t, budget-used, remaining)
		rc = lastReceipt(t, e, "context.read")
		require.Equal(t, "run-1", rc.Detail["run_id"])
		require.Equal(t, total, detailInt(t, rc.Detail["run_tokens"]))
	})
}

// CTX-3: what would pass the budget is cut to fit (whole notes, cut: true); a call with less
// left than anything it would deliver answers 200 with an empty payload and budget_exhausted,
// draws nothing and leaves no receipt.
func TestRunCutAndExhausted(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		c := newContextEnv(t, e)
		all := e.AgentKey("shop-bot", "acme-ai", "context", "agent_memory", "knowledge:read")
		full := e.MustDo(http.StatusOK, "GET", blockPath, all, nil).JSON(t)
		ft, fids := mustInt(t, full["tokens"]), strs(full["note_ids"])
		require.Len(t, fids, 3)

		blocks := countActions(t, e, "block.read")
		b := e.MustDo(http.StatusOK, "GET", blockPath, all, nil, runHeaders("small", ft-1)...).JSON(t)
		bt := mustInt(t, b["tokens"])
		require.LessOrEqual(t, bt, ft-1)
		require.Less(t, len(strs(b["note_ids"])), len(fids), "a note was left out")
		require.NotEqual(t, true, b["budget_exhausted"])
		exact, err := notes.CountTokens(b["text"].(string))
		require.NoError(t, err)
		require.Equal(t, exact, bt)
		_, used, remaining, cut := runOf(t, b)
		require.True(t, cut)
		require.Equal(t, bt, used)
		require.Equal(t, ft-1-bt, remaining)
		require.Equal(t, blocks+1, countActions(t, e, "block.read"))

		// A budget too small for anything: every read is exhausted, empty, free and unrecorded.
		before := len(spaceReceipts(t, e, e.AdminKey))
		tiny := runHeaders("tiny", 1)
		x := e.MustDo(http.StatusOK, "GET", blockPath, all, nil, tiny...).JSON(t)
		require.Equal(t, true, x["budget_exhausted"])
		require.Equal(t, "", x["text"])
		require.Empty(t, strs(x["note_ids"]))
		_, used, remaining, _ = runOf(t, x)
		require.Equal(t, 0, used)
		require.Equal(t, 1, remaining)
		x = e.MustDo(http.StatusOK, "GET", searchPath+"?q=refunds", all, nil, tiny...).JSON(t)
		require.Equal(t, true, x["budget_exhausted"])
		require.Empty(t, x["notes"])
		x = e.MustDo(http.StatusOK, "POST", retrievePath, all, map[string]any{"kbs": []string{c.kb}, "query": "refund card payments", "run": map[string]any{"id": "tiny"}}).JSON(t)
		require.Equal(t, true, x["budget_exhausted"])
		require.Empty(t, x["chunks"])
		require.Equal(t, "", x["context"])
		x = e.MustDo(http.StatusOK, "POST", contextPath, all, map[string]any{"task": map[string]any{"object_types": []string{"order"}}, "include_agent_memory": true,
			"knowledge": map[string]any{"kbs": []string{c.kb}, "query": "refund card payments"}, "run": map[string]any{"id": "tiny"}}).JSON(t)
		require.Equal(t, true, x["budget_exhausted"])
		require.Equal(t, "", x["system_block"])
		require.Equal(t, "", x["context"])
		require.Equal(t, 0, mustInt(t, x["tokens"].(map[string]any)["total"]))
		_, used, _, _ = runOf(t, x)
		require.Equal(t, 0, used)
		require.Equal(t, before, len(spaceReceipts(t, e, e.AdminKey)), "an exhausted call leaves no receipt")

		// Nothing left: a run spent exactly answers exhausted with nothing remaining.
		b = e.MustDo(http.StatusOK, "GET", blockPath, all, nil, runHeaders("exact", ft)...).JSON(t)
		require.Equal(t, fids, strs(b["note_ids"]))
		_, _, remaining, cut = runOf(t, b)
		require.Equal(t, 0, remaining)
		require.False(t, cut)
		b = e.MustDo(http.StatusOK, "GET", blockPath, all, nil, runHeaders("exact", 0)...).JSON(t)
		require.Equal(t, true, b["budget_exhausted"])
		require.Equal(t, "", b["text"])
		_, used, remaining, _ = runOf(t, b)
		require.Equal(t, ft, used)
		require.Equal(t, 0, remaining)
	})
}

// CTX-3: parallel calls of one run on two replicas over the same database never overspend:
// the tokens all answers delivered sum to at most the budget, and to exactly what the run
// reports used.
func TestRunParallelNeverOverspends(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		bot := writer(e, "shop-bot", "acme")
		for i := range 4 {
			create(e, bot, note(fmt.Sprintf("Rule %d", i), strings.Repeat(fmt.Sprintf("Check the order before promising anything (rule %d). ", i), 2)))
		}
		ft := mustInt(t, e.MustDo(http.StatusOK, "GET", blockPath, bot, nil).JSON(t)["tokens"])
		budget := 3*ft + ft/2
		replica := &apptest.Env{T: t, Server: newReplica(e)}
		envs := []*apptest.Env{e, replica}

		const calls = 12
		answers := make([]apptest.Response, calls)
		var wg sync.WaitGroup
		for i := range calls {
			wg.Go(func() {
				path := blockPath
				if i%3 == 2 {
					path = searchPath + "?q=order"
				}
				answers[i] = envs[i%2].Do("GET", path, bot, nil, runHeaders("busy", budget)...)
			})
		}
		wg.Wait()
		delivered, full := 0, 0
		for i, a := range answers {
			require.Equal(t, http.StatusOK, a.Status, "%s", a.Body)
			m := a.JSON(t)
			if i%3 == 2 {
				for _, n := range m["notes"].([]any) {
					delivered += noteCost(t, n.(map[string]any))
				}
				continue
			}
			tk := mustInt(t, m["tokens"])
			delivered += tk
			if tk == ft {
				full++
			}
		}
		require.LessOrEqual(t, delivered, budget, "got %d delivered, budget %d", delivered, budget)
		require.GreaterOrEqual(t, full, 1)
		last := e.MustDo(http.StatusOK, "GET", blockPath, bot, nil, runHeaders("busy", 0)...).JSON(t)
		drawn := 0
		if last["budget_exhausted"] != true {
			drawn = mustInt(t, last["tokens"])
		}
		_, used, remaining, _ := runOf(t, last)
		require.Equal(t, delivered+drawn, used, "the run counts exactly what was delivered")
		require.Equal(t, budget-used, remaining)
	})
}

// CTX-3: a run belongs to the caller that began it (another agent naming the same id has its
// own); a later call naming another budget is 409 run_budget_mismatch and draws nothing; a run
// expires after the space's run_ttl_hours (the id then begins a new run; without a budget it is
// 400 run_budget_required); beginning a run deletes the space's expired ones.
func TestRunOwnersMismatchAndExpiry(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, map[string]any{"run_ttl_hours": 2})
		bot := writer(e, "shop-bot", "acme")
		other := writer(e, "other-bot", "acme")
		create(e, bot, note("Mine", "Check the order first."))
		create(e, other, note("Theirs", "Greet the customer once."))

		a := e.MustDo(http.StatusOK, "GET", blockPath, bot, nil, runHeaders("shared-id", 1000)...).JSON(t)
		b := e.MustDo(http.StatusOK, "GET", blockPath, other, nil, runHeaders("shared-id", 500)...).JSON(t)
		budgetA, usedA, _, _ := runOf(t, a)
		budgetB, usedB, _, _ := runOf(t, b)
		require.Equal(t, 1000, budgetA)
		require.Equal(t, 500, budgetB, "another agent's same run id is its own run")
		require.Equal(t, mustInt(t, b["tokens"]), usedB, "never the other's draws")

		m := requireError(t, e.Do("GET", blockPath, bot, nil, runHeaders("shared-id", 999)...), http.StatusConflict, "run_budget_mismatch")
		require.Equal(t, "Agent-Run-Budget", m["member"])
		a = e.MustDo(http.StatusOK, "GET", searchPath+"?q=order", bot, nil, runHeaders("shared-id", 0)...).JSON(t)
		_, used, _, _ := runOf(t, a)
		require.Equal(t, usedA+noteCost(t, a["notes"].([]any)[0].(map[string]any)), used, "the refused call drew nothing")

		var row struct {
			CreatedAt time.Time `bun:"created_at"`
			ExpiresAt time.Time `bun:"expires_at"`
		}
		ctx := context.Background()
		require.NoError(t, e.DB.NewSelect().Table("agent_runs").Column("created_at", "expires_at").Where("owner = ? AND run_id = ?", "agent:shop-bot", "shared-id").Scan(ctx, &row))
		require.Equal(t, 2*time.Hour, row.ExpiresAt.Sub(row.CreatedAt), "the run lasts run_ttl_hours")

		// Expire shop-bot's run and another run of the other agent (the clock moved past them).
		e.MustDo(http.StatusOK, "GET", blockPath, other, nil, runHeaders("old", 100)...)
		_, err := e.DB.NewUpdate().Table("agent_runs").Set("expires_at = ?", time.Now().UTC().Add(-time.Minute)).
			Where("(owner = ? AND run_id = ?) OR run_id = ?", "agent:shop-bot", "shared-id", "old").Exec(ctx)
		require.NoError(t, err)
		m = requireError(t, e.Do("GET", blockPath, bot, nil, runHeaders("shared-id", 0)...), http.StatusBadRequest, "run_budget_required")
		require.Equal(t, "Agent-Run-Budget", m["member"])
		a = e.MustDo(http.StatusOK, "GET", blockPath, bot, nil, runHeaders("shared-id", 300)...).JSON(t)
		budgetA, used, _, _ = runOf(t, a)
		require.Equal(t, 300, budgetA, "an expired run's id begins a new run")
		require.Equal(t, mustInt(t, a["tokens"]), used)
		n, err := e.DB.NewSelect().Table("agent_runs").Where("run_id = ?", "old").Count(ctx)
		require.NoError(t, err)
		require.Zero(t, n, "beginning a run deleted the space's expired runs")
		require.Equal(t, 2, runsRows(t, e))

		m = requireError(t, e.Do("PUT", "/v1/documents/features", e.AdminKey, map[string]any{"agent_memory": map[string]any{"enabled": true, "run_ttl_hours": 1000}}), http.StatusBadRequest, "invalid_document")
		require.Equal(t, "agent_memory.run_ttl_hours", m["member"])
	})
}

// CTX-3: a bad run is 400 naming the member (the header on a GET, run.* in a body), and draws
// nothing: no run row is written.
func TestRunBadInput(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		c := newContextEnv(t, e)
		all := e.AgentKey("shop-bot", "acme-ai", "context", "agent_memory", "knowledge:read")
		for _, tc := range []struct {
			name    string
			headers []string
			member  string
		}{
			{"budget not a number", []string{"Agent-Run-Id", "r", "Agent-Run-Budget", "lots"}, "Agent-Run-Budget"},
			{"budget zero", []string{"Agent-Run-Id", "r", "Agent-Run-Budget", "0"}, "Agent-Run-Budget"},
			{"budget too large", []string{"Agent-Run-Id", "r", "Agent-Run-Budget", "1000001"}, "Agent-Run-Budget"},
			{"budget without id", []string{"Agent-Run-Budget", "100"}, "Agent-Run-Id"},
			{"id too long", []string{"Agent-Run-Id", strings.Repeat("r", 201), "Agent-Run-Budget", "100"}, "Agent-Run-Id"},
		} {
			for _, path := range []string{blockPath, searchPath + "?q=refunds"} {
				m := requireError(t, e.Do("GET", path, all, nil, tc.headers...), http.StatusBadRequest, "invalid_member")
				require.Equal(t, tc.member, m["member"], "%s %s", tc.name, path)
			}
		}
		for _, tc := range []struct {
			name   string
			run    any
			code   string
			member string
		}{
			{"empty id", map[string]any{"id": "", "budget_tokens": 10}, "invalid_member", "run.id"},
			{"control character", map[string]any{"id": "a\x01b", "budget_tokens": 10}, "invalid_member", "run.id"},
			{"negative budget", map[string]any{"id": "r", "budget_tokens": -1}, "invalid_member", "run.budget_tokens"},
			{"budget too large", map[string]any{"id": "r", "budget_tokens": 1000001}, "invalid_member", "run.budget_tokens"},
			{"first call without budget", map[string]any{"id": "r"}, "run_budget_required", "run.budget_tokens"},
		} {
			for _, call := range []struct{ path string }{{contextPath}, {retrievePath}} {
				body := map[string]any{"run": tc.run}
				if call.path == retrievePath {
					body["kbs"], body["query"] = []string{c.kb}, "refund"
				}
				m := requireError(t, e.Do("POST", call.path, all, body), http.StatusBadRequest, tc.code)
				require.Equal(t, tc.member, m["member"], "%s %s", tc.name, call.path)
			}
		}
		requireError(t, e.Do("POST", contextPath, all, map[string]any{"run": map[string]any{"id": "r", "budget_tokens": 5, "extra": 1}}), http.StatusBadRequest, "unknown_member")
		require.Zero(t, runsRows(t, e), "nothing was drawn")
	})
}
