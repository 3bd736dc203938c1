package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/events"
	"github.com/agentmemory/agentmemory/models"
)

// AM-11, AM-13: every write leaves an admin receipt and every created note or proposal an
// outbox event (ids, kind, origin; never text), in the same transaction; block reads (a 304
// too) and searches leave agent_memory receipts naming the notes delivered.
func TestNoteReceiptsAndEvents(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		bot := writer(e, "shop-bot", "acme")
		id := create(e, bot, note("Secret title words", "Secret body words."))
		v2 := e.MustDo(http.StatusCreated, "POST", notesPath+"/"+id+"/versions", bot, map[string]any{"body": "Secret body words, edited."}).JSON(t)["id"].(string)
		block := e.MustDo(http.StatusOK, "GET", blockPath, bot, nil)
		e.MustDo(http.StatusNotModified, "GET", blockPath, bot, nil, "If-None-Match", block.Header.Get("ETag"))
		e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/search?q=secret", bot, nil)
		e.MustDo(http.StatusOK, "POST", notesPath+"/"+v2+"/retire", bot, nil)

		c := receiptsOf(e, "note.create")
		require.Len(t, c, 1)
		require.Equal(t, "admin", c[0]["kind"])
		require.Equal(t, []string{id}, strs(c[0]["object_ids"]))
		v := receiptsOf(e, "note.version")
		require.Len(t, v, 1)
		require.Equal(t, []string{v2, id}, strs(v[0]["object_ids"]))
		require.Len(t, receiptsOf(e, "note.retire"), 1)
		reads := receiptsOf(e, "block.read")
		require.Len(t, reads, 2, "a 304 is recorded too")
		for i, r := range reads {
			require.Equal(t, "agent_memory", r["kind"])
			require.Empty(t, r["object_ids"], "a read names its notes through its manifest (issue 32)")
			m := r["manifest"].(map[string]any)
			require.Equal(t, r["detail"].(map[string]any)["manifest"], m["hash"])
			item := m["items"].([]any)[0].(map[string]any)
			require.Len(t, m["items"], 1)
			require.Equal(t, v2, item["id"])
			require.Equal(t, "2", fmt.Sprint(item["version"]))
			require.Equal(t, i == 1, r["detail"].(map[string]any)["not_modified"])
		}
		s := receiptsOf(e, "search")
		require.Len(t, s, 1)
		require.Equal(t, []string{v2}, strs(s[0]["object_ids"]))

		all := e.MustDo(http.StatusOK, "GET", "/v1/receipts?limit=1000", e.AdminKey, nil)
		require.NotContains(t, string(all.Body), "Secret", "receipts hold ids, never text")

		var out []models.OutboxEvent
		require.NoError(t, e.DB.NewSelect().Model(&out).Where("space_id = ?", e.SpaceID).Order("seq").Scan(t.Context()))
		require.Len(t, out, 2, "one event per created note (v1, v2)")
		for i, want := range []string{id, v2} {
			require.Equal(t, events.TypeNoteCreated, out[i].Type)
			var ev events.Event
			require.NoError(t, json.Unmarshal([]byte(out[i].Payload), &ev))
			require.Equal(t, want, ev.NoteID)
			require.Equal(t, "procedure", ev.Kind)
			require.Equal(t, "agent", ev.Origin)
			require.Equal(t, "shop-bot", ev.SourceID)
			require.NotContains(t, out[i].Payload, "Secret")
		}

		// A refused write leaves neither receipt nor event.
		before := len(receiptsOf(e, "note.create"))
		requireError(t, e.Do("POST", notesPath, bot, note("t", "ana@example.com")), 422, "personal_data_in_agent_memory")
		require.Len(t, receiptsOf(e, "note.create"), before)
		n, err := e.DB.NewSelect().Model((*models.OutboxEvent)(nil)).Where("space_id = ?", e.SpaceID).Count(t.Context())
		require.NoError(t, err)
		require.EqualValues(t, 2, n)

		// Proposals emit the event too.
		enableNotes(e, map[string]any{"writes": "human_only"})
		pid := e.MustDo(http.StatusAccepted, "POST", notesPath, bot, note("t", "b")).JSON(t)["proposal_id"].(string)
		var last models.OutboxEvent
		require.NoError(t, e.DB.NewSelect().Model(&last).Where("space_id = ?", e.SpaceID).Order("seq DESC").Limit(1).Scan(t.Context()))
		require.Contains(t, last.Payload, pid)
		require.Len(t, receiptsOf(e, "proposal.create"), 1)
	})
}

// GOV-1: parallel writers and readers of one space never fork the chain: every entry is
// there once, in one line, and verify walks it whole.
func TestNoteReceiptChainParallel(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		const agents, each = 8, 6
		keys := make([]string, agents)
		for i := range keys {
			keys[i] = writer(e, fmt.Sprintf("bot-%d", i), "acme")
		}
		before := mustInt(t, e.MustDo(http.StatusOK, "GET", "/v1/receipts/verify", e.AdminKey, nil).JSON(t)["count"])
		var wg sync.WaitGroup
		statuses := make(chan int, agents*each*2)
		for i := 0; i < agents; i++ {
			wg.Add(1)
			go func(key string) {
				defer wg.Done()
				for j := 0; j < each; j++ {
					statuses <- e.Do("POST", notesPath, key, note("Parallel", fmt.Sprintf("Body %d.", j), "visibility", "space")).Status
					statuses <- e.Do("GET", blockPath, key, nil).Status
				}
			}(keys[i])
		}
		wg.Wait()
		close(statuses)
		for s := range statuses {
			require.Contains(t, []int{200, 201}, s)
		}
		v := e.MustDo(http.StatusOK, "GET", "/v1/receipts/verify", e.AdminKey, nil).JSON(t)
		require.Equal(t, true, v["ok"], "%v", v)
		require.Equal(t, before+agents*each*2, mustInt(t, v["count"]))
		var seqs []int64
		require.NoError(t, e.DB.NewSelect().Model((*models.Receipt)(nil)).Column("seq").Where("space_id = ?", e.SpaceID).Order("seq").Scan(t.Context(), &seqs))
		for i, s := range seqs {
			require.EqualValues(t, i+1, s, "seqs are contiguous")
		}
	})
}

