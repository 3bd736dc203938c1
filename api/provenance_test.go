package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/erasure"
	"github.com/agentmemory/agentmemory/internal/llm"
	"github.com/agentmemory/agentmemory/internal/llm/llmtest"
)

// selfKeyID is the key id GET /v1/keys/self answers for key.
func selfKeyID(t *testing.T, e *apptest.Env, key string) string {
	t.Helper()
	return e.MustDo(http.StatusOK, "GET", "/v1/keys/self", key, nil).JSON(t)["key_id"].(string)
}

// requireProvenance checks that m names keyID and agentVersion as its provenance.
func requireProvenance(t *testing.T, m map[string]any, keyID, agentVersion, what string) {
	t.Helper()
	require.Equal(t, keyID, m["key_id"], "%s: key_id", what)
	require.Equal(t, agentVersion, m["agent_version"], "%s: agent_version", what)
}

// MS-5, QT-2: notes, proposals, knowledge documents and turns record the writing key and the
// request's Agent-Version header, and show both in the API answers and the agent-memory
// export; a write without the header records "".
func TestProvenanceOnEveryEntry(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			e := apptest.New(t, engine, func(d *api.Deps) { d.Workflows = anyWorkflows{} })
			enableNotes(e, nil)
			bot := e.AgentKey("shop-bot", "acme-ai", "agent_memory", "agent_memory:write", "context", "knowledge:write")
			botID, adminID := selfKeyID(t, e, bot), selfKeyID(t, e, e.AdminKey)

			// A note, as answered, read back, listed and exported.
			n := e.MustDo(http.StatusCreated, "POST", notesPath, bot, note("Sizes", "Ask for the size chart first."), "Agent-Version", "shop-bot/1.4.2").JSON(t)
			requireProvenance(t, n, botID, "shop-bot/1.4.2", "created note")
			got := e.MustDo(http.StatusOK, "GET", notesPath+"/"+n["id"].(string), bot, nil).JSON(t)
			requireProvenance(t, got, botID, "shop-bot/1.4.2", "read note")
			v2 := e.MustDo(http.StatusCreated, "POST", notesPath+"/"+n["id"].(string)+"/versions", bot, map[string]any{"body": "Ask for the size chart, then the fit."}, "Agent-Version", "shop-bot/1.5.0").JSON(t)
			requireProvenance(t, v2, botID, "shop-bot/1.5.0", "new version")
			plain := e.MustDo(http.StatusCreated, "POST", notesPath, bot, note("Returns", "Returns take 30 days.")).JSON(t)
			requireProvenance(t, plain, botID, "", "note without Agent-Version")

			// A proposal (writes human_only): the proposing key and version; the approved note
			// keeps the proposing request's version and names the approving key.
			enableNotes(e, map[string]any{"writes": "human_only"})
			pid := e.MustDo(http.StatusAccepted, "POST", notesPath, bot, note("Gifts", "Gift wrap is free."), "Agent-Version", "shop-bot/2.0.0").JSON(t)["proposal_id"].(string)
			p := e.MustDo(http.StatusOK, "GET", proposalsPath+"/"+pid, e.AdminKey, nil).JSON(t)
			requireProvenance(t, p, botID, "shop-bot/2.0.0", "proposal")
			approved := e.MustDo(http.StatusCreated, "POST", proposalsPath+"/"+pid+"/approve", e.AdminKey, nil).JSON(t)
			requireProvenance(t, approved, adminID, "shop-bot/2.0.0", "approved note")

			// The agent-memory export carries the same fields.
			var x struct {
				Notes     []map[string]any `json:"notes"`
				Proposals []map[string]any `json:"proposals"`
			}
			require.NoError(t, json.Unmarshal(e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/export", e.AdminKey, nil).Body, &x))
			byID := map[string]map[string]any{}
			for _, m := range append(x.Notes, x.Proposals...) {
				byID[m["id"].(string)] = m
			}
			requireProvenance(t, byID[n["id"].(string)], botID, "shop-bot/1.4.2", "exported note")
			requireProvenance(t, byID[v2["id"].(string)], botID, "shop-bot/1.5.0", "exported version")
			requireProvenance(t, byID[pid], botID, "shop-bot/2.0.0", "exported proposal")

			// A knowledge document, as answered and read back.
			emb, err := llm.New(llm.Config{Host: llmtest.NewEmbed(t).URL, Model: "unused"})
			require.NoError(t, err)
			e.App.Knowledge.Embedder = emb
			e.PutDocument("features", map[string]any{"knowledge": map[string]any{"enabled": true}})
			kb := e.MustDo(http.StatusCreated, "POST", "/v1/knowledge", e.AdminKey, map[string]any{"name": "handbook"}).JSON(t)["id"].(string)
			doc := e.MustDo(http.StatusAccepted, "POST", "/v1/knowledge/"+kb+"/documents", bot,
				map[string]any{"text": "Gift cards never expire.", "source_uri": "kb://gift", "version": "v1"}, "Agent-Version", "loader/0.9").JSON(t)
			docID := doc["document"].(map[string]any)["id"].(string)
			requireProvenance(t, doc["document"].(map[string]any), botID, "loader/0.9", "submitted document")
			requireProvenance(t, e.MustDo(http.StatusOK, "GET", "/v1/knowledge/"+kb+"/documents/"+docID, e.AdminKey, nil).JSON(t),
				botID, "loader/0.9", "read document")

			// Turns, as answered and in a subject's data package.
			integ := e.PersonKey("crm", "integration")
			ts := e.MustDo(http.StatusCreated, "POST", "/v1/turns", bot, map[string]any{"conversation_id": "c-9", "speaker": "customer", "text": "Hi"}, "Agent-Version", "shop-bot/3.1").JSON(t)
			requireProvenance(t, ts, botID, "shop-bot/3.1", "written turn")
			e.MustDo(http.StatusCreated, "POST", "/v1/profiles", integ, map[string]any{"name": "Ana Souza", "handles": []string{"email:ana@example.com"}})
			e.MustDo(http.StatusCreated, "POST", "/v1/identity-links", integ, map[string]any{"conversation_id": "c-9", "subject": "email:ana@example.com", "status": "confirmed"})
			ctx := context.Background()
			canon, err := e.Deps.Subjects.Canonical(ctx, e.SpaceID, "email:ana@example.com")
			require.NoError(t, err)
			_, exported, err := e.Deps.Turns.ExportSubject(ctx, e.DB, e.SpaceID, erasure.Target{Kind: erasure.Subject, HandleHashes: []string{e.Deps.Subjects.HandleHash(e.SpaceID, canon)}})
			require.NoError(t, err)
			require.Len(t, exported, 1)
			require.Equal(t, botID, exported[0].KeyID)
			require.Equal(t, "shop-bot/3.1", exported[0].AgentVersion)
		})
	}
}
