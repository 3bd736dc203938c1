package api_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/models"
)

// AM-1: a note is stored with id, version 1, origin and source; a person with integration
// writes for an agent naming source_id.
func TestNoteCreate(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		bot := writer(e, "shop-bot", "acme")
		r := e.MustDo(http.StatusCreated, "POST", notesPath, bot, note("Refund steps", "Pull up the account, then validate the purchase.",
			"tags", []string{"refund", "orders"}, "evidence", map[string]any{"conversation_id": "conv-1"}))
		n := r.JSON(t)
		require.Equal(t, "1", n["version"].(interface{ String() string }).String())
		require.Equal(t, "agent", n["origin"])
		require.Equal(t, "shop-bot", n["source_id"])
		require.Equal(t, "acme", n["vendor"])
		require.Equal(t, "source", n["visibility"], "visibility defaults to source")
		require.Equal(t, "active", n["status"])
		require.Nil(t, n["supersedes_note_id"])
		require.Equal(t, map[string]any{"conversation_id": "conv-1"}, n["evidence"])
		require.NotEmpty(t, n["created_at"])

		got := e.MustDo(http.StatusOK, "GET", notesPath+"/"+n["id"].(string), bot, nil).JSON(t)
		require.Equal(t, n, got)

		integ := e.PersonKey("loader", "integration")
		h := e.MustDo(http.StatusCreated, "POST", notesPath, integ, note("Tool quirk", "The ERP posts credits at night.", "source_id", "shop-bot")).JSON(t)
		require.Equal(t, "human", h["origin"])
		require.Equal(t, "shop-bot", h["source_id"])
		require.Equal(t, "acme", h["vendor"], "the vendor comes from the agent's key, never the request")

		requireError(t, e.Do("POST", notesPath, integ, note("x", "y")), 400, "invalid_member")
		requireError(t, e.Do("POST", notesPath, integ, note("x", "y", "source_id", "nobody")), 400, "unknown_source")
		requireError(t, e.Do("POST", notesPath, bot, note("x", "y", "source_id", "other-bot")), 403, "source_mismatch")
		require.Len(t, listIDs(e, integ, ""), 2, "refused writes store nothing")
	})
}

// AM-1: limits in code points, tags, kind, visibility, evidence, valid_until: 400 naming the
// member, nothing stored, never truncated.
func TestNoteLimits(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		bot := writer(e, "shop-bot", "acme")
		tags9 := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}
		bad := []struct {
			name   string
			body   any
			member string
		}{
			{"title 121 code points", note(strings.Repeat("é", 121), "b"), "title"},
			{"empty title", note("  ", "b"), "title"},
			{"body 2001 code points", note("t", strings.Repeat("ç", 2001)), "body"},
			{"empty body", note("t", ""), "body"},
			{"nine tags", note("t", "b", "tags", tags9), "tags"},
			{"upper-case tag", note("t", "b", "tags", []string{"Refund"}), "tags"},
			{"tag with space", note("t", "b", "tags", []string{"a b"}), "tags"},
			{"repeated tag", note("t", "b", "tags", []string{"a", "a"}), "tags"},
			{"unknown kind", note("t", "b", "kind", "diary"), "kind"},
			{"unknown visibility", note("t", "b", "visibility", "world"), "visibility"},
			{"evidence with both ids", note("t", "b", "evidence", map[string]any{"conversation_id": "c", "task_id": "t"}), "evidence"},
			{"evidence with neither", note("t", "b", "evidence", map[string]any{}), "evidence"},
			{"valid_until in the past", note("t", "b", "valid_until", "2001-01-01T00:00:00Z"), "valid_until"},
		}
		for _, tc := range bad {
			r := e.Do("POST", notesPath, bot, tc.body)
			m := requireError(t, r, 400, "invalid_member")
			require.Equal(t, tc.member, m["member"], "%s: got member %v, want %s", tc.name, m["member"], tc.member)
		}
		requireError(t, e.Do("POST", notesPath, bot, `{"kind":"procedure","title":"t","body":"b","titel":"x"}`), 400, "unknown_member")
		require.Empty(t, listIDs(e, bot, ""), "no refused note was stored")

		// The limits themselves are accepted, with multi-byte characters counted as one.
		id := create(e, bot, note(strings.Repeat("é", 120), strings.Repeat("€", 2000), "tags", tags9[:8]))
		n := e.MustDo(http.StatusOK, "GET", notesPath+"/"+id, bot, nil).JSON(t)
		require.Equal(t, strings.Repeat("€", 2000), n["body"], "stored whole")
	})
}

