package api_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/apptest"
)

// GATE-2: in the embedded default (no model layer) the local name layer refuses a note naming
// a person the space has never seen, with kind name and without echoing it; organisations,
// places, products, fonts and procedure words pass.
func TestNoteGateNames(t *testing.T) {
	refused := []struct{ name, title, body string }{
		{"unknown customer, no cue", "Callback", "Marisol Quintanilha prefers a call back"},
		{"after falar com", "Reembolso", "Falar com a Luana antes de estornar."},
		{"greeting", "Boleto", "Olá Renata, o boleto foi reemitido."},
		{"honorific and a surname", "Invoice", "Mr. Brightwater asked for a paper invoice."},
		{"her name is", "Closure", "Her name is Priscilla Vaughn and she wants the account closed."},
		{"in the title", "Refund for Beatriz Andrade", "Approved after the second review."},
		{"Spanish, after a cue", "Devolución", "La clienta Ximena Ortega pidió la devolución."},
	}
	accepted := []struct{ name, body string }{
		{"company and cities", "Acme Ltda ships every order from São Paulo to Lisbon."},
		{"fonts and tiers", "Invoices use Times New Roman; escalate to Tier 2 after two retries."},
		{"states and cities named like people", "Santa Catarina and Rio Branco warehouses restock on Mondays."},
		{"products named like people", "The Alexa skill and the Jenkins job page the on-call; Mercedes fleet accounts bill monthly."},
		{"a place named like a person", "Orders to Victoria ship from the Sydney warehouse."},
		{"procedure words", "Verifique o Pix. Depois gere a etiqueta no Zendesk e marque a fila Financeiro."},
		{"weekdays and months", "Grace period is 30 days; in May the billing run moves to Friday."},
	}
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		bot := writer(e, "shop-bot", "acme")
		integ := e.PersonKey("loader", "integration")
		for _, tc := range refused {
			for _, key := range []string{bot, integ} {
				body := note(tc.title, tc.body)
				if key == integ {
					body = note(tc.title, tc.body, "source_id", "shop-bot")
				}
				r := e.Do("POST", notesPath, key, body)
				m := requireError(t, r, http.StatusUnprocessableEntity, "personal_data_in_agent_memory")
				require.Equal(t, []string{"name"}, strs(m["kinds"]), "%s: %q", tc.name, tc.body)
				require.NotContains(t, string(r.Body), tc.body, "the answer never carries the text")
			}
		}
		require.Empty(t, listIDs(e, bot, ""), "a refused note is not stored")
		for _, tc := range accepted {
			r := e.Do("POST", notesPath, bot, note("Procedure", tc.body))
			require.Equal(t, http.StatusCreated, r.Status, "%s: %q: got %d, want 201: %s", tc.name, tc.body, r.Status, r.Body)
		}
		// An edit is gated the same way.
		id := listIDs(e, bot, "")[0]
		r := e.Do("POST", notesPath+"/"+id+"/versions", bot, map[string]any{"body": "Ask for Wanda at the front desk."})
		require.Equal(t, []string{"name"}, strs(requireError(t, r, http.StatusUnprocessableEntity, "personal_data_in_agent_memory")["kinds"]))
		require.Len(t, listIDs(e, bot, ""), len(accepted))
	})
}

