package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/changes"
	"github.com/agentmemory/agentmemory/internal/receipts"
)

func viewsDoc(views ...any) map[string]any {
	out := []any{}
	for i := 0; i+1 < len(views); i += 2 {
		out = append(out, map[string]any{"name": views[i], "tags": views[i+1]})
	}
	return map[string]any{"views": out}
}

// CTX-1: the views document is validated naming the member and written by role security or
// admin only; a refused write changes nothing.
func TestViewsDocumentRules(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		for _, c := range []struct {
			name, member string
			doc          any
		}{
			{"no tags", "views[0].tags", viewsDoc("voice", []string{})},
			{"bad tag", "views[0].tags", viewsDoc("voice", []string{"Refund"})},
			{"tag twice", "views[0].tags", viewsDoc("voice", []string{"a", "a"})},
			{"bad name", "views[0].name", viewsDoc("Voice", []string{"a"})},
			{"name twice", "views[1].name", viewsDoc("voice", []string{"a"}, "voice", []string{"b"})},
			{"unknown member", "views[0].order", map[string]any{"views": []any{map[string]any{"name": "v", "tags": []string{"a"}, "order": 1}}}},
		} {
			m := requireError(t, e.Do("PUT", "/v1/documents/views", e.AdminKey, c.doc), http.StatusBadRequest, errCodeFor(c.name))
			require.Contains(t, m["message"], c.member, "%s: got %v, want the member %s", c.name, m["message"], c.member)
		}
		v, doc := docVersion(t, e, e.AdminKey, "views")
		require.Equal(t, "0", v, "refused writes change nothing")
		require.Equal(t, []any{}, doc["views"])

		integration := e.PersonKey("Ivo", "integration")
		requireError(t, e.Do("PUT", "/v1/documents/views", integration, viewsDoc("voice", []string{"a"})), http.StatusForbidden, "role_required")
		requireError(t, e.Do("PUT", "/v1/documents/views", e.AgentKey("bot", "acme", "agent_memory"), viewsDoc("voice", []string{"a"})), http.StatusForbidden, "role_required")
		e.MustDo(http.StatusOK, "PUT", "/v1/documents/views", e.PersonKey("Sol", "security"), viewsDoc("voice", []string{"a"}))
		e.MustDo(http.StatusOK, "PUT", "/v1/documents/views", e.PersonKey("Ada", "admin"), viewsDoc("voice", []string{"b", "a"}))
		v, doc = docVersion(t, e, e.AdminKey, "views")
		require.Equal(t, "2", v)
		require.Equal(t, []any{map[string]any{"name": "voice", "tags": []any{"b", "a"}}}, doc["views"])
	})
}

// errCodeFor is the error code of a refused views document: unknown members are the strict
// decoder's, the rest invalid_document.
func errCodeFor(name string) string {
	if name == "unknown member" {
		return "unknown_member"
	}
	return "invalid_document"
}