// AM-1, AM-7: an edit is a new version that supersedes and retires the old one (still
// readable); only the owner edits or retires; a person with integration may.
func TestNoteVersionsAndRetire(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		bot := writer(e, "shop-bot", "acme")
		peer := writer(e, "help-bot", "acme")
		rival := writer(e, "rival-bot", "globex")
		v1 := create(e, bot, note("Refund", "Step one.", "visibility", "vendor", "tags", []string{"refund"}))

		v2 := e.MustDo(http.StatusCreated, "POST", notesPath+"/"+v1+"/versions", bot, map[string]any{"body": "Step one, then two."}).JSON(t)
		require.Equal(t, v1, v2["supersedes_note_id"])
		require.Equal(t, "2", v2["version"].(interface{ String() string }).String())
		require.Equal(t, "Refund", v2["title"], "members left out keep their value")
		require.Equal(t, []any{"refund"}, v2["tags"])
		old := e.MustDo(http.StatusOK, "GET", notesPath+"/"+v1, bot, nil).JSON(t)
		require.Equal(t, "retired", old["status"], "the previous version is retired and stays readable")
		require.Equal(t, "Step one.", old["body"])

		requireError(t, e.Do("POST", notesPath+"/"+v1+"/versions", bot, map[string]any{"body": "x"}), 409, "note_not_active")
		id2 := v2["id"].(string)
		requireError(t, e.Do("POST", notesPath+"/"+id2+"/versions", peer, map[string]any{"body": "x"}), 403, "not_note_owner")
		requireError(t, e.Do("POST", notesPath+"/"+id2+"/retire", peer, nil), 403, "not_note_owner")
		requireError(t, e.Do("POST", notesPath+"/"+id2+"/retire", rival, nil), 404, "note_not_found")

		ret := e.MustDo(http.StatusOK, "POST", notesPath+"/"+id2+"/retire", bot, nil).JSON(t)
		require.Equal(t, "retired", ret["status"])
		requireError(t, e.Do("POST", notesPath+"/"+id2+"/retire", bot, nil), 409, "note_not_active")

		other := create(e, bot, note("Other", "Body."))
		integ := e.PersonKey("loader", "integration")
		e.MustDo(http.StatusOK, "POST", notesPath+"/"+other+"/retire", integ, nil)
		require.Equal(t, []string{v1, id2, other}, listIDs(e, bot, "?status=retired"))
		require.Empty(t, listIDs(e, bot, "?status=active"))
	})
}