// GATE-2: agent_memory.gate.names "review" makes an agent's note with a name hit a proposal
// (202 proposal_id, review ["name"]) that a person approves; other kinds are still refused; a
// clean note is stored at once; a person's own write is stored (the person is the reviewer);
// an approval passes the name hit while the setting is review, and is refused once the space
// went back to refuse.
func TestNoteGateNamesReview(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, map[string]any{"gate": map[string]any{"names": "review"}})
		bot := writer(e, "shop-bot", "acme")
		reviewer := e.PersonKey("rita", "reviewer")
		integ := e.PersonKey("loader", "integration")

		body := "Marisol Quintanilha prefers a call back"
		r := e.MustDo(http.StatusAccepted, "POST", notesPath, bot, note("Callback", body)).JSON(t)
		pid, _ := r["proposal_id"].(string)
		require.NotEmpty(t, pid, "the answer carries proposal_id: %v", r)
		require.Equal(t, []string{"name"}, strs(r["review"]))
		require.Empty(t, listIDs(e, bot, ""), "nothing is a note before approval")
		p := e.MustDo(http.StatusOK, "GET", proposalsPath+"/"+pid, reviewer, nil).JSON(t)
		require.Equal(t, "pending", p["status"])
		rc := receiptsOf(e, "proposal.create")
		require.Len(t, rc, 1)
		require.Equal(t, []any{"name"}, rc[0]["detail"].(map[string]any)["gate_review"])
		require.NotContains(t, fmt.Sprint(rc), "Marisol", "receipts name kinds, never values")

		// Kinds that are not reviewable are refused as before, alone or beside a name.
		m := requireError(t, e.Do("POST", notesPath, bot, note("Mail", "Write to ana@example.com")), 422, "personal_data_in_agent_memory")
		require.Equal(t, []string{"email"}, strs(m["kinds"]))
		m = requireError(t, e.Do("POST", notesPath, bot, note("Mail", "Marisol Quintanilha: ana@example.com")), 422, "personal_data_in_agent_memory")
		require.Equal(t, []string{"email", "name"}, strs(m["kinds"]))

		// A clean note is stored at once; a person's write with a name is stored too.
		e.MustDo(http.StatusCreated, "POST", notesPath, bot, note("Refunds", "Ask for the order id first."))
		e.MustDo(http.StatusCreated, "POST", notesPath, integ, note("VIP", "Dona Cida always asks for the same courier.", "source_id", "shop-bot"))
		rcs := receiptsOf(e, "note.create")
		require.Len(t, rcs, 2)
		var reviewed []any
		for _, x := range rcs {
			if v, ok := x["detail"].(map[string]any)["gate_review"]; ok {
				reviewed = append(reviewed, v)
			}
		}
		require.Equal(t, []any{[]any{"name"}}, reviewed, "the person's write names the kind it let through; the clean one nothing")

		// The reviewer approves: the note is stored with the name.
		n := e.MustDo(http.StatusCreated, "POST", proposalsPath+"/"+pid+"/approve", reviewer, nil).JSON(t)
		require.Equal(t, body, n["body"])
		require.Equal(t, pid, n["proposal_id"])

		// A second proposal, then the space goes back to refuse: approving it is refused.
		r = e.MustDo(http.StatusAccepted, "POST", notesPath, bot, note("Handoff", "Elaine Carvalho waits for a callback.")).JSON(t)
		pid2 := r["proposal_id"].(string)
		enableNotes(e, nil)
		m = requireError(t, e.Do("POST", proposalsPath+"/"+pid2+"/approve", reviewer, nil), 422, "personal_data_in_agent_memory")
		require.Equal(t, []string{"name"}, strs(m["kinds"]))
		require.Equal(t, "pending", e.MustDo(http.StatusOK, "GET", proposalsPath+"/"+pid2, reviewer, nil).JSON(t)["status"])
		requireError(t, e.Do("POST", notesPath, bot, note("Callback", body)), 422, "personal_data_in_agent_memory")
	})
}

// GATE-2: agent_memory.gate members are "refuse" or "review"; anything else is a 400 naming
// the member, and the features document is unchanged.
func TestFeaturesGateSettingValidated(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		for _, tc := range []struct {
			gate   any
			member string
		}{
			{map[string]any{"names": "maybe"}, "agent_memory.gate.names"},
			{map[string]any{"instructions": "allow"}, "agent_memory.gate.instructions"},
			{map[string]any{"names": true}, ""},
			{map[string]any{"people": "review"}, ""},
		} {
			r := e.Do("PUT", "/v1/documents/features", e.AdminKey, map[string]any{"agent_memory": map[string]any{"enabled": true, "gate": tc.gate}})
			require.Equal(t, http.StatusBadRequest, r.Status, "%v: got %d, want 400: %s", tc.gate, r.Status, r.Body)
			if tc.member != "" {
				m, _ := r.JSON(t)["error"].(map[string]any)
				require.Equal(t, tc.member, m["member"], "%s", r.Body)
			}
		}
		bot := writer(e, "shop-bot", "acme")
		requireError(t, e.Do("POST", notesPath, bot, note("Callback", "Marisol Quintanilha prefers a call back")), 422, "personal_data_in_agent_memory")
		enableNotes(e, map[string]any{"gate": map[string]any{"names": "refuse", "instructions": "review"}})
		requireError(t, e.Do("POST", notesPath, bot, note("Callback", "Marisol Quintanilha prefers a call back")), 422, "personal_data_in_agent_memory")
	})
}

// GATE-2 on MCP: remember refuses a name with kind name, and under review answers "proposed".
func TestMCPRememberNames(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		url := serveAPI(t, e)
		enableNotes(e, nil)
		key := writer(e, "shop-bot", "acme-ai")
		cs := mcpSession(t, url, key)
		args := map[string]any{"kind": "pitfall", "title": "Callback", "body": "Marisol Quintanilha prefers a call back"}
		isErr, out := callTool(t, cs, api.ToolRemember, args)
		require.True(t, isErr)
		er := out["error"].(map[string]any)
		require.Equal(t, "personal_data_in_agent_memory", er["code"])
		require.Equal(t, []any{"name"}, er["kinds"])
		require.NotContains(t, fmt.Sprint(out), "Quintanilha")
		require.Empty(t, listIDs(e, key, ""))

		enableNotes(e, map[string]any{"gate": map[string]any{"names": "review"}})
		isErr, out = callTool(t, cs, api.ToolRemember, args)
		require.False(t, isErr, "%v", out)
		require.Equal(t, "proposed", out["status"])
		require.NotEmpty(t, out["proposal_id"])
		require.Equal(t, []any{"name"}, out["review"])
	})
}
