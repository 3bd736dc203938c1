package console_test

import (
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
)

var (
	seqCell   = regexp.MustCompile(`<td class="num">(\d+)</td>`)
	olderLink = regexp.MustCompile(`href="([^"]+)">Older →`)
	newerLink = regexp.MustCompile(`href="([^"]+)">← Newer`)
	kindCell  = regexp.MustCompile(`<td><span class="badge">([a-z_]+)</span></td>`)
)

// seqsOf returns the receipt numbers of a Receipts page, in the page's order.
func seqsOf(t *testing.T, body string) []int {
	t.Helper()
	var out []int
	for _, m := range seqCell.FindAllStringSubmatch(body, -1) {
		n, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		out = append(out, n)
	}
	return out
}

func linkOf(t *testing.T, re *regexp.Regexp, body string) string {
	t.Helper()
	m := re.FindStringSubmatch(body)
	require.NotNil(t, m, "the page has the link %s", re)
	return html.UnescapeString(m[1])
}

// Issue 27: receipts newest first, filters kept across pages, an agent's note labelled by
// what happened and by whom (the spec's kind still shown).
func TestConsoleReceiptsNewestFirstFiltersKept(t *testing.T) {
	each(t, func(t *testing.T, e *apptest.Env, _ *clock) {
		enableNotes(e, nil)
		bot := e.AgentKey("shop-bot", "acme", "agent_memory", "agent_memory:write")
		e.MustDo(http.StatusCreated, http.MethodPost, "/v1/agent-memory/notes", bot, map[string]any{
			"kind": "procedure", "title": "Returns", "body": "Offer an exchange."})
		for i := 0; i < 56; i++ {
			e.PersonKey(fmt.Sprintf("P%02d", i), "reviewer") // key.create, kind admin
			if i%8 == 0 {
				e.MustDo(http.StatusOK, http.MethodGet, "/v1/agent-memory/block", bot, nil) // block.read, agent_memory
			}
		}
		b := signIn(t, e, e.AdminKey)
		all := b.get("/console/receipts")
		require.Equal(t, http.StatusOK, all.Status)
		seqs := seqsOf(t, all.Body)
		require.Len(t, seqs, 50)
		for i := 1; i < len(seqs); i++ {
			require.Greater(t, seqs[i-1], seqs[i], "newest first")
		}
		require.NotContains(t, all.Body, "← Newer", "the first page is the newest")

		// Filtered by kind: every page keeps the filter, in both directions.
		first := b.get("/console/receipts?kind=admin")
		firstSeqs := seqsOf(t, first.Body)
		require.Len(t, firstSeqs, 50)
		older := linkOf(t, olderLink, first.Body)
		require.Contains(t, older, "kind=admin")
		second := b.get(older)
		secondSeqs := seqsOf(t, second.Body)
		require.NotEmpty(t, secondSeqs)
		require.Less(t, secondSeqs[0], firstSeqs[len(firstSeqs)-1], "the older page continues where the first stopped")
		for _, body := range []string{first.Body, second.Body} {
			for _, m := range kindCell.FindAllStringSubmatch(body, -1) {
				require.Equal(t, "admin", m[1], "the filter holds on every page")
			}
		}
		require.NotContains(t, second.Body, "Older →", "the oldest page")
		newer := linkOf(t, newerLink, second.Body)
		require.Contains(t, newer, "kind=admin")
		require.Equal(t, firstSeqs, seqsOf(t, b.get(newer).Body), "Newer leads back to the first page")
		// Verify keeps the filters too.
		v := b.get("/console/receipts/verify?kind=admin")
		require.Contains(t, v.Body, "The chain verifies")
		require.Equal(t, firstSeqs, seqsOf(t, v.Body))

		// The agent's note: what happened, by whom; the receipt kind stays visible.
		notes := b.get("/console/receipts?kind=admin&actor=" + keyIDOf(t, e, "agent", "shop-bot"))
		require.Contains(t, notes.Body, "<strong>note created</strong> <code class=\"muted\">note.create</code>")
		require.Contains(t, notes.Body, "agent shop-bot (acme)")
		require.Contains(t, notes.Body, `<span class="badge">admin</span>`)
	})
}

// keyIDOf returns the id of the key of kind named name (a person's name or an agent's).
func keyIDOf(t *testing.T, e *apptest.Env, kind, name string) string {
	t.Helper()
	col := "name"
	if kind == "agent" {
		col = "agent"
	}
	var id string
	require.NoError(t, e.DB.NewSelect().Table("api_keys").Column("id").Where("kind = ? AND "+col+" = ?", kind, name).Limit(1).Scan(t.Context(), &id))
	return id
}