// AM-2: source notes reach only their owner, vendor notes only the same vendor, space notes
// every agent; another vendor never sees a source or vendor note (list, get, block, search).
func TestNoteVisibility(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		owner := writer(e, "shop-bot", "acme")
		sameVendor := writer(e, "help-bot", "acme")
		otherVendor := writer(e, "rival-bot", "globex")
		src := create(e, owner, note("Source refund", "Refund words here.", "visibility", "source"))
		ven := create(e, owner, note("Vendor refund", "Refund words here.", "visibility", "vendor"))
		spc := create(e, owner, note("Space refund", "Refund words here.", "visibility", "space"))
		want := map[string][]string{
			"owner":       {src, ven, spc},
			"sameVendor":  {ven, spc},
			"otherVendor": {spc},
		}
		keys := map[string]string{"owner": owner, "sameVendor": sameVendor, "otherVendor": otherVendor}
		for who, key := range keys {
			require.Equal(t, want[who], listIDs(e, key, ""), "%s: list", who)
			block := e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/block?max_tokens=2000", key, nil).JSON(t)
			require.ElementsMatch(t, want[who], strs(block["note_ids"]), "%s: block", who)
			found := e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/search?q=refund", key, nil).JSON(t)
			require.ElementsMatch(t, want[who], ids(found["notes"]), "%s: search", who)
			for _, id := range []string{src, ven, spc} {
				r := e.Do("GET", notesPath+"/"+id, key, nil)
				if slices.Contains(want[who], id) {
					require.Equal(t, 200, r.Status, "%s reads %s", who, id)
				} else {
					requireError(t, r, 404, "note_not_found")
				}
			}
		}
		// A person with integration reads as a named agent.
		integ := e.PersonKey("loader", "integration")
		block := e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/block?source_id=rival-bot", integ, nil).JSON(t)
		require.Equal(t, []string{spc}, strs(block["note_ids"]))
	})
}

// AM-3: off by default: writes and reads are refused, the block is empty with enabled false.
func TestNotesFeatureOff(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		bot := writer(e, "shop-bot", "acme")
		requireError(t, e.Do("POST", notesPath, bot, note("t", "b")), 403, "feature_disabled")
		requireError(t, e.Do("GET", notesPath, bot, nil), 403, "feature_disabled")
		b := e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/block", bot, nil)
		require.JSONEq(t, `{"text":"","enabled":false,"note_ids":[],"tokens":0}`, string(b.Body))
		require.NotEmpty(t, b.Header.Get("ETag"))
		s := e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/search?q=refund", bot, nil)
		require.JSONEq(t, `{"enabled":false,"notes":[]}`, string(s.Body))

		enableNotes(e, nil)
		create(e, bot, note("t", "b"))
		e.PutDocument("features", map[string]any{"agent_memory": map[string]any{"enabled": false}})
		b = e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/block", bot, nil)
		require.JSONEq(t, `{"text":"","enabled":false,"note_ids":[],"tokens":0}`, string(b.Body))
	})
}

// AM-10: scopes and roles.
func TestNoteScopes(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		bot := writer(e, "shop-bot", "acme")
		create(e, bot, note("t", "b"))
		reader := e.AgentKey("shop-bot", "acme", "agent_memory")
		ctxOnly := e.AgentKey("shop-bot", "acme", "context")
		stateOnly := e.AgentKey("shop-bot", "acme", "agent_state")
		compliance := e.PersonKey("c", "compliance")
		integ := e.PersonKey("i", "integration")

		require.Len(t, listIDs(e, reader, ""), 1)
		e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/block", ctxOnly, nil)
		e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/search?q=b", ctxOnly, nil)
		requireError(t, e.Do("POST", notesPath, reader, note("t", "b")), 403, "scope_required")
		requireError(t, e.Do("GET", "/v1/agent-memory/block", stateOnly, nil), 403, "scope_required")
		requireError(t, e.Do("GET", notesPath, stateOnly, nil), 403, "scope_required")
		requireError(t, e.Do("POST", notesPath, compliance, note("t", "b", "source_id", "shop-bot")), 403, "role_required")
		requireError(t, e.Do("GET", "/v1/agent-memory/block", compliance, nil), 403, "role_required")
		requireError(t, e.Do("GET", "/v1/agent-memory/block", integ, nil), 400, "invalid_member")
		requireError(t, e.Do("GET", "/v1/agent-memory/block?source_id=other-bot", bot, nil), 403, "source_mismatch")
		requireError(t, e.Do("GET", "/v1/agent-memory/proposals", integ, nil), 403, "role_required")
		requireError(t, e.Do("GET", notesPath, "", nil), 401, "missing_key")
	})
}

