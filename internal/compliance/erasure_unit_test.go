package compliance_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/compliance"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/state"
	"github.com/agentmemory/agentmemory/models"
)

// acceptsWorkflows acknowledges every start and runs nothing: tests drive the steps.
type acceptsWorkflows struct{}

func (acceptsWorkflows) ExecuteWorkflow(context.Context, client.StartWorkflowOptions, any, ...any) (client.WorkflowRun, error) {
	return nil, nil
}

func (acceptsWorkflows) SignalWorkflow(context.Context, string, string, string, any) error {
	return errors.New("not used")
}

func (acceptsWorkflows) GetWorkflow(context.Context, string, string) client.WorkflowRun { return nil }

// brokenDestroy is a key store whose Destroy fails once `left` destructions succeeded.
type brokenDestroy struct {
	keystore.Store
	left int
}

func (b *brokenDestroy) Destroy(ctx context.Context, id string) error {
	if b.left == 0 {
		return errors.New("key store unavailable")
	}
	b.left--
	return b.Store.Destroy(ctx, id)
}

// stepEnv is the API over a fresh database whose workflow starts are acknowledged but not
// run, with a subject (ana) holding a profile and a subject-scoped state.
func stepEnv(t *testing.T, engine string) (*apptest.Env, string) {
	e := apptest.New(t, engine, func(d *api.Deps) { d.Workflows = acceptsWorkflows{} })
	seedSpace(e)
	crm := e.AgentKey("crm-bot", "acme", auth.ScopeAgentState)
	integ := e.PersonKey("integrator", auth.RoleIntegration)
	e.MustDo(http.StatusCreated, "POST", "/v1/profiles", integ, map[string]any{"name": "Ana", "handles": []string{"email:ana@example.com", "phone:+55 11 98765-4321"}})
	e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", crm, map[string]any{
		"scope": map[string]any{"kind": "subject", "id": "email:ana@example.com"}, "body": map[string]any{"tier": "gold"},
	})
	return e, e.PersonKey("dpo", auth.RoleCompliance)
}

// existingKeys counts the subject keys that exist for ana: her profile's and her handles'.
func existingKeys(t *testing.T, e *apptest.Env) int {
	ctx := context.Background()
	var ids []string
	require.NoError(t, e.DB.NewSelect().Table("profiles").Column("id").Scan(ctx, &ids))
	for _, h := range []string{"email:ana@example.com", "phone:+55 11 98765-4321"} {
		c, err := e.Deps.Subjects.Canonical(ctx, e.SpaceID, h)
		require.NoError(t, err)
		ids = append(ids, state.SubjectKeyID(e.Deps.Subjects.HandleHash(e.SpaceID, c)))
	}
	n := 0
	for _, k := range ids {
		if _, err := e.Keys.DataKey(ctx, k, false); err == nil {
			n++
		}
	}
	return n
}

func certCount(c compliance.Certificate, kind string) int {
	for _, it := range c.Items {
		if it.Kind == kind {
			return it.Count
		}
	}
	return 0
}

// GOV-2, MS-4 (issue 12 §1): key destruction and its record are one unit. A key step that
// destroys one key and then fails is retried; the certificate still counts every key that
// existed, including the one the failed attempt destroyed.
func TestDestroyKeysRetryKeepsCount(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			e, dpo := stepEnv(t, engine)
			before := existingKeys(t, e)
			require.GreaterOrEqual(t, before, 2, "ana has a profile key and a handle key")
			id := e.MustDo(http.StatusAccepted, "POST", "/v1/erasures", dpo, map[string]any{"subject": "email:ana@example.com"}).JSON(t)["erasure_id"].(string)
			ctx := context.Background()
			c := e.Deps.Compliance
			_, err := c.ResolveErasure(ctx, e.SpaceID, id)
			require.NoError(t, err)
			for _, step := range []func(context.Context, string, string) (int, error){c.EraseStates, c.EraseTurns, c.EraseExports, c.EraseProfiles} {
				_, err := step(ctx, e.SpaceID, id)
				require.NoError(t, err)
			}
			real := c.Keys
			c.Keys = &brokenDestroy{Store: real, left: 1}
			_, err = c.DestroyKeys(ctx, e.SpaceID, id)
			require.Error(t, err)
			require.Equal(t, before-1, existingKeys(t, e), "the failed attempt destroyed one key")
			c.Keys = real
			n, err := c.DestroyKeys(ctx, e.SpaceID, id)
			require.NoError(t, err)
			require.Equal(t, before, n)
			n, err = c.DestroyKeys(ctx, e.SpaceID, id)
			require.NoError(t, err, "a third run changes nothing")
			require.Equal(t, before, n)
			cert, err := c.Certify(ctx, e.SpaceID, id)
			require.NoError(t, err)
			require.Equal(t, before, certCount(cert, compliance.KindSubjectKey), "no destroyed key is lost from the certificate")
			require.Zero(t, existingKeys(t, e))
		})
	}
}

