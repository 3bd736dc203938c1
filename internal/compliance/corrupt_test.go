package compliance_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"go.temporal.io/sdk/temporal"

	"github.com/agentmemory/agentmemory/activities"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/models"
)

// Issue 29 §4 (issue 12 §1): a stored erasure record that does not decode fails the erasure
// with "corrupt_record" (non-retryable at the activity, so the workflow marks it failed),
// never reads as "nothing found": the store step erases nothing, the probe and the
// certificate refuse, and the row is never completed. Each JSON column of the erasure row
// in turn, on both databases.
func TestCorruptErasureRecordFailsTheErasure(t *testing.T) {
	cases := []struct {
		column string
		step   string // the step that reads it first
	}{
		{"scope_hashes", "store"},
		{"profile_ids", "store"},
		{"items", "store"},
		{"stores", "store"},
		{"key_ids", "keys"},
	}
	for _, engine := range []string{"sqlite", "postgres"} {
		for _, tc := range cases {
			t.Run(engine+"/"+tc.column, func(t *testing.T) {
				e, dpo := stepEnv(t, engine)
				ctx := context.Background()
				c := e.Deps.Compliance
				id := e.MustDo(http.StatusAccepted, "POST", "/v1/erasures", dpo, map[string]any{"subject": "email:ana@example.com"}).JSON(t)["erasure_id"].(string)
				_, err := c.ResolveErasure(ctx, e.SpaceID, id)
				require.NoError(t, err)
				if tc.column == "key_ids" {
					_, err := c.DestroyKeys(ctx, e.SpaceID, id) // records key_ids
					require.NoError(t, err)
				}
				_, err = e.DB.NewUpdate().Model((*models.Erasure)(nil)).Set("? = ?", bun.Ident(tc.column), "{not json").Where("id = ?", id).Exec(ctx)
				require.NoError(t, err)

				acts := &activities.ComplianceActivities{Compliance: c}
				ref := activities.ErasureRef{SpaceID: e.SpaceID, ErasureID: id}
				if tc.step == "store" {
					_, err = acts.EraseStore(ctx, activities.StoreRef{SpaceID: e.SpaceID, ErasureID: id, Store: "state"})
				} else {
					_, err = acts.DestroySubjectKeys(ctx, ref)
				}
				var app *temporal.ApplicationError
				require.True(t, errors.As(err, &app), "got %v", err)
				require.Equal(t, "corrupt_record", app.Type())
				require.True(t, app.NonRetryable(), "a corrupt record is not retried")

				_, err = c.Probe(ctx, e.SpaceID, id)
				require.True(t, fault.IsCode(err, "corrupt_record"), "probe: got %v", err)
				_, err = c.Certify(ctx, e.SpaceID, id)
				require.True(t, fault.IsCode(err, "corrupt_record"), "certify: got %v", err)
				var row models.Erasure
				require.NoError(t, e.DB.NewSelect().Model(&row).Where("id = ?", id).Scan(ctx))
				require.Equal(t, "running", row.Status, "never completed over a corrupt record")
				require.Empty(t, row.Certificate)
				n, err := e.DB.NewSelect().Model((*models.AgentState)(nil)).Where("space_id = ?", e.SpaceID).Count(ctx)
				require.NoError(t, err)
				if tc.step == "store" {
					require.EqualValues(t, 1, n, "the failed step erased nothing (one transaction)")
				}
			})
		}
	}
}