// CTX-1, AM-4: view=voice puts the notes carrying the view's tags first, in the view's order
// (a note counts at its earliest view tag), then the requested tags, then AM-4's order; the
// block is byte-identical for the same notes, view and budget; an unknown view is 400 naming
// view; changing the view's tags changes the ETag even where the text stays the same; the
// block receipt names the notes delivered.
func TestBlockOrderedByView(t *testing.T) {
	eachClocked(t, func(t *testing.T, e *apptest.Env, clk *clock) {
		enableNotes(e, nil)
		bot := writer(e, "shop-bot", "acme")
		plain := create(e, bot, note("Plain", "General advice."))
		clk.Add(time.Second)
		refund := create(e, bot, note("Refund", "Refund steps.", "tags", []string{"refund"}))
		clk.Add(time.Second)
		billing := create(e, bot, note("Billing", "Billing steps.", "tags", []string{"billing"}))
		clk.Add(time.Second)
		both := create(e, bot, note("Both", "Refund a bill.", "tags", []string{"refund", "billing"}))
		clk.Add(time.Second)
		sched := create(e, bot, note("Schedule", "Book slots.", "tags", []string{"scheduling"}))

		get := func(q string, headers ...string) apptest.Response {
			return e.Do("GET", blockPath+q, bot, nil, headers...)
		}
		// Without a views document a view is one more tag (the meaning before CTX-1).
		legacy := get("?max_tokens=2000&view=billing")
		require.Equal(t, 200, legacy.Status, "%s", legacy.Body)
		require.Equal(t, []string{billing, both, plain, refund, sched}, strs(legacy.JSON(t)["note_ids"]))

		e.PutDocument("views", viewsDoc("voice", []string{"billing", "refund"}, "chat", []string{"scheduling"}))
		requireError(t, get("?view=nope"), http.StatusBadRequest, "invalid_member")
		m := requireError(t, get("?view=nope"), http.StatusBadRequest, "invalid_member")
		require.Equal(t, "view", m["member"], "got %v", m)

		r := get("?max_tokens=2000&view=voice&tags=scheduling")
		require.Equal(t, 200, r.Status, "%s", r.Body)
		// billing first (both counts at billing, its earliest view tag; older first), then
		// refund, then the requested tag, then the rest.
		require.Equal(t, []string{billing, both, refund, sched, plain}, strs(r.JSON(t)["note_ids"]))
		require.Equal(t, []string{sched, plain, refund, billing, both}, strs(get("?max_tokens=2000&view=chat").JSON(t)["note_ids"]))
		again := get("?max_tokens=2000&view=voice&tags=scheduling")
		require.Equal(t, r.Body, again.Body, "byte-identical for the same notes, view and budget")
		etag := r.Header.Get("ETag")
		require.Equal(t, etag, again.Header.Get("ETag"))
		require.Equal(t, http.StatusNotModified, get("?max_tokens=2000&view=voice&tags=scheduling", "If-None-Match", etag).Status)

		// The view's order changes: the block and its ETag change.
		e.PutDocument("views", viewsDoc("voice", []string{"refund", "billing"}, "chat", []string{"scheduling"}))
		r2 := get("?max_tokens=2000&view=voice&tags=scheduling")
		require.Equal(t, []string{refund, both, billing, sched, plain}, strs(r2.JSON(t)["note_ids"]))
		require.NotEqual(t, etag, r2.Header.Get("ETag"))
		require.Equal(t, 200, get("?max_tokens=2000&view=voice&tags=scheduling", "If-None-Match", etag).Status)

		// A tag no note carries: the same text, yet a new ETag (the view changed).
		e.PutDocument("views", viewsDoc("voice", []string{"refund", "billing", "unused"}, "chat", []string{"scheduling"}))
		r3 := get("?max_tokens=2000&view=voice&tags=scheduling")
		require.Equal(t, r2.JSON(t)["text"], r3.JSON(t)["text"])
		require.NotEqual(t, r2.Header.Get("ETag"), r3.Header.Get("ETag"))

		// The block's receipt names the delivered notes in order.
		rc := spaceReceipts(t, e, e.AdminKey)
		var last map[string]any
		for _, x := range rc {
			if x.Action == "block.read" {
				require.Empty(t, x.ObjectIDs, "a read names its notes through its manifest (issue 32)")
				require.NotNil(t, x.Manifest)
				last = map[string]any{"ids": x.Manifest.IDs()}
			}
		}
		require.NotNil(t, last)
		require.ElementsMatch(t, []string{refund, both, billing, sched, plain}, last["ids"])
		require.Equal(t, "voice", lastView(rc))
	})
}

// CTX-1: where direct PUT is off the views document changes by a change request that a second
// security person approves, and the block follows it.
func TestViewsByChangeRequest(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		g := newGovSpace(e)
		sec1, sec2 := g.person("Sol", "security"), g.person("Rui", "security")
		requireError(t, e.Do("PUT", "/v1/documents/views", g.admin, viewsDoc("voice", []string{"refund"})), http.StatusConflict, "direct_put_disabled")
		ch := change(t, e.MustDo(http.StatusCreated, "POST", "/v1/documents/views/changes", sec1, viewsDoc("voice", []string{"refund"})))
		require.Equal(t, changes.Pending, ch.Status)
		require.Len(t, listChanges(t, e, sec2, "views", ""), 1)
		applied := change(t, e.MustDo(http.StatusOK, "POST", "/v1/documents/views/changes/"+ch.ID+"/approve", sec2, nil))
		require.Equal(t, changes.Applied, applied.Status)
		v, doc := docVersion(t, e, g.admin, "views")
		require.Equal(t, "1", v)
		require.Equal(t, []any{map[string]any{"name": "voice", "tags": []any{"refund"}}}, doc["views"])

		// The block of that space now knows voice and refuses another name.
		bot := g.e.MustDo(http.StatusCreated, "POST", "/v1/keys", g.admin, map[string]any{"kind": "agent", "agent": "bot", "vendor": "acme", "scopes": []string{"agent_memory"}}).JSON(t)["key"].(string)
		require.Equal(t, 200, e.Do("GET", blockPath+"?view=voice", bot, nil).Status)
		requireError(t, e.Do("GET", blockPath+"?view=chat", bot, nil), http.StatusBadRequest, "invalid_member")
	})
}

