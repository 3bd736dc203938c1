package turns_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/erasure"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/internal/turns"
	"github.com/agentmemory/agentmemory/internal/turns/turnstest"
	"github.com/agentmemory/agentmemory/models"
)

// person is a seeded profile and how compliance names it to the turns store.
type person struct {
	email, phone string
	profileID    string
	ref          erasure.Target
}

func newPerson(t *testing.T, e *apptest.Env, key, name, email, phone string) person {
	t.Helper()
	handles := []string{"email:" + email, "phone:" + phone}
	id := e.MustDo(http.StatusCreated, "POST", "/v1/profiles", key, map[string]any{"name": name, "handles": handles}).JSON(t)["profile_id"].(string)
	p := person{email: email, phone: phone, profileID: id, ref: erasure.Target{Kind: erasure.Subject, ProfileIDs: []string{id}}}
	for _, h := range handles {
		c, err := e.Deps.Subjects.Canonical(context.Background(), e.SpaceID, h)
		require.NoError(t, err)
		p.ref.HandleHashes = append(p.ref.HandleHashes, e.Deps.Subjects.HandleHash(e.SpaceID, c))
	}
	sort.Strings(p.ref.HandleHashes)
	return p
}

// ingest posts turns through the API and returns their masked texts as answered.
func ingest(t *testing.T, e *apptest.Env, key string, in []turns.Input) []string {
	t.Helper()
	var ans struct {
		Turns []turns.Turn `json:"turns"`
	}
	require.NoError(t, json.Unmarshal(e.MustDo(http.StatusCreated, "POST", "/v1/turns", key, map[string]any{"turns": in}).Body, &ans))
	out := make([]string, len(ans.Turns))
	for i, a := range ans.Turns {
		out[i] = a.Text
	}
	return out
}

func link(t *testing.T, e *apptest.Env, key string, scope map[string]any, handle, status string) {
	t.Helper()
	body := map[string]any{"subject": handle, "status": status}
	for k, v := range scope {
		body[k] = v
	}
	e.MustDo(http.StatusCreated, "POST", "/v1/identity-links", key, body)
}

func inTx(t *testing.T, e *apptest.Env, fn func(tx bun.Tx) error) {
	t.Helper()
	require.NoError(t, e.DB.RunInTx(context.Background(), nil, func(_ context.Context, tx bun.Tx) error { return fn(tx) }))
}

func count(t *testing.T, e *apptest.Env, model any) int {
	t.Helper()
	n, err := e.DB.NewSelect().Model(model).Where("space_id = ?", e.SpaceID).Count(context.Background())
	require.NoError(t, err)
	return int(n)
}

func erasedCounts(r erasure.Reach) map[string]int {
	out := map[string]int{}
	for kind, ids := range r {
		out[kind] += len(ids)
	}
	return out
}

func recent(t *testing.T, e *apptest.Env, kind, id string) []turns.Stored {
	t.Helper()
	got, err := e.Deps.Turns.Recent(context.Background(), e.SpaceID, kind, id, time.Now().Add(-turns.Window))
	require.NoError(t, err)
	return got
}