// AM-7: the 21st note of an agent within an hour is 429 with Retry-After in whole seconds
// until the oldest counted write leaves the hour; refused writes (400, 422) do not count;
// people's writes do not count against an agent.
func TestNoteRateLimit(t *testing.T) {
	eachClocked(t, func(t *testing.T, e *apptest.Env, clk *clock) {
		enableNotes(e, nil)
		bot := writer(e, "shop-bot", "acme")
		integ := e.PersonKey("loader", "integration")
		for i := 0; i < 20; i++ {
			create(e, bot, note(fmt.Sprintf("Note %d", i), "Body."))
			requireError(t, e.Do("POST", notesPath, bot, note("Note", "mail ana@example.com")), 422, "personal_data_in_agent_memory")
			requireError(t, e.Do("POST", notesPath, bot, note("", "Body.")), 400, "invalid_member")
			create(e, integ, note(fmt.Sprintf("By a person %d", i), "Body.", "source_id", "shop-bot"))
			clk.Add(time.Minute)
		}
		clk.Add(10*time.Minute + 500*time.Millisecond) // t0 + 30 min 0.5 s
		r := e.Do("POST", notesPath, bot, note("Note", "Body."))
		m := requireError(t, r, 429, "note_rate_limited")
		require.Equal(t, "1800", r.Header.Get("Retry-After"), "the oldest counted write (t0) leaves the hour at t0+60min")
		require.EqualValues(t, "1800", m["retry_after"].(interface{ String() string }).String())

		// Another agent is not limited by this one.
		create(e, writer(e, "help-bot", "acme"), note("Note", "Body."))
		// A proposal of the same agent counts as well (checked before storing): still 429.
		clk.Add(1799 * time.Second)
		r = e.Do("POST", notesPath, bot, note("Note", "Body."))
		require.Equal(t, 429, r.Status)
		require.Equal(t, "1", r.Header.Get("Retry-After"))
		clk.Add(time.Second) // t0 + 60 min: the first write leaves the hour
		create(e, bot, note("Note 20", "Body."))
		r = e.Do("POST", notesPath, bot, note("Note 21", "Body."))
		require.Equal(t, 429, r.Status, "the second write (t0+1min) is still in the hour")
		require.Equal(t, "60", r.Header.Get("Retry-After"))
	})
}

// AM-7: the cap of active notes per source: 409 note_cap_reached; retiring frees a place;
// edits do not add.
func TestNoteCap(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, map[string]any{"max_notes_per_source": 3})
		bot := writer(e, "shop-bot", "acme")
		first := create(e, bot, note("1", "b"))
		create(e, bot, note("2", "b"))
		create(e, bot, note("3", "b"))
		m := requireError(t, e.Do("POST", notesPath, bot, note("4", "b")), 409, "note_cap_reached")
		require.EqualValues(t, "3", m["max_notes_per_source"].(interface{ String() string }).String())
		e.MustDo(http.StatusCreated, "POST", notesPath+"/"+first+"/versions", bot, map[string]any{"title": "1b"})
		e.MustDo(http.StatusOK, "POST", notesPath+"/"+listIDs(e, bot, "?status=active")[0]+"/retire", bot, nil)
		create(e, bot, note("4", "b"))
		require.Len(t, listIDs(e, bot, "?status=active"), 3)
	})
}