// unopenable is a key store that holds keys but cannot open any (every key wrapped by a KEK
// this process does not hold, as after a replica ran with a wrong AGENTMEMORY_KEK).
type unopenable struct{ keystore.Store }

func (unopenable) DataKey(context.Context, string, bool) ([]byte, error) {
	return nil, fmt.Errorf("%w: kek id 0123456789abcdef", keystore.ErrUnknownKEK)
}

// GOV-2, MS-4 (issue 12 §5): the erasure's key step works from key ids and the rows'
// existence, never opening a key: keys the process cannot unwrap are still destroyed and
// counted in the certificate, and the probe finds none left.
func TestDestroyKeysWithoutOpening(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			e, dpo := stepEnv(t, engine)
			before := existingKeys(t, e)
			require.GreaterOrEqual(t, before, 2, "ana has a profile key and a handle key")
			id := e.MustDo(http.StatusAccepted, "POST", "/v1/erasures", dpo, map[string]any{"subject": "email:ana@example.com"}).JSON(t)["erasure_id"].(string)
			ctx := context.Background()
			c := e.Deps.Compliance
			_, err := c.ResolveErasure(ctx, e.SpaceID, id)
			require.NoError(t, err)
			for _, step := range []func(context.Context, string, string) (int, error){c.EraseStates, c.EraseTurns, c.EraseExports, c.EraseProfiles} {
				_, err := step(ctx, e.SpaceID, id)
				require.NoError(t, err)
			}
			real := c.Keys
			c.Keys = unopenable{Store: real}
			n, err := c.DestroyKeys(ctx, e.SpaceID, id)
			require.NoError(t, err)
			require.Equal(t, before, n)
			cert, err := c.Certify(ctx, e.SpaceID, id)
			require.NoError(t, err)
			c.Keys = real
			require.Equal(t, before, certCount(cert, compliance.KindSubjectKey))
			require.Zero(t, existingKeys(t, e))
		})
	}
}