// Erasing a subject deletes its links (through any of its handles, confirmed or not, for
// conversations and tasks) and the turns of the conversations they link, a conversation shared
// with another subject included; the other subject keeps its own links and conversations, and
// an unlinked conversation is untouched. A second erasure finds nothing.
func TestEraseSubject(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		convs := turnstest.Load(t)
		require.GreaterOrEqual(t, len(convs), 3)
		integ := e.PersonKey("crm", "integration")
		ana := newPerson(t, e, integ, "Ana Souza", "ana.souza@example.com", "+55 11 98765-4321")
		bruno := newPerson(t, e, integ, "Bruno Lima", "bruno.lima@example.com", "+55 21 99876-5432")

		own, other, shared := convs[0], convs[1], convs[2]
		ingest(t, e, integ, own.Turns)
		link(t, e, integ, map[string]any{"conversation_id": own.ID}, "email:"+ana.email, "confirmed")
		ingest(t, e, integ, []turns.Input{
			{Scope: turns.Scope{TaskID: "t-ana"}, Speaker: "customer", Text: "call me back"},
			{Scope: turns.Scope{TaskID: "t-ana"}, Speaker: "agent", Text: "will do"},
		})
		link(t, e, integ, map[string]any{"task_id": "t-ana"}, "phone:"+ana.phone, "unconfirmed")
		ingest(t, e, integ, other.Turns)
		link(t, e, integ, map[string]any{"conversation_id": other.ID}, "email:"+bruno.email, "confirmed")
		ingest(t, e, integ, shared.Turns)
		link(t, e, integ, map[string]any{"conversation_id": shared.ID}, "email:"+bruno.email, "confirmed")
		link(t, e, integ, map[string]any{"conversation_id": shared.ID}, "phone:"+ana.phone, "unconfirmed")
		ingest(t, e, integ, []turns.Input{{Scope: turns.Scope{ConversationID: "c-nobody"}, Speaker: "customer", Text: "hello"}})
		total := len(own.Turns) + 2 + len(other.Turns) + len(shared.Turns) + 1
		require.Equal(t, total, count(t, e, (*models.Turn)(nil)))

		brunoLinks, brunoTurns, err := e.Deps.Turns.ExportSubject(ctx, e.DB, e.SpaceID, bruno.ref)
		require.NoError(t, err)
		require.Len(t, brunoLinks, 2)
		require.Len(t, brunoTurns, len(other.Turns)+len(shared.Turns))

		var erased erasure.Reach
		inTx(t, e, func(tx bun.Tx) error {
			var err error
			erased, err = e.Deps.Turns.EraseSubject(ctx, tx, e.SpaceID, ana.ref)
			return err
		})
		// The three conversations were written before their links: their keys are destroyed too.
		want := map[string]int{turns.KindTurn: len(own.Turns) + 2 + len(shared.Turns), turns.KindIdentityLink: 3, turns.KindScopeKey: 3}
		require.Equal(t, want, erasedCounts(erased))

		require.Empty(t, recent(t, e, "conversation", own.ID))
		require.Empty(t, recent(t, e, "task", "t-ana"))
		require.Empty(t, recent(t, e, "conversation", shared.ID), "a conversation shared with the erased subject loses its turns")
		require.Len(t, recent(t, e, "conversation", other.ID), len(other.Turns))
		require.Len(t, recent(t, e, "conversation", "c-nobody"), 1)
		require.Equal(t, len(other.Turns)+1, count(t, e, (*models.Turn)(nil)))
		require.Equal(t, 2, count(t, e, (*models.IdentityLink)(nil)), "bruno's two links stay")

		linksAfter, turnsAfter, err := e.Deps.Turns.ExportSubject(ctx, e.DB, e.SpaceID, bruno.ref)
		require.NoError(t, err)
		require.Equal(t, brunoLinks, linksAfter)
		var kept []erasure.ExportedTurn
		for _, tr := range brunoTurns {
			if tr.ScopeHash == e.Deps.Turns.ScopeHash(e.SpaceID, "conversation", other.ID) {
				kept = append(kept, tr)
			}
		}
		require.Equal(t, kept, turnsAfter)

		inTx(t, e, func(tx bun.Tx) error {
			again, err := e.Deps.Turns.EraseSubject(ctx, tx, e.SpaceID, ana.ref)
			require.Empty(t, again, "a second erasure finds nothing")
			return err
		})
		inTx(t, e, func(tx bun.Tx) error {
			none, err := e.Deps.Turns.EraseSubject(ctx, tx, e.SpaceID, erasure.Target{Kind: erasure.Subject, ProfileIDs: []string{""}})
			require.Empty(t, none, "an empty profile id matches no unlinked turn")
			return err
		})
		require.Equal(t, len(other.Turns)+1, count(t, e, (*models.Turn)(nil)))
	})
}

