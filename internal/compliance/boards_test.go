package compliance_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/api/apitest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/compliance"
	"github.com/agentmemory/agentmemory/models"
)

// A board whose subject field names Ana, and one that only mentions her in a free-text field,
// are both erased with her (through the erasure registry: the boards eraser by link, its
// content probe by text); a board about someone else stays, and the certificate counts the
// boards.
func TestErasureReachesBoards(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			e := newEnv(t, engine)
			seedSpace(e)
			types := apitest.ShopBotTypes()
			types["types"] = append(types["types"].([]any), map[string]any{
				"type": "cases", "ownership": "shared",
				"fields": map[string]any{
					"customer": map[string]any{"type": "string", "subject": true},
					"summary":  map[string]any{"type": "text", "conflict": map[string]any{"rule": "ours"}},
				},
			})
			e.PutDocument("object-types", types)
			e.MustDo(http.StatusCreated, "POST", "/v1/boards/cases/grants", e.AdminKey, map[string]any{"agent": "triage", "access": "read_write"})
			triage := e.AgentKey("triage", "acme")
			integ := e.PersonKey("integrator", auth.RoleIntegration)
			comp := e.PersonKey("dpo", auth.RoleCompliance)
			handle := "email:ana.souza@example.com"
			e.MustDo(http.StatusCreated, "POST", "/v1/profiles", integ, map[string]any{"name": "Ana Souza", "handles": []string{handle}})
			write := func(id string, body map[string]any) {
				e.MustDo(http.StatusOK, "PUT", "/v1/boards", triage, map[string]any{"type": "cases", "id": id, "if_version": 0, "body": body})
			}
			write("case-1", map[string]any{"customer": handle, "summary": "refund asked"})
			write("case-2", map[string]any{"summary": "Ana Souza called about case-1 (ana.souza@example.com)"})
			write("case-3", map[string]any{"customer": "email:bruno@example.com", "summary": "no reply"})

			view, _ := erase(t, e, comp, handle)
			require.Equal(t, compliance.StatusCompleted, view.Status, "reason: %s", view.Reason)
			var left []string
			require.NoError(t, e.DB.NewSelect().Model((*models.Board)(nil)).Column("id").Scan(context.Background(), &left))
			require.Len(t, left, 1, "got boards %v, want only case-3's", left)
			history, err := e.DB.NewSelect().Model((*models.BoardVersion)(nil)).Where("board_id = ?", left[0]).Count(context.Background())
			require.NoError(t, err)
			require.EqualValues(t, 1, history)
			r := e.MustDo(http.StatusOK, "POST", "/v1/boards/read", triage, map[string]any{"type": "cases", "id": "case-1"})
			require.Equal(t, map[string]any{}, r.JSON(t)["body"], "an erased board reads empty")
			counted := 0
			for _, it := range view.Certificate.Items {
				if it.Kind == "board" {
					counted += it.Count
				}
			}
			require.Equal(t, 2, counted, "got %d boards in the certificate, want 2", counted)
		})
	}
}
