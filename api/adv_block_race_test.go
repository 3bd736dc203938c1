package api_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/api/apitest"
	"github.com/agentmemory/agentmemory/internal/auth"
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
			apitest.Each(t, func(t *testing.T, e *apitest.Env) {
				enableNotes(e, nil)
				bot := writer(e, "shop-bot", "acme")
				keep := create(e, bot, note("Keep", "Keep this one."))
				gone := create(e, bot, note("Gone", "Retire this one."))
				replica := &apitest.Env{T: t, Server: newReplica(e)}
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
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		enableNotes(e, nil)
		bot := writer(e, "shop-bot", "acme")
		create(e, bot, note("Keep", "Keep this one."))
		replica := &apitest.Env{T: t, Server: newReplica(e)}
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