// Erasing a conversation deletes its turns and links, not those of a task with the same id
// nor of other conversations.
func TestEraseConversation(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		conv := turnstest.Load(t)[0]
		integ := e.PersonKey("crm", "integration")
		ana := newPerson(t, e, integ, "Ana Souza", "ana.souza@example.com", "+55 11 98765-4321")
		ingest(t, e, integ, conv.Turns)
		link(t, e, integ, map[string]any{"conversation_id": conv.ID}, "email:"+ana.email, "confirmed")
		ingest(t, e, integ, []turns.Input{{Scope: turns.Scope{TaskID: conv.ID}, Speaker: "agent", Text: "same id, a task"}})
		ingest(t, e, integ, []turns.Input{{Scope: turns.Scope{ConversationID: "c-2"}, Speaker: "agent", Text: "another"}})

		var erased erasure.Reach
		inTx(t, e, func(tx bun.Tx) error {
			var err error
			erased, err = e.Deps.Turns.EraseConversation(ctx, tx, e.SpaceID, conv.ID)
			return err
		})
		require.Equal(t, map[string]int{turns.KindTurn: len(conv.Turns), turns.KindIdentityLink: 1, turns.KindScopeKey: 1}, erasedCounts(erased))
		require.Empty(t, recent(t, e, "conversation", conv.ID))
		require.Len(t, recent(t, e, "task", conv.ID), 1)
		require.Len(t, recent(t, e, "conversation", "c-2"), 1)
		require.Zero(t, count(t, e, (*models.IdentityLink)(nil)))

		inTx(t, e, func(tx bun.Tx) error {
			again, err := e.Deps.Turns.EraseConversation(ctx, tx, e.SpaceID, conv.ID)
			require.Empty(t, again)
			return err
		})
		inTx(t, e, func(tx bun.Tx) error {
			none, err := e.Deps.Turns.EraseConversation(ctx, tx, e.SpaceID, "")
			require.Empty(t, none)
			return err
		})
	})
}

// The export carries the subject's links and their conversations' turns, unsealed and
// masked, in time order; once the subject's key is destroyed its sealed turns drop out.
func TestExportSubject(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		conv := turnstest.Load(t)[0]
		integ := e.PersonKey("crm", "integration")
		ana := newPerson(t, e, integ, "Ana Souza", "ana.souza@example.com", "+55 11 98765-4321")
		base := time.Now().UTC().Add(-48 * time.Hour).Truncate(time.Second)
		in := append([]turns.Input(nil), conv.Turns...)
		for i := range in {
			in[i].At = base.Add(time.Duration(i) * time.Minute).Format(time.RFC3339)
		}
		// Two turns before the link (stored in clear, sealed by the link), the rest after.
		masked := ingest(t, e, integ, in[:2])
		link(t, e, integ, map[string]any{"conversation_id": conv.ID}, "email:"+ana.email, "confirmed")
		masked = append(masked, ingest(t, e, integ, in[2:])...)

		links, got, err := e.Deps.Turns.ExportSubject(ctx, e.DB, e.SpaceID, ana.ref)
		require.NoError(t, err)
		require.Len(t, links, 1)
		scope := e.Deps.Turns.ScopeHash(e.SpaceID, "conversation", conv.ID)
		require.Equal(t, "conversation", links[0].ScopeKind)
		require.Equal(t, scope, links[0].ScopeHash)
		require.Equal(t, "confirmed", links[0].Status)
		require.Len(t, got, len(in))
		for i, tr := range got {
			require.Equal(t, masked[i], tr.Text, "turn %d", i)
			require.Equal(t, in[i].Speaker, tr.Speaker)
			require.Equal(t, base.Add(time.Duration(i)*time.Minute), tr.At)
			require.Equal(t, scope, tr.ScopeHash)
			require.NotContains(t, tr.Text, conv.Email)
		}
		require.Contains(t, strings.Join(masked, "\n"), "<email>")

		// A turn past retention (90 days) is left out even before the sweep removes it.
		ingest(t, e, integ, []turns.Input{{Scope: turns.Scope{ConversationID: conv.ID}, Speaker: "agent", Text: "long ago",
			At: time.Now().UTC().Add(-91 * 24 * time.Hour).Format(time.RFC3339)}})
		_, again, err := e.Deps.Turns.ExportSubject(ctx, e.DB, e.SpaceID, ana.ref)
		require.NoError(t, err)
		require.Equal(t, got, again)

		require.NoError(t, e.Keys.Destroy(ctx, ana.profileID))
		links, got, err = e.Deps.Turns.ExportSubject(ctx, e.DB, e.SpaceID, ana.ref)
		require.NoError(t, err)
		require.Len(t, links, 1)
		require.Empty(t, got, "turns sealed under a destroyed key cannot be exported")

		none, noTurns, err := e.Deps.Turns.ExportSubject(ctx, e.DB, e.SpaceID, erasure.Target{Kind: erasure.Subject})
		require.NoError(t, err)
		require.NotNil(t, none)
		require.NotNil(t, noTurns)
		require.Empty(t, none)
	})
}

