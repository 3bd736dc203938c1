package changes_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/changes"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/models"
)

type rig struct {
	svc     *changes.Service
	db      *bun.DB
	spaceID string
}

func newRig(t *testing.T, db *bun.DB) rig {
	id, _, err := spaces.Create(context.Background(), db, "governed", time.Now())
	require.NoError(t, err)
	return rig{svc: &changes.Service{DB: db, Docs: spaces.Documents{DB: db}}, db: db, spaceID: id}
}

// person mints a person key named name with roles (label only names it in the test) and
// returns its principal: an approver's key must exist (it is checked against the proposal).
func (r rig) person(t *testing.T, label, name string, roles ...string) auth.Principal {
	t.Helper()
	keyID, _, err := auth.Mint(context.Background(), r.db, r.spaceID, "cli", auth.KeySpec{Kind: auth.KindPerson, Name: name, Roles: roles}, time.Now())
	require.NoError(t, err, label)
	return auth.Principal{SpaceID: r.spaceID, KeyID: keyID, Kind: auth.KindPerson, Name: name, Roles: roles}
}

func (r rig) count(t *testing.T, model any) int64 {
	n, err := r.db.NewSelect().Model(model).Where("space_id = ?", r.spaceID).Count(context.Background())
	require.NoError(t, err)
	return n
}

func code(err error) string {
	if fe := fault.As(err); fe != nil {
		return fe.Code
	}
	return ""
}

// An approval commits whole: when its event cannot be written, the document, the change's
// status and the receipt are not written either.
func TestApproveCommitsWhole(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		r := newRig(t, db)
		sol, rui := r.person(t, "key_sol", "Sol", auth.RoleSecurity), r.person(t, "key_rui", "Rui", auth.RoleSecurity)
		ch, err := r.svc.Propose(ctx, sol, spaces.DocFeatures, []byte(`{"agent_state": {"enabled": true}}`), time.Now())
		require.NoError(t, err)
		receipts := r.count(t, (*models.Receipt)(nil))

		_, err = db.ExecContext(ctx, "ALTER TABLE outbox RENAME TO outbox_off")
		require.NoError(t, err)
		_, err = r.svc.Approve(ctx, rui, spaces.DocFeatures, ch.ID, time.Now())
		require.Error(t, err)
		_, err = db.ExecContext(ctx, "ALTER TABLE outbox_off RENAME TO outbox")
		require.NoError(t, err)

		_, version, err := spaces.Documents{DB: db}.Get(ctx, r.spaceID, spaces.DocFeatures)
		require.NoError(t, err)
		require.Zero(t, version, "the document was not written")
		got, err := r.svc.Get(ctx, rui, spaces.DocFeatures, ch.ID)
		require.NoError(t, err)
		require.Equal(t, changes.Pending, got.Status)
		require.Equal(t, receipts, r.count(t, (*models.Receipt)(nil)), "no receipt")

		applied, err := r.svc.Approve(ctx, rui, spaces.DocFeatures, ch.ID, time.Now())
		require.NoError(t, err)
		require.Equal(t, changes.Applied, applied.Status)
	})
}

// Two changes proposed against the same version and approved at once: one is applied, the
// other is stale, and the document holds the applied one.
func TestConcurrentApprovals(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		r := newRig(t, db)
		ada, ivo := r.person(t, "key_ada", "Ada", auth.RoleAdmin), r.person(t, "key_ivo", "Ivo", auth.RoleIntegration)
		// The approvers' keys exist before the proposals (a newer key never approves).
		secs := []auth.Principal{r.person(t, "key_sec1", "Sec 1", auth.RoleSecurity), r.person(t, "key_sec2", "Sec 2", auth.RoleSecurity)}
		a, err := r.svc.Propose(ctx, ada, spaces.DocObjectTypes, []byte(`{"types": [{"type": "a", "fields": {}}]}`), time.Now())
		require.NoError(t, err)
		b, err := r.svc.Propose(ctx, ivo, spaces.DocObjectTypes, []byte(`{"types": [{"type": "b", "fields": {}}]}`), time.Now())
		require.NoError(t, err)

		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, id := range []string{a.ID, b.ID} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = r.svc.Approve(ctx, secs[i], spaces.DocObjectTypes, id, time.Now())
			}()
		}
		wg.Wait()
		var applied, stale int
		for _, err := range errs {
			switch code(err) {
			case "":
				require.NoError(t, err)
				applied++
			case "change_stale":
				stale++
			default:
				t.Fatalf("unexpected error: %v", err)
			}
		}
		require.Equal(t, 1, applied)
		require.Equal(t, 1, stale)
		text, version, err := spaces.Documents{DB: db}.Get(ctx, r.spaceID, spaces.DocObjectTypes)
		require.NoError(t, err)
		require.Equal(t, int64(1), version)
		list, err := r.svc.List(ctx, ada, spaces.DocObjectTypes, changes.Applied, 10)
		require.NoError(t, err)
		require.Len(t, list, 1)
		require.JSONEq(t, string(list[0].Document), text)
	})
}

// mintedBy mints a person key named name in r's space with created_by parent (a key id) and
// returns its principal.
func (r rig) mintedBy(t *testing.T, parent, name string, roles ...string) auth.Principal {
	t.Helper()
	keyID, _, err := auth.Mint(context.Background(), r.db, r.spaceID, parent, auth.KeySpec{Kind: auth.KindPerson, Name: name, Roles: roles}, time.Now())
	require.NoError(t, err, name)
	return auth.Principal{SpaceID: r.spaceID, KeyID: keyID, Kind: auth.KindPerson, Name: name, Roles: roles}
}

// The created_by chain of an approving key (issue 31): a key minted through another key of the
// proposer's name is refused like one the proposing key minted; a chain longer than the walk's
// bound is refused (it fails closed); a key of a chain that never meets the proposer approves.
func TestApproverMintChain(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		r := newRig(t, db)
		sol := r.person(t, "key_sol", "Sol", auth.RoleSecurity, auth.RoleAdmin)
		solAgain := r.person(t, "key_sol2", "SOL", auth.RoleAdmin)
		viaOtherKey := r.mintedBy(t, solAgain.KeyID, "Rui", auth.RoleSecurity)
		long := r.person(t, "key_root", "Root", auth.RoleAdmin)
		for i := range 70 {
			long = r.mintedBy(t, long.KeyID, fmt.Sprintf("Link %d", i), auth.RoleAdmin, auth.RoleSecurity)
		}
		short := r.person(t, "key_top", "Top", auth.RoleAdmin)
		for i := range 3 {
			short = r.mintedBy(t, short.KeyID, fmt.Sprintf("Step %d", i), auth.RoleAdmin, auth.RoleSecurity)
		}
		ch, err := r.svc.Propose(ctx, sol, spaces.DocFeatures, []byte(`{"agent_state": {"enabled": true}}`), time.Now())
		require.NoError(t, err)

		_, err = r.svc.Approve(ctx, viaOtherKey, spaces.DocFeatures, ch.ID, time.Now())
		require.Equal(t, "change_approver_minted_by_proposer", code(err), "%v", err)
		_, err = r.svc.Approve(ctx, long, spaces.DocFeatures, ch.ID, time.Now())
		require.Equal(t, "change_approver_minted_by_proposer", code(err), "%v", err)
		applied, err := r.svc.Approve(ctx, short, spaces.DocFeatures, ch.ID, time.Now())
		require.NoError(t, err)
		require.Equal(t, changes.Applied, applied.Status)
	})
}
