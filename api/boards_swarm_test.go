package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/events"
	"github.com/agentmemory/agentmemory/models"
)

// swarmAnswer is one decoded answer of a swarm request.
type swarmAnswer struct {
	status int
	body   map[string]any
	raw    string
}

// swarmDo sends one request to server from any goroutine (no test assertions inside).
func swarmDo(server *api.Server, method, path, key string, body any) (swarmAnswer, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return swarmAnswer{}, err
	}
	req := httptest.NewRequest(method, path, bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	server.ServeHTTP(rec, req)
	out := swarmAnswer{status: rec.Code, raw: rec.Body.String()}
	dec := json.NewDecoder(bytes.NewReader(rec.Body.Bytes()))
	dec.UseNumber()
	if err := dec.Decode(&out.body); err != nil {
		return out, fmt.Errorf("status %d, body %q: %w", rec.Code, rec.Body.String(), err)
	}
	return out, nil
}

// wantRule is the rule findingsTypes gives each field.
var wantRule = map[string]string{"title": "reject", "owner": "theirs", "status": "ours", "notes": "merge_by_key",
	"tags": "union", "severity": "max", "first_at": "min", "hits": "sum", "longest": "cel"}

// swarmAgent is one agent's loop: rounds writes, each computed on a board it read (through
// its replica) after every agent of the round read too, so most writes are stale; a write a
// rule rejects (412) is read again and retried. It returns the settled outcomes of its stored
// writes and the outcomes of its 412s.
func swarmAgent(servers [2]*api.Server, key string, i, rounds int, barrier func(round int)) (stored [][]any, refused [][]any, err error) {
	server := servers[i%2]
	board := map[string]any{"type": "findings", "id": "incident-42"}
	for round := 0; round < rounds; round++ {
		for attempt := 0; ; attempt++ {
			if attempt > 200 {
				return nil, nil, fmt.Errorf("agent %d: round %d not stored after 200 attempts", i, round)
			}
			r, err := swarmDo(server, "POST", "/v1/boards/read", key, board)
			if err != nil || r.status != http.StatusOK {
				return nil, nil, fmt.Errorf("agent %d read: %v %s", i, err, r.raw)
			}
			if attempt == 0 {
				barrier(round)
			}
			write := swarmWrite(r.body, i, round)
			w, err := swarmDo(server, "PUT", "/v1/boards", key, write)
			if err != nil {
				return nil, nil, fmt.Errorf("agent %d write: %w", i, err)
			}
			switch w.status {
			case http.StatusOK:
				if w.body["stored"] != true {
					return nil, nil, fmt.Errorf("agent %d: not stored: %s", i, w.raw)
				}
				stored = append(stored, w.body["settled"].([]any))
			case http.StatusPreconditionFailed:
				refused = append(refused, w.body["settled"].([]any))
				continue
			default:
				return nil, nil, fmt.Errorf("agent %d write: status %d: %s", i, w.status, w.raw)
			}
			break
		}
	}
	return stored, refused, nil
}

// swarmWrite is agent i's write of round on the board it read: one more hit, its own tag and
// note, its severity, first time and a string as long as i, and every eighth agent a new
// title (a reject field: collisions are refused and retried).
func swarmWrite(read map[string]any, i, round int) map[string]any {
	body, _ := read["body"].(map[string]any)
	hits := int64(0)
	if n, ok := body["hits"].(json.Number); ok {
		hits, _ = n.Int64()
	}
	tags, _ := body["tags"].([]any)
	notes, _ := body["notes"].(map[string]any)
	nextNotes := map[string]any{}
	for k, v := range notes {
		nextNotes[k] = v
	}
	tag := fmt.Sprintf("a%02d-r%d", i, round)
	nextNotes[tag] = i
	num := func(name string, fallback int64) int64 {
		if n, ok := body[name].(json.Number); ok {
			v, _ := n.Int64()
			return v
		}
		return fallback
	}
	longest, _ := body["longest"].(string)
	if mine := strings.Repeat("x", i+1); len(mine) > len(longest) {
		longest = mine
	}
	// Each agent raises severity to its own, lowers first_at to its own and keeps the
	// longest string: on the board it read, as an agent's code would.
	w := map[string]any{
		"hits": hits + 1, "tags": append(append([]any{}, tags...), tag), "notes": nextNotes,
		"severity": max(num("severity", 0), int64(i)), "first_at": min(num("first_at", 1000), int64(1000-i)), "longest": longest,
		"owner": fmt.Sprintf("agent-%d", i), "status": fmt.Sprintf("seen-by-%d", i),
	}
	if i%8 == 0 {
		w["title"] = fmt.Sprintf("title by %d in round %d", i, round)
	}
	return map[string]any{"type": "findings", "id": "incident-42", "if_version": read["version"], "body": w}
}

// roundBarrier lets all n agents read a round's board before any of them writes it.
type roundBarrier struct {
	mu      sync.Mutex
	arrived map[int]int
	open    map[int]chan struct{}
	n       int
}

func (b *roundBarrier) wait(round int) {
	b.mu.Lock()
	ch := b.channel(round)
	b.arrived[round]++
	b.release()
	b.mu.Unlock()
	<-ch
}

// leave takes an agent that stopped (done, or failed) out of every later round.
func (b *roundBarrier) leave() {
	b.mu.Lock()
	b.n--
	b.release()
	b.mu.Unlock()
}

func (b *roundBarrier) channel(round int) chan struct{} {
	if b.open[round] == nil {
		b.open[round] = make(chan struct{})
	}
	return b.open[round]
}

