package console_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
)

// Issue 27: after approving a proposal with edits, its page still showed the proposed text.
// It shows the approved note and the word diff against what was proposed.
func TestConsoleProposalShowsWhatWasApproved(t *testing.T) {
	each(t, func(t *testing.T, e *apptest.Env, _ *clock) {
		enableNotes(e, map[string]any{"writes": "human_only"})
		bot := e.AgentKey("shop-bot", "acme", "agent_memory", "agent_memory:write")
		propose := func(title, body string) string {
			r := e.MustDo(http.StatusAccepted, http.MethodPost, "/v1/agent-memory/notes", bot, map[string]any{
				"kind": "procedure", "title": title, "body": body, "tags": []string{"sizes"}})
			return r.JSON(t)["proposal_id"].(string)
		}
		id := propose("Size chart first", "Send the size chart before suggesting an exchange.")
		b := signIn(t, e, e.PersonKey("Ada", "admin"))
		b.get("/console/proposals/" + id)
		r := b.post("/console/proposals/"+id+"/approve", url.Values{"kind": {"procedure"}, "title": {"Size chart first"},
			"body": {"Send the fit guide before suggesting an exchange, always."}, "tags": {"sizes, fit"}, "visibility": {"source"}})
		require.Equal(t, http.StatusSeeOther, r.Status, r.Body)
		pg := b.get(r.Location)
		require.Equal(t, http.StatusOK, pg.Status)
		require.Contains(t, pg.Body, "Approved note")
		require.Contains(t, pg.Body, `<pre class="body">Send the fit guide before suggesting an exchange, always.</pre>`, "the approved text")
		require.Contains(t, pg.Body, "As proposed")
		require.Contains(t, pg.Body, `<pre class="body">Send the size chart before suggesting an exchange.</pre>`, "what was proposed, beside it")
		require.Contains(t, pg.Body, "<dt>Body</dt><dd><span>Send the </span><del>size chart</del><ins>fit guide</ins><span> before suggesting an exchange</span><ins>, always</ins><span>.</span></dd>")
		require.Contains(t, pg.Body, "<dt>Tags</dt><dd><span>sizes</span><ins>, fit</ins></dd>")
		require.NotContains(t, pg.Body, "<dt>Title</dt>", "an unchanged member has no diff")

		// Approved as proposed: the page says nothing changed.
		id2 := propose("Returns window", "Offer an exchange within 30 days.")
		b.get("/console/proposals/" + id2)
		r = b.post("/console/proposals/"+id2+"/approve", url.Values{"kind": {"procedure"}, "title": {"Returns window"},
			"body": {"Offer an exchange within 30 days."}, "tags": {"sizes"}, "visibility": {"source"}})
		require.Equal(t, http.StatusSeeOther, r.Status, r.Body)
		pg = b.get(r.Location)
		require.Contains(t, pg.Body, "Approved as proposed: nothing was changed.")
	})
}