// The sweep removes turns older than each space's turns.retention_days (90 by default), in
// batches of at most limit, across spaces.
func TestSweepTurnsInBatches(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Second)
		at := func(d time.Duration) string { return now.Add(-d).Format(time.RFC3339) }
		day := 24 * time.Hour
		integ := e.PersonKey("crm", "integration")
		ingest(t, e, integ, []turns.Input{
			{Scope: turns.Scope{ConversationID: "c-1"}, Speaker: "agent", Text: "old", At: at(91 * day)},
			{Scope: turns.Scope{ConversationID: "c-1"}, Speaker: "agent", Text: "old too", At: at(90*day + time.Second)},
			{Scope: turns.Scope{ConversationID: "c-1"}, Speaker: "agent", Text: "kept", At: at(89 * day)},
		})
		other, otherKey, err := spaces.CreateWith(ctx, e.DB, "other", now, spaces.CreateOptions{DirectPut: true})
		require.NoError(t, err)
		e.MustDo(http.StatusOK, "PUT", "/v1/documents/features", otherKey, map[string]any{"turns": map[string]any{"retention_days": 1}})
		ingest(t, e, otherKey, []turns.Input{
			{Scope: turns.Scope{ConversationID: "c-1"}, Speaker: "agent", Text: "two days", At: at(2 * day)},
			{Scope: turns.Scope{ConversationID: "c-1"}, Speaker: "agent", Text: "a day", At: at(day + time.Second)},
			{Scope: turns.Scope{ConversationID: "c-1"}, Speaker: "agent", Text: "recent", At: at(time.Hour)},
		})

		// Before any sweep, reads already leave out the turns past retention.
		all := func(spaceID string) []string {
			got, err := e.Deps.Turns.Recent(ctx, spaceID, "conversation", "c-1", time.Time{})
			require.NoError(t, err)
			var texts []string
			for _, g := range got {
				texts = append(texts, g.Text)
			}
			return texts
		}
		require.Equal(t, []string{"kept"}, all(e.SpaceID))
		require.Equal(t, []string{"recent"}, all(other))

		sweep := func(spaceID string, limit int) (map[string]int, bool) {
			var counts map[string]int
			var done bool
			inTx(t, e, func(tx bun.Tx) error {
				var err error
				counts, done, err = e.Deps.Turns.SweepTurns(ctx, tx, spaceID, now, limit)
				return err
			})
			return counts, done
		}
		total := map[string]int{}
		c, done := sweep("", 3)
		require.False(t, done, "a full batch may leave more")
		for k, v := range c {
			total[k] += v
		}
		c, done = sweep("", 3)
		require.True(t, done)
		for k, v := range c {
			total[k] += v
		}
		require.Equal(t, map[string]int{e.SpaceID: 2, other: 2}, total)
		c, done = sweep("", 3)
		require.True(t, done)
		require.Empty(t, c)

		left, err := e.DB.NewSelect().Model((*models.Turn)(nil)).Count(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 2, left)
		require.Len(t, recent(t, e, "conversation", "c-1"), 1)

		// Shortening a space's retention makes the next sweep of that space remove more.
		e.PutDocument("features", map[string]any{"turns": map[string]any{"retention_days": 30}})
		c, done = sweep(e.SpaceID, 10)
		require.True(t, done)
		require.Equal(t, map[string]int{e.SpaceID: 1}, c)
	})
}

func TestRetention(t *testing.T) {
	require.Equal(t, 90*24*time.Hour, turns.Retention(spaces.Features{}))
	var f spaces.Features
	f.Turns.RetentionDays = 7
	require.Equal(t, 7*24*time.Hour, turns.Retention(f))
	berlin := time.FixedZone("CEST", 2*3600)
	now := time.Date(2026, 3, 30, 2, 30, 0, 0, berlin)
	require.Equal(t, time.Date(2026, 3, 23, 0, 30, 0, 0, time.UTC), turns.RetentionCutoff(f, now))
}
