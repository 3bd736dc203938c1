package console_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/knowledge"
	"github.com/agentmemory/agentmemory/internal/llm"
	"github.com/agentmemory/agentmemory/internal/llm/llmtest"
)

// previewEnv is a space with agent memory and knowledge on, a vocabulary (types, operations,
// systems), two views, notes of shop-bot tagged for them, and a base the vendor may read.
type previewEnv struct {
	e                               *apptest.Env
	kb                              string
	plain, order, refund, sap, typo string
}

func newPreviewEnv(t *testing.T, e *apptest.Env) previewEnv {
	emb, err := llm.New(llm.Config{Host: llmtest.NewEmbed(t).URL, Model: "unused"})
	require.NoError(t, err)
	e.App.Knowledge.Embedder = emb
	e.PutDocument("features", map[string]any{"agent_memory": map[string]any{"enabled": true}, "knowledge": map[string]any{"enabled": true}})
	e.PutDocument("object-types", map[string]any{
		"types":      []any{map[string]any{"type": "order", "fields": map[string]any{"status": map[string]any{"type": "enum", "values": []string{"open", "refunded"}}}}},
		"operations": []string{"refund", "cancel"}, "systems": []string{"sap"}})
	w := e.AgentKey("shop-bot", "acme", "agent_memory", "agent_memory:write")
	create := func(title, body string, tags ...string) string {
		r := e.MustDo(http.StatusCreated, http.MethodPost, "/v1/agent-memory/notes", w, map[string]any{"kind": "procedure", "title": title, "body": body, "tags": tags})
		return r.JSON(t)["id"].(string)
	}
	c := previewEnv{e: e}
	c.plain = create("Greeting", "Greet once, then get to the point.")
	c.order = create("Order lookup", "Look the order up by its number before anything else.", "order")
	c.refund = create("Refunds", "Refunds go back to the original payment method.", "refund", "order")
	c.sap = create("SAP codes", "Quote the SAP document number when a refund is booked.", "sap")
	c.typo = create("Cancel window", "A cancel is free within two hours of the order.", "refnud")

	ctx := context.Background()
	admin, err := auth.Authenticate(ctx, e.DB, e.AdminKey)
	require.NoError(t, err)
	b, err := e.App.Knowledge.CreateBase(ctx, admin, knowledge.CreateBaseRequest{Name: "handbook", Settings: knowledge.Settings{Readers: &knowledge.Readers{Vendors: []string{"acme"}}}})
	require.NoError(t, err)
	c.kb = b.ID
	d, _, err := e.App.Knowledge.Submit(ctx, admin, b.ID, knowledge.SubmitRequest{Text: "Refunds of card payments reach the card within five business days.", SourceURI: "kb://refund-card", Version: "v1"})
	require.NoError(t, err)
	_, err = e.App.Knowledge.Ingest(ctx, d.ID)
	require.NoError(t, err)
	return c
}

var (
	deliveredPattern = regexp.MustCompile(`(?s)<ol class="delivered">(.*?)</ol>`)
	noteLinkPattern  = regexp.MustCompile(`href="/console/notes/(note_[^"]+)"`)
	tokenRowPattern  = regexp.MustCompile(`<th scope="row">([^<]+)</th><td class="num">(-?\d+)</td>`)
)

// deliveredIDs returns the note ids of the page's n-th list of delivered notes (0: the block's).
func deliveredIDs(t *testing.T, body string, n int) []string {
	t.Helper()
	lists := deliveredPattern.FindAllStringSubmatch(body, -1)
	require.Greater(t, len(lists), n, "the page lists the delivered notes")
	var out []string
	for _, m := range noteLinkPattern.FindAllStringSubmatch(lists[n][1], -1) {
		out = append(out, m[1])
	}
	return out
}

// tokenRows returns the page's token table: part name -> count.
func tokenRows(body string) map[string]int {
	out := map[string]int{}
	for _, m := range tokenRowPattern.FindAllStringSubmatch(body, -1) {
		n, _ := strconv.Atoi(m[2]) // the pattern admits digits only
		out[m[1]] = n
	}
	return out
}