// release opens every round all remaining agents reached (b.mu held).
func (b *roundBarrier) release() {
	for round, ch := range b.open {
		if b.arrived[round] >= b.n && ch != nil {
			close(ch)
			b.open[round] = nil
			b.arrived[round] = -1 << 30 // opened: later arrivals pass through a closed channel
			b.open[round] = closedChan
		}
	}
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// TestBoardSwarmNothingLost is issue 31's acceptance: 32 agents write one board through two
// API replicas with stale versions. Nothing is lost (every hit, tag and note of every stored
// write is on the board; max, min and the CEL rule hold over all writes), every field both
// sides changed is settled by its own field's rule and named in the answer and the receipt,
// refusals are the reject field's, and every stored write has one board.updated event with
// ids only.
func TestBoardSwarmNothingLost(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		const agents, rounds = 32, 3
		e.PutDocument("object-types", findingsTypes())
		e.MustDo(http.StatusCreated, "POST", "/v1/boards/findings/grants", e.AdminKey, map[string]any{"vendor": "swarm", "access": "read_write", "boards": "incident-*"})
		keys := make([]string, agents)
		for i := range keys {
			keys[i] = e.AgentKey(fmt.Sprintf("agent-%d", i), "swarm")
		}
		servers := [2]*api.Server{e.Server, newReplica(e)}
		barrier := &roundBarrier{arrived: map[int]int{}, open: map[int]chan struct{}{}, n: agents}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var stored, refused [][]any
		errs := make([]error, agents)
		for i := 0; i < agents; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				defer barrier.leave()
				s, r, err := swarmAgent(servers, keys[i], i, rounds, barrier.wait)
				errs[i] = err
				mu.Lock()
				stored, refused = append(stored, s...), append(refused, r...)
				mu.Unlock()
			}(i)
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		require.Len(t, stored, agents*rounds)

		// Every settled field names its own field's rule; every kind of rule settled some.
		seen := map[string]int{}
		for _, outs := range stored {
			for _, o := range outs {
				m := o.(map[string]any)
				require.Equal(t, wantRule[m["field"].(string)], m["rule"], "field %v settled by %v", m["field"], m["rule"])
				require.Nil(t, m["rejected"])
				seen[m["rule"].(string)]++
			}
		}
		for _, rule := range []string{"theirs", "ours", "merge_by_key", "union", "max", "min", "sum", "cel"} {
			require.Positive(t, seen[rule], "no write was settled by %s (settled: %v)", rule, seen)
		}
		for _, outs := range refused {
			rejected := 0
			for _, o := range outs {
				m := o.(map[string]any)
				if m["rejected"] == true {
					rejected++
					require.Equal(t, "title", m["field"], "only the reject field refuses")
					require.Equal(t, "reject", m["rule"])
				}
			}
			require.Equal(t, 1, rejected, "a refusal names the rejected field: %v", outs)
		}

		final := e.MustDo(http.StatusOK, "POST", "/v1/boards/read", keys[0], map[string]any{"type": "findings", "id": "incident-42"}).JSON(t)
		require.EqualValues(t, json.Number(fmt.Sprint(agents*rounds)), final["version"])
		body := final["body"].(map[string]any)
		require.Equal(t, json.Number(fmt.Sprint(agents*rounds)), body["hits"], "sum kept every increment")
		require.Equal(t, json.Number("31"), body["severity"])
		require.Equal(t, json.Number("969"), body["first_at"])
		require.Equal(t, strings.Repeat("x", agents), body["longest"], "the CEL rule kept the longest")
		var tags []string
		for _, tg := range body["tags"].([]any) {
			tags = append(tags, tg.(string))
		}
		notes := body["notes"].(map[string]any)
		var want []string
		for i := 0; i < agents; i++ {
			for r := 0; r < rounds; r++ {
				tag := fmt.Sprintf("a%02d-r%d", i, r)
				want = append(want, tag)
				require.Contains(t, notes, tag, "merge_by_key kept every note")
			}
		}
		sort.Strings(tags)
		require.Equal(t, want, tags, "union kept every tag once")

		requireSwarmRecords(t, e, stored)
	})
}

// requireSwarmRecords checks the receipts and events of the swarm's stored writes.
func requireSwarmRecords(t *testing.T, e *apptest.Env, stored [][]any) {
	ctx := context.Background()
	var rows []models.Receipt
	require.NoError(t, e.DB.NewSelect().Model(&rows).Where("action = ?", "board.write").Scan(ctx))
	require.Len(t, rows, len(stored), "one receipt per stored write")
	settledInReceipts := 0
	for _, r := range rows {
		var detail map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.Detail), &detail))
		for _, o := range detail["settled"].([]any) {
			m := o.(map[string]any)
			require.Equal(t, wantRule[m["field"].(string)], m["rule"])
			settledInReceipts++
		}
	}
	settledInAnswers := 0
	for _, outs := range stored {
		settledInAnswers += len(outs)
	}
	require.Equal(t, settledInAnswers, settledInReceipts, "the receipts name every settled field the answers name")

	var evs []models.OutboxEvent
	require.NoError(t, e.DB.NewSelect().Model(&evs).Where("type = ?", "board.updated").Scan(ctx))
	require.Len(t, evs, len(stored))
	for _, ev := range evs {
		var payload map[string]any
		require.NoError(t, json.Unmarshal([]byte(ev.Payload), &payload))
		var known events.Event
		require.NoError(t, json.Unmarshal([]byte(ev.Payload), &known))
		require.NotEmpty(t, known.BoardID)
		for k := range payload {
			require.Contains(t, []string{"id", "type", "space_id", "board_id", "kind", "source_id", "version", "occurred_at"}, k, "an event carries ids only")
		}
	}
}