// Issue 16: a block read is answered only once its receipt is durable and sealed: as each of
// many concurrent reads returns, its receipt is already in the database with its chain
// position (read straight from the table, with nothing sealing in between).
func TestBlockReadReceiptDurableOnAnswer(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		bot := writer(e, "shop-bot", "acme")
		create(e, bot, note("t", "b", "visibility", "space"))
		sealed := func() (n int) {
			require.NoError(t, e.DB.NewSelect().Model((*models.Receipt)(nil)).ColumnExpr("COUNT(*)").
				Where("space_id = ? AND action = ? AND seq IS NOT NULL", e.SpaceID, "block.read").Scan(t.Context(), &n))
			return n
		}
		e.MustDo(http.StatusOK, "GET", blockPath, bot, nil)
		require.Equal(t, 1, sealed(), "the read's receipt is stored and sealed when the answer comes")

		const readers = 16
		var wg sync.WaitGroup
		for range readers {
			wg.Go(func() {
				r := e.Do("GET", blockPath, bot, nil)
				require.Equal(t, http.StatusOK, r.Status)
				require.GreaterOrEqual(t, sealed(), 2, "this read's receipt is there when it is answered")
			})
		}
		wg.Wait()
		require.Equal(t, 1+readers, sealed())
		v := e.MustDo(http.StatusOK, "GET", "/v1/receipts/verify", e.AdminKey, nil).JSON(t)
		require.Equal(t, true, v["ok"], "%v", v)
		require.Zero(t, mustInt(t, v["unsealed"]))
	})
}

// GOV-1: a receipt changed directly in the database makes verify fail at that entry.
func TestNoteReceiptTamper(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		bot := writer(e, "shop-bot", "acme")
		id := create(e, bot, note("t", "b"))
		create(e, bot, note("t2", "b2"))
		require.Equal(t, true, e.MustDo(http.StatusOK, "GET", "/v1/receipts/verify", e.AdminKey, nil).JSON(t)["ok"])
		var seq int64
		require.NoError(t, e.DB.NewSelect().Model((*models.Receipt)(nil)).Column("seq").
			Where("space_id = ? AND action = ?", e.SpaceID, "note.create").Order("seq").Limit(1).Scan(t.Context(), &seq))
		_, err := e.DB.ExecContext(t.Context(), "UPDATE receipts SET object_ids = ? WHERE space_id = ? AND seq = ?",
			`["`+strings.Replace(id, "note_", "note_x", 1)+`"]`, e.SpaceID, seq)
		require.NoError(t, err)
		v := e.MustDo(http.StatusOK, "GET", "/v1/receipts/verify", e.AdminKey, nil).JSON(t)
		require.Equal(t, false, v["ok"])
		require.Equal(t, "hash_mismatch", v["reason"])
		require.EqualValues(t, fmt.Sprint(seq), fmt.Sprint(v["broken"].(map[string]any)["seq"]))
	})
}

// AM-6 on real input: the customer turns of the ABCD sample, fed as note bodies: every turn
// carrying the scenario's e-mail or phone is refused with 422.
func TestNoteABCDTurns(t *testing.T) {
	data, err := os.ReadFile("../testdata/abcd/abcd_sample.json")
	require.NoError(t, err)
	var convos []struct {
		Scenario struct {
			Personal struct {
				Email string `json:"email"`
				Phone string `json:"phone"`
			} `json:"personal"`
		} `json:"scenario"`
		Original [][2]string `json:"original"`
	}
	require.NoError(t, json.Unmarshal(data, &convos))
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		writer(e, "shop-bot", "acme")
		integ := e.PersonKey("loader", "integration")
		carrying, refusedOthers, turns := 0, 0, 0
		for _, c := range convos {
			for _, turn := range c.Original {
				if turn[0] != "customer" {
					continue
				}
				turns++
				text := turn[1]
				r := e.Do("POST", notesPath, integ, note("Customer turn", text, "source_id", "shop-bot"))
				pd := c.Scenario.Personal
				if (pd.Email != "" && strings.Contains(text, pd.Email)) || (pd.Phone != "" && strings.Contains(text, pd.Phone)) {
					carrying++
					requireError(t, r, 422, "personal_data_in_agent_memory")
				} else if r.Status == 422 {
					refusedOthers++
				}
			}
		}
		require.Equal(t, 3, carrying, "the sample has three turns with the scenario's e-mail or phone")
		t.Logf("%d customer turns; %d carry the scenario's e-mail or phone (all refused); %d others refused", turns, carrying, refusedOthers)
	})
}