// AM-7: Idempotency-Key: the same key and body returns the first answer and writes nothing;
// the same key with another body is 409.
func TestNoteIdempotency(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		bot := writer(e, "shop-bot", "acme")
		first := e.MustDo(http.StatusCreated, "POST", notesPath, bot, note("t", "b"), "Idempotency-Key", "k-1")
		again := e.MustDo(http.StatusCreated, "POST", notesPath, bot, note("t", "b"), "Idempotency-Key", "k-1")
		require.JSONEq(t, string(first.Body), string(again.Body))
		require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
		requireError(t, e.Do("POST", notesPath, bot, note("t", "other"), "Idempotency-Key", "k-1"), 409, "idempotency_key_reused")
		require.Len(t, listIDs(e, bot, ""), 1)
		require.Len(t, receiptsOf(e, "note.create"), 1, "a replay leaves no receipt")

		// Keys are per acting key: another agent's k-1 is its own.
		other := writer(e, "help-bot", "acme")
		e.MustDo(http.StatusCreated, "POST", notesPath, other, note("t", "b"), "Idempotency-Key", "k-1")
		// Edits take keys too.
		id := first.JSON(t)["id"].(string)
		v := e.MustDo(http.StatusCreated, "POST", notesPath+"/"+id+"/versions", bot, map[string]any{"body": "b2"}, "Idempotency-Key", "k-2")
		v2 := e.MustDo(http.StatusCreated, "POST", notesPath+"/"+id+"/versions", bot, map[string]any{"body": "b2"}, "Idempotency-Key", "k-2")
		require.JSONEq(t, string(v.Body), string(v2.Body))
	})
}

// AM-7, WM-3: the Idempotency-Key value is stored only as a keyed hash (an e-mail used as a
// key never reaches the database), the semantics stay (same key: the first answer; same key
// with another body: 409), and a key over 200 characters or outside printable ASCII is 400
// naming the header, with nothing stored.
func TestNoteIdempotencyKeyStoredHashed(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		bot := writer(e, "shop-bot", "acme")
		const key = "maria.silva@example.com"
		first := e.MustDo(http.StatusCreated, "POST", notesPath, bot, note("t", "b"), "Idempotency-Key", key)
		again := e.MustDo(http.StatusCreated, "POST", notesPath, bot, note("t", "b"), "Idempotency-Key", key)
		require.JSONEq(t, string(first.Body), string(again.Body))
		require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
		requireError(t, e.Do("POST", notesPath, bot, note("t", "other"), "Idempotency-Key", key), 409, "idempotency_key_reused")
		id := first.JSON(t)["id"].(string)
		e.MustDo(http.StatusCreated, "POST", notesPath+"/"+id+"/versions", bot, map[string]any{"body": "b2"}, "Idempotency-Key", "edit:"+key)
		requireError(t, e.Do("POST", notesPath+"/"+id+"/versions", bot, map[string]any{"body": "b3"}, "Idempotency-Key", "edit:"+key), 409, "idempotency_key_reused")

		text := dbText(t, e)
		require.False(t, strings.Contains(strings.ToLower(text), "maria.silva"), "got the key's value in the database, want it nowhere")
		var stored []string
		require.NoError(t, e.DB.NewSelect().Model((*models.NoteRequest)(nil)).Column("idem_key").Order("idem_key").Scan(context.Background(), &stored))
		want := []string{e.Hasher.Hash(e.SpaceID, "idempotency-key", key), e.Hasher.Hash(e.SpaceID, "idempotency-key", "edit:"+key)}
		slices.Sort(want)
		require.Equal(t, want, stored, "got %v, want the keyed hashes", stored)

		bad := map[string]string{
			"201 characters": strings.Repeat("k", 201),
			"space":          "a b",
			"non-ASCII":      "clé",
			"tab":            "a\tb",
		}
		for name, k := range bad {
			r := requireError(t, e.Do("POST", notesPath, bot, note("t", name), "Idempotency-Key", k), 400, "invalid_header")
			require.Equal(t, "Idempotency-Key", r["member"], name)
			r = requireError(t, e.Do("POST", notesPath+"/"+id+"/versions", bot, map[string]any{"body": name}, "Idempotency-Key", k), 400, "invalid_header")
			require.Equal(t, "Idempotency-Key", r["member"], name)
		}
		e.MustDo(http.StatusCreated, "POST", notesPath, bot, note("t", "b200"), "Idempotency-Key", strings.Repeat("k", 200))
		require.Len(t, listIDs(e, bot, "?status=active"), 2, "refused keys store nothing")
	})
}
