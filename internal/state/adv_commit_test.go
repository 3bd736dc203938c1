package state_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/state"
)

// TestLastSeenNotAheadOfCommit (adversarial, PostgreSQL: the locked path is a transaction):
// a write whose transaction fails at commit (here a deferred constraint; in production a
// client that hangs up or a lost connection) must not leave its uncommitted row in lastSeen.
// Otherwise, once another replica commits the same version number, this replica's next
// merge applies on the uncommitted content: the other replica's field is lost and the failed
// write's field comes back.
func TestLastSeenNotAheadOfCommit(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		if db.IsSQLite(d) {
			t.Skip("SQLite writes without a transaction around them")
		}
		ctx := context.Background()
		a, p := newService(t, d, plainMasker{})
		b := &state.Service{DB: a.DB, Docs: a.Docs, Hasher: a.Hasher, Masker: a.Masker, Now: a.Now}
		for _, stmt := range []string{
			`CREATE TABLE adv_ctl (skip int)`,
			`INSERT INTO adv_ctl VALUES (2)`,
			// The first two updates by the "boom" writer lose their race (no row updated): the
			// write then runs under the row's lock, in a transaction.
			`CREATE FUNCTION adv_skip() RETURNS trigger AS $$ BEGIN
				IF NEW.agent_version = 'boom' AND (SELECT skip FROM adv_ctl) > 0 THEN
					UPDATE adv_ctl SET skip = skip - 1; RETURN NULL; END IF;
				RETURN NEW; END $$ LANGUAGE plpgsql`,
			`CREATE TRIGGER adv_skip BEFORE UPDATE ON agent_states FOR EACH ROW EXECUTE FUNCTION adv_skip()`,
			// ... whose commit fails.
			`CREATE FUNCTION adv_fail() RETURNS trigger AS $$ BEGIN
				IF NEW.agent_version = 'boom' THEN RAISE EXCEPTION 'adv: the commit fails'; END IF;
				RETURN NULL; END $$ LANGUAGE plpgsql`,
			`CREATE CONSTRAINT TRIGGER adv_fail AFTER UPDATE ON agent_states DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION adv_fail()`,
		} {
			_, err := d.ExecContext(ctx, stmt)
			require.NoError(t, err, stmt)
		}
		_, err := a.Write(ctx, p, "", write(`{"step": "base"}`)) // v1, remembered by a
		require.NoError(t, err)
		_, err = a.Write(ctx, p, "boom", write(`{"step": "failed"}`))
		require.Error(t, err, "the write's commit fails")

		res, err := b.Write(ctx, p, "", write(`{"note": "from b"}`)) // v2, committed
		require.NoError(t, err)
		require.Equal(t, int64(2), res.Version)
		time.Sleep(10 * time.Millisecond)
		_, err = a.Write(ctx, p, "", write(`{"note": "from a"}`)) // a merge on v2
		require.NoError(t, err)

		got, err := b.Read(ctx, p, state.ReadRequest{Scope: &state.Scope{Kind: "conversation", ID: "c-1"}, Agent: "bot"})
		require.NoError(t, err)
		var body map[string]any
		require.NoError(t, json.Unmarshal(got.Body, &body))
		require.Equal(t, "base", body["step"], "the failed write came back: %s", got.Body)
	})
}