// Issue 27: a receipt's detail view: what it names (notes linked, by kind), the actor, its
// detail, and its inclusion proof checked; a changed receipt shows its proof failing.
func TestConsoleReceiptDetail(t *testing.T) {
	each(t, func(t *testing.T, e *apptest.Env, _ *clock) {
		enableNotes(e, nil)
		bot := e.AgentKey("shop-bot", "acme", "agent_memory", "agent_memory:write")
		noteID := e.MustDo(http.StatusCreated, http.MethodPost, "/v1/agent-memory/notes", bot, map[string]any{
			"kind": "procedure", "title": "Returns", "body": "Offer an exchange."}).JSON(t)["id"].(string)
		b := signIn(t, e, e.PersonKey("Cora", "compliance"))
		list := b.get("/console/receipts?kind=admin")
		var id string
		require.NoError(t, e.DB.NewSelect().Table("receipts").Column("id").Where("action = ?", "note.create").Scan(t.Context(), &id))
		require.Contains(t, list.Body, `href="/console/receipts/`+id+`?back=kind%3dadmin"`)

		d := b.get("/console/receipts/" + id + "?back=kind%3Dadmin")
		require.Equal(t, http.StatusOK, d.Status, d.Body)
		require.Contains(t, d.Body, "<h1>note created</h1>")
		require.Contains(t, d.Body, `<span class="badge">admin</span>`)
		require.Contains(t, d.Body, "by <strong>agent shop-bot (acme)</strong>")
		require.Contains(t, d.Body, `<dt>note</dt><dd><div><a href="/console/notes/`+noteID+`"><code>`+noteID+`</code></a></div></dd>`)
		require.Contains(t, d.Body, "<dt>source_id</dt><dd class=\"clip\"><code>shop-bot</code></dd>")
		require.Contains(t, d.Body, `<span class="badge ok">proof verifies</span>`)
		require.Contains(t, d.Body, "The inclusion proof verifies")
		require.Contains(t, d.Body, `<a href="/console/receipts?kind=admin">Receipts</a>`, "back to the filtered list")

		// A receipt changed behind the service: its proof fails, and the page says so.
		_, err := e.DB.NewUpdate().Table("receipts").Set("action = ?", "note.retire").Where("id = ?", id).Exec(t.Context())
		require.NoError(t, err)
		d = b.get("/console/receipts/" + id)
		require.Equal(t, http.StatusOK, d.Status)
		require.Contains(t, d.Body, `<span class="badge bad">proof fails</span>`)
		require.Contains(t, d.Body, "was changed after it was sealed")

		// Unknown ids, and another space's receipt, are 404 (with the Console's page).
		require.Equal(t, http.StatusNotFound, b.get("/console/receipts/rcpt_nope").Status)
		otherSpace, _ := e.NewSpace("other", false)
		var foreign string
		require.NoError(t, e.DB.NewSelect().Table("receipts").Column("id").Where("space_id = ?", otherSpace).Limit(1).Scan(t.Context(), &foreign))
		require.True(t, strings.HasPrefix(foreign, "rcpt_"))
		require.Equal(t, http.StatusNotFound, b.get("/console/receipts/"+foreign).Status)
	})
}

// A block read's receipt names its notes through a manifest (issue 32): its page lists the
// notes the read delivered, linked; a manifest changed behind the service makes the page
// say so instead of showing a verified proof.
func TestConsoleBlockReadShowsItsManifest(t *testing.T) {
	each(t, func(t *testing.T, e *apptest.Env, _ *clock) {
		enableNotes(e, nil)
		bot := e.AgentKey("shop-bot", "acme", "agent_memory", "agent_memory:write")
		noteID := e.MustDo(http.StatusCreated, http.MethodPost, "/v1/agent-memory/notes", bot, map[string]any{
			"kind": "procedure", "title": "Returns", "body": "Offer an exchange."}).JSON(t)["id"].(string)
		e.MustDo(http.StatusOK, http.MethodGet, "/v1/agent-memory/block", bot, nil)
		b := signIn(t, e, e.PersonKey("Cora", "compliance"))
		var id string
		require.NoError(t, e.DB.NewSelect().Table("receipts").Column("id").Where("action = ?", "block.read").Scan(t.Context(), &id))
		d := b.get("/console/receipts/" + id)
		require.Equal(t, http.StatusOK, d.Status, d.Body)
		require.Contains(t, d.Body, `<a href="/console/notes/`+noteID+`"><code>`+noteID+`</code></a>`, "the note the read delivered")
		require.Contains(t, d.Body, `<span class="badge ok">proof verifies</span>`)

		_, err := e.DB.ExecContext(t.Context(), "UPDATE receipt_manifests SET body = REPLACE(body, ?, ?)", noteID, "note_forged")
		require.NoError(t, err)
		d = b.get("/console/receipts/" + id)
		require.Equal(t, http.StatusOK, d.Status)
		require.Contains(t, d.Body, "its manifest was changed or removed")
		require.NotContains(t, d.Body, `<span class="badge ok">proof verifies</span>`)
	})
}