// CTX-1: object-types declares operations and systems; a written tag outside the type names,
// operations and systems is stored and reported (unknown_tags) on create, version, duplicate,
// proposal and MCP remember; all known or no vocabulary at all: no unknown_tags member.
func TestUnknownTags(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		bot := writer(e, "shop-bot", "acme")
		noVocabulary := e.MustDo(http.StatusCreated, "POST", notesPath, bot, note("A", "First.", "tags", []string{"whatever"})).JSON(t)
		require.NotContains(t, noVocabulary, "unknown_tags", "a space without vocabulary checks nothing")

		requireError(t, e.Do("PUT", "/v1/documents/object-types", e.AdminKey, map[string]any{"types": []any{}, "operations": []string{"Refund"}}), http.StatusBadRequest, "invalid_document")
		types := apptest.ShopBotTypes()
		types["operations"] = []string{"refund", "cancel"}
		types["systems"] = []string{"sap"}
		e.PutDocument("object-types", types)
		_, doc := docVersion(t, e, e.AdminKey, "object-types")
		require.Equal(t, []any{"refund", "cancel"}, doc["operations"])

		r := e.MustDo(http.StatusCreated, "POST", notesPath, bot, note("B", "Second.", "tags", []string{"refund", "refnud", "sap", "shop-bot", "zap"})).JSON(t)
		require.Equal(t, []any{"refnud", "zap"}, r["unknown_tags"])
		stored := e.MustDo(http.StatusOK, "GET", notesPath+"/"+r["id"].(string), bot, nil).JSON(t)
		require.ElementsMatch(t, []any{"refund", "refnud", "sap", "shop-bot", "zap"}, stored["tags"], "unknown tags are stored")
		require.NotContains(t, stored, "unknown_tags", "a read does not carry the write's report")

		known := e.MustDo(http.StatusCreated, "POST", notesPath, bot, note("C", "Third.", "tags", []string{"cancel"})).JSON(t)
		require.NotContains(t, known, "unknown_tags")
		ver := e.MustDo(http.StatusCreated, "POST", notesPath+"/"+known["id"].(string)+"/versions", bot, map[string]any{"tags": []string{"cancle"}}).JSON(t)
		require.Equal(t, []any{"cancle"}, ver["unknown_tags"])
		dup := e.MustDo(http.StatusOK, "POST", notesPath, bot, note("B", "Second.", "tags", []string{"refund", "refnud", "sap", "shop-bot", "zap"})).JSON(t)
		require.Equal(t, r["id"], dup["duplicate_of"])
		require.Equal(t, []any{"refnud", "zap"}, dup["unknown_tags"])

		cs := mcpSession(t, serveAPI(t, e), bot)
		isErr, out := callTool(t, cs, "remember", map[string]any{"kind": "procedure", "title": "D", "body": "Fourth.", "tags": []string{"sap", "sapp"}})
		require.False(t, isErr, "%v", out)
		require.Equal(t, "stored", out["status"])
		require.Equal(t, []any{"sapp"}, out["unknown_tags"])

		enableNotes(e, map[string]any{"writes": "human_only"})
		prop := e.MustDo(http.StatusAccepted, "POST", notesPath, bot, note("E", "Fifth.", "tags", []string{"refunds"})).JSON(t)
		require.NotEmpty(t, prop["proposal_id"])
		require.Equal(t, []any{"refunds"}, prop["unknown_tags"])
	})
}

// lastView is the view named by the manifest of the last block.read receipt of rc.
func lastView(rc []receipts.Receipt) string {
	view := ""
	for _, x := range rc {
		if x.Action == "block.read" && x.Manifest != nil {
			view = x.Manifest.View
		}
	}
	return view
}