// GOV-2, GOV-3 (issue 12 §1): an export that completes inside an erasure's window never
// reads completed once its package can no longer be opened (failed, "export_erased"); one
// built after the erasure finds nothing and creates no key; exporting an unknown handle
// creates no subject key.
func TestExportErasureRace(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			e, dpo := stepEnv(t, engine)
			ctx := context.Background()
			c := e.Deps.Compliance

			unknown := e.MustDo(http.StatusAccepted, "POST", "/v1/exports", dpo, map[string]any{"subject": "email:nobody@example.com"}).JSON(t)["export_id"].(string)
			_, err := c.BuildExport(ctx, e.SpaceID, unknown)
			require.NoError(t, err)
			canon, err := e.Deps.Subjects.Canonical(ctx, e.SpaceID, "email:nobody@example.com")
			require.NoError(t, err)
			_, err = e.Keys.DataKey(ctx, state.SubjectKeyID(e.Deps.Subjects.HandleHash(e.SpaceID, canon)), false)
			require.ErrorIs(t, err, keystore.ErrNoKey, "exporting an unknown handle creates no subject key")
			require.Equal(t, "completed", e.MustDo(http.StatusOK, "GET", "/v1/exports/"+unknown, dpo, nil).JSON(t)["status"])
			pkg := e.MustDo(http.StatusOK, "GET", "/v1/exports/"+unknown+"/package", dpo, nil).JSON(t)
			require.Empty(t, pkg["states"])
			require.Empty(t, pkg["profiles"])

			erasure := e.MustDo(http.StatusAccepted, "POST", "/v1/erasures", dpo, map[string]any{"subject": "email:ana@example.com"}).JSON(t)["erasure_id"].(string)
			_, err = c.ResolveErasure(ctx, e.SpaceID, erasure)
			require.NoError(t, err)
			for _, step := range []func(context.Context, string, string) (int, error){c.EraseStates, c.EraseTurns, c.EraseExports} {
				_, err := step(ctx, e.SpaceID, erasure)
				require.NoError(t, err)
			}
			// Inside the window: one export completes before the keys go, one is built after.
			early := e.MustDo(http.StatusAccepted, "POST", "/v1/exports", dpo, map[string]any{"subject": "email:ana@example.com"}).JSON(t)["export_id"].(string)
			late := e.MustDo(http.StatusAccepted, "POST", "/v1/exports", dpo, map[string]any{"subject": "phone:+55 11 98765-4321"}).JSON(t)["export_id"].(string)
			_, err = c.BuildExport(ctx, e.SpaceID, early)
			require.NoError(t, err)
			for _, step := range []func(context.Context, string, string) (int, error){c.EraseProfiles, c.DestroyKeys} {
				_, err := step(ctx, e.SpaceID, erasure)
				require.NoError(t, err)
			}
			// The probe finds the package made inside the window: the erasure fails and says
			// where, instead of certifying.
			_, err = c.Certify(ctx, e.SpaceID, erasure)
			require.True(t, fault.IsCode(err, "residue"), "got %v", err)
			var row models.Erasure
			require.NoError(t, e.DB.NewSelect().Model(&row).Where("id = ?", erasure).Scan(ctx))
			require.Equal(t, "failed", row.Status)
			require.Equal(t, "residue:exports", row.Failure)

			v := e.MustDo(http.StatusOK, "GET", "/v1/exports/"+early, dpo, nil).JSON(t)
			require.Equal(t, "failed", v["status"], "a completed export whose package is gone reads failed")
			require.Equal(t, "failed", e.MustDo(http.StatusOK, "GET", "/v1/exports/"+early, dpo, nil).JSON(t)["status"])

			// Built after the erasure: nothing of ana is left, and no key is created for her.
			_, err = c.BuildExport(ctx, e.SpaceID, late)
			require.NoError(t, err)
			pkg = e.MustDo(http.StatusOK, "GET", "/v1/exports/"+late+"/package", dpo, nil).JSON(t)
			require.Empty(t, pkg["states"])
			require.Empty(t, pkg["profiles"])
			require.Zero(t, existingKeys(t, e), "no key is recreated for an erased subject")
		})
	}
}

// Issue 12 §3: the probe runs before the certificate. A state written for the subject after
// the states step (an agent still writing) is residue: the erasure fails with
// "residue:state" and no certificate is written.
func TestProbeFailsErasureOnResidue(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			e, dpo := stepEnv(t, engine)
			ctx := context.Background()
			c := e.Deps.Compliance
			id := e.MustDo(http.StatusAccepted, "POST", "/v1/erasures", dpo, map[string]any{"subject": "email:ana@example.com"}).JSON(t)["erasure_id"].(string)
			_, err := c.ResolveErasure(ctx, e.SpaceID, id)
			require.NoError(t, err)
			_, err = c.EraseStates(ctx, e.SpaceID, id)
			require.NoError(t, err)
			crm := e.AgentKey("crm-bot", "acme", auth.ScopeAgentState)
			e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", crm, map[string]any{
				"scope": map[string]any{"kind": "subject", "id": "email:ana@example.com"}, "body": map[string]any{"tier": "silver"},
			})
			for _, step := range []func(context.Context, string, string) (int, error){c.EraseTurns, c.EraseExports, c.EraseProfiles, c.DestroyKeys} {
				_, err := step(ctx, e.SpaceID, id)
				require.NoError(t, err)
			}
			_, err = c.Certify(ctx, e.SpaceID, id)
			require.True(t, fault.IsCode(err, "residue"), "got %v", err)
			var row models.Erasure
			require.NoError(t, e.DB.NewSelect().Model(&row).Where("id = ?", id).Scan(ctx))
			require.Equal(t, "failed", row.Status)
			require.Equal(t, "residue:state", row.Failure)
			require.Empty(t, row.Certificate)
			_, err = c.Certify(ctx, e.SpaceID, id)
			require.Error(t, err, "a failed erasure is never certified later")
		})
	}
}