// preText returns the unescaped text of the page's <pre> labelled label.
func preText(t *testing.T, body, label string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<pre class="block" aria-label="` + label + `">(.*?)</pre>`).FindStringSubmatch(body)
	require.NotNil(t, m, "the page shows %s", label)
	return html.UnescapeString(m[1])
}

func jsonInt(t *testing.T, v any) int {
	t.Helper()
	n, err := strconv.Atoi(v.(interface{ String() string }).String())
	require.NoError(t, err)
	return n
}

func contextReads(t *testing.T, e *apptest.Env) int {
	t.Helper()
	n, err := e.DB.NewSelect().Table("receipts").Where("space_id = ? AND action = ?", e.SpaceID, "context.read").Count(t.Context())
	require.NoError(t, err)
	return int(n)
}

// Issue 28: the block preview runs the context call as the chosen agent. Its view picker lists
// the space's views (none before a views document), the task object types come from the
// vocabulary; choosing a view changes the order of notes; the texts, token counts, ids and
// ETag are the context call's (POST /v1/context with source_id); each preview leaves one
// context.read receipt naming the person.
func TestConsoleContextPreview(t *testing.T) {
	each(t, func(t *testing.T, e *apptest.Env, _ *clock) {
		enableNotes(e, nil)
		e.AgentKey("shop-bot", "acme", "agent_memory")
		person := e.PersonKey("Ivo", "integration")
		b := signIn(t, e, person)
		pg := b.get("/console/notes/block")
		require.Equal(t, http.StatusOK, pg.Status)
		require.Contains(t, pg.Body, "This space declares no views")
		require.Contains(t, pg.Body, `<input id="b-types" name="types"`, "no vocabulary: the object types are typed")
		require.Contains(t, pg.Body, "Knowledge is off for this space")

		c := newPreviewEnv(t, e)
		e.PutDocument("views", map[string]any{"views": []any{
			map[string]any{"name": "voice", "tags": []string{"refund"}}, map[string]any{"name": "backoffice", "tags": []string{"sap", "order"}}}})
		pg = b.get("/console/notes/block?agent=shop-bot")
		require.Equal(t, http.StatusOK, pg.Status)
		require.Contains(t, pg.Body, `<option value="voice">voice — refund</option>`)
		require.Contains(t, pg.Body, `<option value="backoffice">backoffice — sap, order</option>`)
		for _, tag := range []string{"order", "refund", "cancel", "sap"} {
			require.Contains(t, pg.Body, `<input type="checkbox" name="types" value="`+tag+`">`)
		}
		require.Contains(t, pg.Body, `<option value="`+c.kb+`">handbook</option>`)
		require.Contains(t, pg.Body, "leaves one <code>context.read</code> receipt")
		require.NotContains(t, pg.Body, "<script")

		form := url.Values{"agent": {"shop-bot"}, "view": {"voice"}, "types": {"order"}, "max_tokens": {"1500"},
			"block_max_tokens": {"300"}, "include_agent_memory": {"on"}, "kb": {c.kb}, "query": {"refund card payments"}}
		before := contextReads(t, e)
		voice := b.post("/console/notes/block", form)
		require.Equal(t, http.StatusOK, voice.Status, voice.Body)
		require.Equal(t, before+1, contextReads(t, e), "a preview leaves one context.read receipt")
		ivo, err := auth.Authenticate(t.Context(), e.DB, person)
		require.NoError(t, err)
		mine, err := e.DB.NewSelect().Table("receipts").Where("space_id = ? AND action = ? AND actor_key_id = ?", e.SpaceID, "context.read", ivo.KeyID).Count(t.Context())
		require.NoError(t, err)
		require.EqualValues(t, 1, mine, "the receipt names the person who previewed")
		require.Equal(t, []string{c.refund, c.order, c.plain, c.sap, c.typo}, deliveredIDs(t, voice.Body, 0), "voice: refund first, then the task's object type")
		require.ElementsMatch(t, []string{c.refund, c.order}, deliveredIDs(t, voice.Body, 1), "the task section: the notes tagged order")
		require.Contains(t, voice.Body, `<span class="tag unknown" title="not in the space's vocabulary">refnud</span>`, "a delivered note's unknown tag is marked")
		require.Contains(t, voice.Body, `<span class="tag">refund</span>`)

		// The same call through REST: the same texts, counts, ids and ETag.
		rest := e.MustDo(http.StatusOK, http.MethodPost, "/v1/context", e.PersonKey("Int2", "integration"), map[string]any{
			"source_id": "shop-bot", "view": "voice", "task": map[string]any{"object_types": []string{"order"}}, "max_tokens": 1500,
			"block_max_tokens": 300, "include_agent_memory": true, "knowledge": map[string]any{"kbs": []string{c.kb}, "query": "refund card payments"}}).JSON(t)
		require.Equal(t, rest["system_block"], preText(t, voice.Body, "System block text"))
		require.Equal(t, rest["context"], preText(t, voice.Body, "Context text"))
		require.Contains(t, voice.Body, "within five business days")
		tok := rest["tokens"].(map[string]any)
		rows := tokenRows(voice.Body)
		require.Equal(t, jsonInt(t, tok["system_block"]), rows["System block"])
		require.Equal(t, jsonInt(t, tok["task_notes"]), rows["Task notes"])
		require.Equal(t, jsonInt(t, tok["knowledge"]), rows["Knowledge"])
		require.Equal(t, jsonInt(t, tok["total"]), rows["Total"])
		require.Positive(t, rows["Knowledge"])
		require.Contains(t, voice.Body, `max="1500" value="`+strconv.Itoa(rows["Total"])+`"`, "the total is drawn against the budget")
		require.Contains(t, voice.Body, "<code>"+html.EscapeString(rest["etag"].(string))+"</code>")
		for _, id := range rest["chunk_ids"].([]any) {
			require.Contains(t, voice.Body, "<li><code>"+id.(string)+"</code></li>")
		}

		// Another view, another order; without knowledge or a task section the context is empty.
		form = url.Values{"agent": {"shop-bot"}, "view": {"backoffice"}}
		back := b.post("/console/notes/block", form)
		require.Equal(t, http.StatusOK, back.Status, back.Body)
		require.Equal(t, []string{c.sap, c.order, c.refund, c.plain, c.typo}, deliveredIDs(t, back.Body, 0), "backoffice: sap, then order (oldest first), then the rest")
		require.Zero(t, tokenRows(back.Body)["Knowledge"])
		require.Contains(t, back.Body, "The context is empty")
		require.Contains(t, back.Body, `<option value="backoffice" selected>`, "the form keeps the choice")
	})
}

// Issue 28: bad input on the preview is a clear refusal naming the field, with the form kept,
// never a 500, and no receipt; a reviewer may not preview; a POST without CSRF is 403.
func TestConsoleContextPreviewRefusals(t *testing.T) {
	each(t, func(t *testing.T, e *apptest.Env, _ *clock) {
		enableNotes(e, nil)
		newPreviewEnv(t, e)
		e.PutDocument("views", map[string]any{"views": []any{map[string]any{"name": "voice", "tags": []string{"refund"}}}})
		b := signIn(t, e, e.PersonKey("Ivo", "integration"))
		for _, c := range []struct {
			name   string
			form   url.Values
			status int
			want   string
		}{
			{"unknown view", url.Values{"agent": {"shop-bot"}, "view": {"chat"}}, http.StatusBadRequest, `View: no view &#34;chat&#34;`},
			{"max tokens too small", url.Values{"agent": {"shop-bot"}, "max_tokens": {"20"}}, http.StatusBadRequest, "Max tokens: max_tokens is from 50 to 10000"},
			{"max tokens too large", url.Values{"agent": {"shop-bot"}, "max_tokens": {"20000"}}, http.StatusBadRequest, "Max tokens: max_tokens is from 50 to 10000"},
			{"max tokens not a number", url.Values{"agent": {"shop-bot"}, "max_tokens": {"lots"}}, http.StatusBadRequest, "Max tokens: max_tokens is a whole number"},
			{"block share over the budget", url.Values{"agent": {"shop-bot"}, "max_tokens": {"100"}, "block_max_tokens": {"300"}}, http.StatusBadRequest, "Block share: block_max_tokens is at most max_tokens"},
			{"task section without object types", url.Values{"agent": {"shop-bot"}, "include_agent_memory": {"on"}}, http.StatusBadRequest, "Include agent memory: include_agent_memory needs task.object_types"},
			{"query without a base", url.Values{"agent": {"shop-bot"}, "query": {"refunds"}}, http.StatusBadRequest, "Knowledge base: choose a knowledge base"},
			{"no agent", url.Values{"view": {"voice"}}, http.StatusBadRequest, "Agent: choose the agent"},
			{"unknown agent", url.Values{"agent": {"nobody"}}, http.StatusBadRequest, "Agent: source_id names no agent of this space"},
		} {
			before := contextReads(t, e)
			b.get("/console/notes/block")
			r := b.post("/console/notes/block", c.form)
			require.Equal(t, c.status, r.Status, "%s: %s", c.name, r.Body)
			require.Contains(t, r.Body, c.want, c.name)
			require.Contains(t, r.Body, `role="alert"`, c.name)
			require.Contains(t, r.Body, `<form method="post" action="/console/notes/block"`, "%s: the form is kept", c.name)
			require.Equal(t, before, contextReads(t, e), "%s: a refused preview leaves no receipt", c.name)
		}
		r := b.post("/console/notes/block", url.Values{"agent": {"shop-bot"}, "max_tokens": {"lots"}, "view": {"voice"}})
		require.Contains(t, r.Body, `value="lots"`, "the typed value is kept")
		require.Contains(t, r.Body, `<option value="voice" selected>`)

		reviewer := signIn(t, e, e.PersonKey("Rui", "reviewer"))
		require.Equal(t, http.StatusForbidden, reviewer.get("/console/notes/block").Status)
		require.Equal(t, http.StatusForbidden, reviewer.post("/console/notes/block", url.Values{"agent": {"shop-bot"}}).Status)
		// An admin without integration sees the form, but the service refuses to read as an agent.
		admin := signIn(t, e, e.PersonKey("Ada", "admin"))
		admin.get("/console/notes/block")
		r = admin.post("/console/notes/block", url.Values{"agent": {"shop-bot"}})
		require.Equal(t, http.StatusForbidden, r.Status)
		require.Contains(t, r.Body, "integration")
		require.Equal(t, http.StatusForbidden, b.post("/console/notes/block", url.Values{"csrf": {""}, "agent": {"shop-bot"}}).Status)
	})
}

