package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/apptest"
)

// listedTagPairs are the tag pairs of issue 26 §1, refused as e-mail addresses before: a
// bare provider word after another tag is not an address (GATE-1).
var listedTagPairs = [][]string{
	{"deploy", "live"}, {"handoff", "pm"}, {"sso", "outlook"}, {"billing", "orange"},
	{"refund", "gmail"}, {"w1", "r7"},
}

// splitTagAddresses are addresses really split across tags: a local part and a dotted
// domain, or a local part, a domain label and a generic top-level domain.
var splitTagAddresses = [][]string{
	{"ana", "gmail.com"}, {"ana.silva", "example.com.br"}, {"vip", "joao", "empresa", "com"},
}

// AM-6, GATE-1 (issue 26 §1): every listed tag pair is stored on REST, on new notes and on
// edits; an address split across tags is refused with kind email and nothing is stored;
// an id given as an example ("e.g.") is not a phone.
func TestNoteGateTags(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		bot := writer(e, "shop-bot", "acme")
		var stored []string
		for i, tags := range listedTagPairs {
			r := e.Do("POST", notesPath, bot, note(fmt.Sprintf("Procedure %d", i), "Offer a refund after two failed delivery attempts.", "tags", tags))
			require.Equal(t, http.StatusCreated, r.Status, "tags %q: %s", tags, r.Body)
			id := r.JSON(t)["id"].(string)
			n := e.MustDo(http.StatusOK, "GET", notesPath+"/"+id, bot, nil).JSON(t)
			require.Equal(t, tags, strs(n["tags"]))
			stored = append(stored, id)
		}
		// An edit that sets the provider words side by side as tags (at most 8) is stored too.
		words := []string{"deploy", "live", "pm", "outlook", "orange", "gmail", "r7", "sso"}
		v := e.MustDo(http.StatusCreated, "POST", notesPath+"/"+stored[0]+"/versions", bot, map[string]any{"tags": words}).JSON(t)
		require.Equal(t, words, strs(v["tags"]))
		stored = append(stored, v["id"].(string)) // the list shows both versions
		for _, tags := range splitTagAddresses {
			r := e.Do("POST", notesPath, bot, note("Contact", "Ask the customer.", "tags", tags))
			m := requireError(t, r, http.StatusUnprocessableEntity, "personal_data_in_agent_memory")
			require.Equal(t, []string{"email"}, strs(m["kinds"]), "tags %q", tags)
			require.NotContains(t, string(r.Body), tags[1], "the answer never carries the value")
		}
		r := e.Do("POST", notesPath+"/"+stored[1]+"/versions", bot, map[string]any{"tags": []string{"ana", "gmail.com"}})
		requireError(t, r, http.StatusUnprocessableEntity, "personal_data_in_agent_memory")
		stored = append(stored, create(e, bot, note("Order ids", "Order ids have ten digits, e.g. 4159977512; quote them whole.")))
		require.ElementsMatch(t, stored, listIDs(e, bot, ""))
		n := e.MustDo(http.StatusOK, "GET", notesPath+"/"+stored[1], bot, nil).JSON(t)
		require.Equal(t, listedTagPairs[1], strs(n["tags"]), "the refused edit changed nothing")
	})
}

// AM-6, GATE-1 (issue 26 §1): the same on MCP: remember stores every listed tag pair and
// refuses an address split across tags.
func TestMCPRememberTags(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		url := serveAPI(t, e)
		enableNotes(e, nil)
		key := writer(e, "shop-bot", "acme-ai")
		cs := mcpSession(t, url, key)
		var stored []string
		for i, tags := range listedTagPairs {
			isErr, out := callTool(t, cs, api.ToolRemember, map[string]any{
				"kind": "procedure", "title": fmt.Sprintf("Procedure %d", i), "body": "Check the status page before escalating to tier 2.", "tags": tags,
			})
			require.False(t, isErr, "tags %q: %v", tags, out)
			require.Equal(t, "stored", out["status"])
			stored = append(stored, out["note_id"].(string))
		}
		for _, tags := range splitTagAddresses {
			isErr, out := callTool(t, cs, api.ToolRemember, map[string]any{"kind": "procedure", "title": "Contact", "body": "Ask the customer.", "tags": tags})
			require.True(t, isErr, "tags %q: %v", tags, out)
			er := out["error"].(map[string]any)
			require.Equal(t, "personal_data_in_agent_memory", er["code"])
			require.Equal(t, []any{"email"}, er["kinds"])
			require.NotContains(t, fmt.Sprint(out), strings.Join(tags, "@"))
		}
		require.ElementsMatch(t, stored, listIDs(e, key, ""))
	})
}