// Re-run rounds at the service: Probe reports residue without failing the row; RerunErasure
// takes only the next round and keeps the erasure running; round 2's key step finds the key
// the write recreated and counts it once, retried or not; Certify sums both rounds.
func TestProbeAndRerunRounds(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			e, dpo := stepEnv(t, engine)
			ctx := context.Background()
			c := e.Deps.Compliance
			id := e.MustDo(http.StatusAccepted, "POST", "/v1/erasures", dpo, map[string]any{"subject": "email:ana@example.com"}).JSON(t)["erasure_id"].(string)
			_, err := c.ResolveErasure(ctx, e.SpaceID, id)
			require.NoError(t, err)
			steps := []func(context.Context, string, string) (int, error){c.EraseStates, c.EraseTurns, c.EraseExports, c.EraseProfiles, c.DestroyKeys}
			keys1 := 0
			for _, step := range steps {
				n, err := step(ctx, e.SpaceID, id)
				require.NoError(t, err)
				keys1 = n // the last step's count: the keys destroyed
			}
			residue, err := c.Probe(ctx, e.SpaceID, id)
			require.NoError(t, err)
			require.Empty(t, residue)

			// An agent writes the subject's state after the key step.
			crm := e.AgentKey("crm-bot", "acme", auth.ScopeAgentState)
			e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", crm, map[string]any{
				"scope": map[string]any{"kind": "subject", "id": "email:ana@example.com"}, "body": map[string]any{"tier": "silver"},
			})
			residue, err = c.Probe(ctx, e.SpaceID, id)
			require.NoError(t, err)
			require.Equal(t, []string{compliance.StoreState, compliance.StoreKeys}, residue)
			var row models.Erasure
			require.NoError(t, e.DB.NewSelect().Model(&row).Where("id = ?", id).Scan(ctx))
			require.Equal(t, compliance.StatusRunning, row.Status, "the probe fails nothing")

			require.True(t, fault.IsCode(c.RerunErasure(ctx, e.SpaceID, id, 3), "invalid_round"), "round 3 does not follow round 1")
			require.True(t, fault.IsCode(c.RerunErasure(ctx, e.SpaceID, id, 1), "invalid_round"))
			require.NoError(t, c.RerunErasure(ctx, e.SpaceID, id, 2))
			require.NoError(t, c.RerunErasure(ctx, e.SpaceID, id, 2), "a retried rerun changes nothing")
			for _, step := range steps {
				_, err := step(ctx, e.SpaceID, id)
				require.NoError(t, err)
			}
			n, err := c.DestroyKeys(ctx, e.SpaceID, id)
			require.NoError(t, err, "a retried key step")
			require.Equal(t, 1, n, "round 2 destroyed the one key the write recreated")
			residue, err = c.Probe(ctx, e.SpaceID, id)
			require.NoError(t, err)
			require.Empty(t, residue)
			cert, err := c.Certify(ctx, e.SpaceID, id)
			require.NoError(t, err)
			require.Equal(t, 2, cert.Rounds)
			require.Equal(t, keys1+1, certCount(cert, compliance.KindSubjectKey), "each round's keys counted once")
			require.Equal(t, 2, certCount(cert, "agent_state"))
			require.Error(t, c.RerunErasure(ctx, e.SpaceID, id, 3), "a completed erasure runs no more rounds")
			_, err = c.Probe(ctx, e.SpaceID, id)
			require.True(t, fault.IsCode(err, "erasure_not_running"), "got %v", err)
		})
	}
}