// CTX-1 in the Console: a note's tags outside the space's vocabulary are marked on its page
// (with what to do) and in the list; known tags are not.
func TestConsoleUnknownTags(t *testing.T) {
	each(t, func(t *testing.T, e *apptest.Env, _ *clock) {
		enableNotes(e, nil)
		c := newPreviewEnv(t, e)
		b := signIn(t, e, e.PersonKey("Ivo", "integration"))
		typo := b.get("/console/notes/" + c.typo)
		require.Equal(t, http.StatusOK, typo.Status)
		require.Contains(t, typo.Body, `<span class="tag unknown" title="not in the space's vocabulary">refnud</span>`)
		require.Contains(t, typo.Body, "Unknown tag:</strong> <span class=\"tag unknown\">refnud</span>")
		known := b.get("/console/notes/" + c.refund)
		require.Contains(t, known.Body, `<span class="tag">refund</span>`)
		require.NotContains(t, known.Body, "Unknown tag")
		list := b.get("/console/notes?agent=shop-bot")
		require.Contains(t, list.Body, `<span class="tag unknown" title="not in the space's vocabulary">refnud</span>`)
		require.Contains(t, list.Body, `<span class="tag">sap</span>`)
		require.True(t, strings.Contains(b.get("/console/settings").Body, `id="doc-views"`), "Settings edits the views document")
	})
}
