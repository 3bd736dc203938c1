package compliance_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/boards"
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
			types := apptest.ShopBotTypes()
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

// Issue 29 §1: a board whose key is gone (as on a restored copy before `agentmemory restore`)
// reads as never written, and a write at version 0 replaces it whole (its old history and
// links deleted first), on both databases.
func TestBoardWithDestroyedKeyReadsAsNeverWritten(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}})
		types := apptest.ShopBotTypes()
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
		write := func(version int, body map[string]any) map[string]any {
			return e.MustDo(http.StatusOK, "PUT", "/v1/boards", triage, map[string]any{"type": "cases", "id": "case-9", "if_version": version, "body": body}).JSON(t)
		}
		write(0, map[string]any{"customer": "email:zed@example.com", "summary": "first KX-1"})
		write(1, map[string]any{"summary": "second KX-2"})
		var row models.Board
		require.NoError(t, e.DB.NewSelect().Model(&row).Scan(ctx))
		require.NotContains(t, row.Body, "KX-2", "the body is sealed")
		require.NoError(t, e.Keys.Destroy(ctx, boards.BoardKeyID(row.ID)))

		r := e.MustDo(http.StatusOK, "POST", "/v1/boards/read", triage, map[string]any{"type": "cases", "id": "case-9"}).JSON(t)
		require.Equal(t, map[string]any{}, r["body"])
		require.Equal(t, "0", fmt.Sprint(r["version"]), "a board whose key is gone reads as never written")
		got := write(0, map[string]any{"summary": "anew KX-3"})
		require.Equal(t, true, got["stored"])
		require.Equal(t, "1", fmt.Sprint(got["version"]))
		n, err := e.DB.NewSelect().Model((*models.BoardVersion)(nil)).Count(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 1, n, "the unreadable board's history went with it")
		links, err := e.DB.NewSelect().Model((*models.BoardSubject)(nil)).Count(ctx)
		require.NoError(t, err)
		require.Zero(t, links)
		r = e.MustDo(http.StatusOK, "POST", "/v1/boards/read", triage, map[string]any{"type": "cases", "id": "case-9"}).JSON(t)
		require.Equal(t, map[string]any{"summary": "anew KX-3"}, r["body"])
	})
}
