package api_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/spaces"
)

// afterQuery runs fn once, right after the first statement of its pool whose text holds marker.
type afterQuery struct {
	marker string
	once   sync.Once
	fn     func()
	fired  bool
}

func (h *afterQuery) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }

func (h *afterQuery) AfterQuery(_ context.Context, ev *bun.QueryEvent) {
	if strings.Contains(ev.Query, h.marker) {
		h.once.Do(func() { h.fired = true; h.fn() })
	}
}

// blockRowsQuery is part of the block's statement that loads its notes whole.
const blockRowsQuery = `"n"."body"`

// Issue 16: a note retired, or erased, through another replica while a block read that has
// already chosen its notes is still on its way to its receipt: the retirement (erasure)
// commits first, so the answer, given after it, must not deliver the note (nor its text).
func TestBlockNeverGivesANoteRetiredBeforeItsReceipt(t *testing.T) {
	for _, change := range []string{"retire", "erase"} {
		t.Run(change, func(t *testing.T) {
			apptest.Each(t, func(t *testing.T, e *apptest.Env) {
				enableNotes(e, nil)
				bot := writer(e, "shop-bot", "acme")
				keep := create(e, bot, note("Keep", "Keep this one."))
				gone := create(e, bot, note("Gone", "Retire this one."))
				replica := &apptest.Env{T: t, Server: newReplica(e)}
				hook := &afterQuery{marker: blockRowsQuery, fn: func() {
					if change == "retire" {
						replica.MustDo(http.StatusOK, "POST", notesPath+"/"+gone+"/retire", bot, nil)
						return
					}
					_, err := e.Deps.Compliance.EraseNotes(context.Background(), e.SpaceID, "shop-bot", "admin")
					require.NoError(t, err)
				}}
				e.DB.AddQueryHook(hook)
				r := e.MustDo(http.StatusOK, "GET", blockPath, bot, nil)
				require.True(t, hook.fired, "the block loaded its notes with %q", blockRowsQuery)
				got := r.JSON(t)
				want := []string{keep}
				if change == "erase" {
					want = []string{}
				}
				require.ElementsMatch(t, want, strs(got["note_ids"]), "the %s committed before the answer's receipt", change)
				require.NotContains(t, got["text"], "Retire this one.")
			})
		})
	}
}

// Issue 16: the reading key is revoked through another replica while a block read that has
// already chosen its notes is on its way to its receipt: the read is refused (the key was
// revoked before the answer), not answered.
func TestBlockRefusedWhenItsKeyIsRevokedMidRead(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		bot := writer(e, "shop-bot", "acme")
		create(e, bot, note("Keep", "Keep this one."))
		replica := &apptest.Env{T: t, Server: newReplica(e)}
		var keyID string
		require.NoError(t, e.DB.NewRaw("SELECT id FROM api_keys WHERE hash = ?", auth.HashKey(bot)).Scan(context.Background(), &keyID))
		hook := &afterQuery{marker: blockRowsQuery, fn: func() {
			replica.MustDo(http.StatusNoContent, http.MethodDelete, "/v1/keys/"+keyID, e.AdminKey, nil)
		}}
		e.DB.AddQueryHook(hook)
		r := e.Do("GET", blockPath, bot, nil)
		require.True(t, hook.fired)
		requireError(t, r, http.StatusUnauthorized, "invalid_key")
	})
}

// Issue 16, PostgreSQL: a retirement holds the space's receipt head (its receipt) and has
// bumped the notes revision, not yet committed, when a block read that chose the note
// reaches its receipt's commit: that commit waits for the head, and once the retirement has
// committed it must see the new revision and refuse the answer (the reader reads again),
// never give the retired note after its retirement committed.
func TestBlockReceiptChecksRevisionsUnderTheHead(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		if db.IsSQLite(e.DB) {
			t.Skip("SQLite's write gate runs whole write transactions one at a time")
		}
		ctx := context.Background()
		enableNotes(e, nil)
		bot := writer(e, "shop-bot", "acme")
		keep := create(e, bot, note("Keep", "Keep this one."))
		gone := create(e, bot, note("Gone", "Retire this one."))

		// The retirement, by hand as notes.Retire does it: receipt (head locked), row, revisions.
		tx, err := e.DB.BeginTx(ctx, nil)
		require.NoError(t, err)
		defer tx.Rollback()
		_, err = receipts.Append(ctx, tx, e.SpaceID, receipts.Entry{Kind: receipts.KindAdmin, Action: "note.retire", ObjectIDs: []string{gone}}, time.Now())
		require.NoError(t, err)
		_, err = tx.ExecContext(ctx, `UPDATE notes SET status = 'retired' WHERE id = ?`, gone)
		require.NoError(t, err)
		for _, rev := range []string{spaces.RevisionNotesRemoved, spaces.RevisionNotes} {
			require.NoError(t, spaces.BumpRevision(ctx, tx, e.SpaceID, rev))
		}

		answer := make(chan apptest.Response, 1)
		go func() { answer <- e.Do("GET", blockPath, bot, nil) }()
		// Wait until the read's receipt waits for the head, then commit the retirement.
		deadline := time.Now().Add(20 * time.Second)
		for {
			var waiting int
			require.NoError(t, e.DB.NewRaw(`SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = 'transactionid'
AND pid IN (SELECT pid FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND query LIKE '%receipt_heads%' AND position(? in query) > 0)`,
				e.SpaceID).Scan(ctx, &waiting))
			if waiting > 0 {
				break
			}
			require.True(t, time.Now().Before(deadline), "the block read never waited for the head")
			time.Sleep(5 * time.Millisecond)
		}
		require.NoError(t, tx.Commit())
		r := <-answer
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		require.Equal(t, []string{keep}, strs(r.JSON(t)["note_ids"]), "the retirement committed before the answer's receipt")
	})
}
