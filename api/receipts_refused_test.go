package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
)

// TestRefusedRequestsAppendNoReceipt (issue 27): a request refused with 400 or 404 (unknown
// members, wrong types, values out of range, unknown ids) appends no receipt, on every receipted
// route: receipts record what was delivered or changed (AM-11, GOV-1), and a refusal delivers
// and changes nothing (refusals are counted in metrics and logged with their code). The same
// space's accepted requests still append theirs (the check can fail).
func TestRefusedRequestsAppendNoReceipt(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		e.PutDocument("features", map[string]any{
			"agent_memory": map[string]any{"enabled": true},
			"agent_state":  map[string]any{"enabled": true},
			"knowledge":    map[string]any{"enabled": true},
		})
		e.PutDocument("object-types", typesDoc(wmType("shop-bot", "conversation", 0, nil)))
		agent := e.AgentKey("shop-bot", "acme-ai", "agent_memory", "agent_memory:write", "agent_state", "knowledge:read")
		id := create(e, agent, note("Refund policy", "Refunds go through the returns desk."))
		mustStore(e, agent, map[string]any{"scope": conv("c-1"), "body": map[string]any{}})

		const unknownNote = "note_0193a5b2c3d4e5f60718293a4b5c6d7e"
		refused := []struct {
			name, method, path, key string
			body                    any
			status                  int
		}{
			{"block: max_tokens not a number", "GET", "/v1/agent-memory/block?max_tokens=lots", agent, nil, 400},
			{"block: max_tokens out of range", "GET", "/v1/agent-memory/block?max_tokens=5", agent, nil, 400},
			{"block: unknown source", "GET", "/v1/agent-memory/block?source_id=nobody-here", e.AdminKey, nil, 0},
			{"search: limit not a number", "GET", "/v1/agent-memory/search?q=refund&limit=x", agent, nil, 400},
			{"search: limit out of range", "GET", "/v1/agent-memory/search?q=refund&limit=0", agent, nil, 400},
			{"note: unknown member", "POST", notesPath, agent, note("T", "B", "colour", "red"), 400},
			{"note: wrong type", "POST", notesPath, agent, note("T", "B", "tags", "not-a-list"), 400},
			{"note: unknown kind", "POST", notesPath, agent, note("T", "B", "kind", "poem"), 400},
			{"note: unknown id", "GET", notesPath + "/" + unknownNote, agent, nil, 404},
			{"note version: unknown id", "POST", notesPath + "/" + unknownNote + "/versions", agent, note("T", "B"), 404},
			{"note version: unknown member", "POST", notesPath + "/" + id + "/versions", agent, note("T", "B", "colour", 1), 400},
			{"retire: unknown id", "POST", notesPath + "/" + unknownNote + "/retire", agent, nil, 404},
			{"proposal: unknown id", "POST", "/v1/agent-memory/proposals/prop_0193a5b2c3d4e5f6/approve", e.AdminKey, nil, 404},
			{"erase notes: no source", "DELETE", notesPath, e.AdminKey, nil, 400},
			{"state read: unknown member", "POST", "/v1/agent-state/read", agent, map[string]any{"scope": conv("c-1"), "colour": 1}, 400},
			{"state read: wrong type", "POST", "/v1/agent-state/read", agent, map[string]any{"scope": "c-1"}, 400},
			{"state write: wrong type", "PUT", "/v1/agent-state", agent, map[string]any{"scope": conv("c-1"), "body": "text"}, 400},
			{"knowledge: unknown member", "POST", "/v1/knowledge/retrieve", agent, map[string]any{"query": "refund", "colour": 1}, 400},
			{"profile: unknown id", "GET", "/v1/profiles/prof_0193a5b2c3d4e5f6", e.AdminKey, nil, 404},
			{"erasure: unknown id", "GET", "/v1/erasures/era_0193a5b2c3d4e5f6", e.AdminKey, nil, 404},
			{"export: unknown id", "GET", "/v1/exports/exp_0193a5b2c3d4e5f6", e.AdminKey, nil, 404},
			{"key: unknown member", "POST", "/v1/keys", e.AdminKey, map[string]any{"kind": "person", "name": "Rui", "roles": []string{"security"}, "colour": 1}, 400},
			{"key revoke: unknown id", "DELETE", "/v1/keys/key_0193a5b2c3d4e5f6", e.AdminKey, nil, 404},
			{"document: unknown member", "PUT", "/v1/documents/features", e.AdminKey, map[string]any{"colour": 1}, 400},
			{"block: bad tag", "GET", "/v1/agent-memory/block?tags=Bad%20Tag", agent, nil, 400},
			{"block: bad view", "GET", "/v1/agent-memory/block?view=Bad%20View", agent, nil, 400},
			{"search: no words", "GET", "/v1/agent-memory/search?q=%20", agent, nil, 400},
			{"search: unknown source", "GET", "/v1/agent-memory/search?q=refund&source_id=nobody-here", e.AdminKey, nil, 0},
			{"knowledge: unknown base", "POST", "/v1/knowledge/retrieve", agent, map[string]any{"query": "refund", "kbs": []string{"kb_0193a5b2c3d4e5f6"}}, 0},
			{"knowledge: wrong type", "POST", "/v1/knowledge/retrieve", agent, map[string]any{"query": 7}, 400},
			{"knowledge document: unknown id", "GET", "/v1/knowledge/kb_0193a5b2c3d4e5f6/documents/doc_0193a5b2c3d4e5f6", e.AdminKey, nil, 404},
			{"turns: wrong type", "POST", "/v1/turns", e.AdminKey, map[string]any{"turns": "x"}, 400},
			{"identity link: unknown member", "POST", "/v1/identity-links", e.AdminKey, map[string]any{"colour": 1}, 400},
			{"distill: unknown member", "POST", "/v1/agent-memory/distill", e.AdminKey, map[string]any{"colour": 1}, 400},
			{"erasure: wrong type", "POST", "/v1/erasures", e.AdminKey, map[string]any{"subject": 7}, 400},
			{"export: wrong type", "POST", "/v1/exports", e.AdminKey, map[string]any{"subject": 7}, 400},
			{"change: unknown id", "POST", "/v1/documents/features/changes/chg_0193a5b2c3d4e5f6/approve", e.AdminKey, nil, 404},
			{"knowledge document delete: unknown id", "DELETE", "/v1/knowledge/kb_0193a5b2c3d4e5f6/documents/doc_0193a5b2c3d4e5f6", e.AdminKey, nil, 404},
			{"knowledge readers: unknown base", "PUT", "/v1/knowledge/kb_0193a5b2c3d4e5f6/readers", e.AdminKey, map[string]any{"readers": []string{"shop-bot"}}, 0},
			{"knowledge submit: unknown base", "POST", "/v1/knowledge/kb_0193a5b2c3d4e5f6/documents", e.AdminKey, map[string]any{"source_uri": "x", "text": "y"}, 0},
			{"knowledge base: unknown member", "POST", "/v1/knowledge", e.AdminKey, map[string]any{"name": "kb", "colour": 1}, 400},
			{"profile: wrong type", "POST", "/v1/profiles", e.AdminKey, map[string]any{"subject": 7}, 400},
			{"profile state: unknown id", "GET", "/v1/profiles/prof_0193a5b2c3d4e5f6/agent-state", e.AdminKey, nil, 404},
			{"proposal reject: unknown id", "POST", "/v1/agent-memory/proposals/prop_0193a5b2c3d4e5f6/reject", e.AdminKey, nil, 404},
			{"certificate: unknown id", "GET", "/v1/erasures/era_0193a5b2c3d4e5f6/certificate", e.AdminKey, nil, 404},
			{"export package: unknown id", "GET", "/v1/exports/exp_0193a5b2c3d4e5f6/package", e.AdminKey, nil, 404},
			{"change reject: unknown id", "POST", "/v1/documents/features/changes/chg_0193a5b2c3d4e5f6/reject", e.AdminKey, map[string]any{"reason": "no"}, 0},
			{"change propose: unknown member", "POST", "/v1/documents/features/changes", e.AdminKey, map[string]any{"colour": 1}, 400},
			{"document: unknown name", "PUT", "/v1/documents/colours", e.AdminKey, map[string]any{}, 0},
			{"sweep: unknown member", "POST", "/v1/retention/sweep", e.AdminKey, map[string]any{"colour": 1}, 400},
			{"receipt proof: unknown id", "GET", "/v1/receipts/rcpt_0193a5b2c3d4e5f6/proof", e.AdminKey, nil, 404},
		}
		for _, c := range refused {
			before := len(spaceReceipts(t, e, e.AdminKey))
			r := e.Do(c.method, c.path, c.key, c.body)
			if c.status != 0 {
				require.Equal(t, c.status, r.Status, "%s: got %d, want %d: %s", c.name, r.Status, c.status, r.Body)
			} else {
				require.True(t, r.Status == 400 || r.Status == 404, "%s: got %d, want 400 or 404: %s", c.name, r.Status, r.Body)
			}
			after := spaceReceipts(t, e, e.AdminKey)
			require.Len(t, after, before, "%s: got %d new receipts, want none: %v", c.name, len(after)-before, after[:len(after)-before])
		}

		before := len(spaceReceipts(t, e, e.AdminKey))
		e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/block", agent, nil)
		e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/search?q=refund", agent, nil)
		require.Len(t, spaceReceipts(t, e, e.AdminKey), before+2, "an accepted block read and search append theirs")
	})
}
