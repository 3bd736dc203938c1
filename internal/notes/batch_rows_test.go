package notes

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/events"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/noterows"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/models"
)

// integrationKey is a person key of p's space with role integration, which writes notes for
// a named source (and does not count against the agents' hourly limit).
func integrationKey(t *testing.T, d *bun.DB, p auth.Principal) auth.Principal {
	t.Helper()
	ctx := context.Background()
	var adminKey models.APIKey
	require.NoError(t, d.NewSelect().Model(&adminKey).Where("space_id = ? AND kind = ?", p.SpaceID, auth.KindPerson).Limit(1).Scan(ctx))
	adminP := auth.Principal{SpaceID: p.SpaceID, KeyID: adminKey.ID, Kind: auth.KindPerson, Roles: []string{auth.RoleAdmin}}
	_, key, err := spaces.MintKey(ctx, d, adminP, auth.KeySpec{Kind: auth.KindPerson, Name: "loader", Roles: []string{auth.RoleIntegration}}, time.Now())
	require.NoError(t, err)
	person, err := auth.Authenticate(ctx, d, key)
	require.NoError(t, err)
	return person
}

// queueCalls holds spaceID's batches, starts the calls in this order (each queued before the
// next starts) and returns their answers, to be read after s.drain.
func queueCalls(t *testing.T, s *Service, spaceID string, calls []func() (WriteResult, error)) []chan createAnswer {
	t.Helper()
	s.writes.hold(spaceID)
	out := make([]chan createAnswer, len(calls))
	for i, call := range calls {
		out[i] = make(chan createAnswer, 1)
		go func() {
			res, err := call()
			out[i] <- createAnswer{res, err}
		}()
		s.writes.waitQueued(t, spaceID, i+1, out[i])
	}
	return out
}

// batchRows is what a space holds of its notes' side rows: each note's tags (sorted), the
// note or proposal id of each of its events in position order, and on SQLite each search-index
// row's note id (nil on PostgreSQL).
type batchRows struct {
	tags      map[string][]string
	events    []string
	positions []int64
	fts       []string
}

func readBatchRows(t *testing.T, d *bun.DB, spaceID string) batchRows {
	t.Helper()
	ctx := context.Background()
	out := batchRows{tags: map[string][]string{}}
	var tags []models.NoteTag
	require.NoError(t, d.NewSelect().Model(&tags).Where("space_id = ?", spaceID).Order("note_id", "tag").Scan(ctx))
	for _, tg := range tags {
		out.tags[tg.NoteID] = append(out.tags[tg.NoteID], tg.Tag)
	}
	var evs []models.OutboxEvent
	require.NoError(t, d.NewSelect().Model(&evs).Where("space_id = ?", spaceID).Order("position ASC").Scan(ctx))
	for i, row := range evs {
		if i > 0 {
			require.Greater(t, row.Seq, evs[i-1].Seq, "seq in position order")
		}
		var e events.Event
		require.NoError(t, json.Unmarshal([]byte(row.Payload), &e))
		out.events = append(out.events, e.NoteID+e.ProposalID)
		out.positions = append(out.positions, row.Position)
	}
	if db.IsSQLite(d) {
		require.NoError(t, d.NewRaw("SELECT f.note_id FROM notes_fts AS f JOIN notes AS n ON n.id = f.note_id WHERE n.space_id = ? ORDER BY f.note_id", spaceID).Scan(ctx, &out.fts))
	}
	return out
}

// Issue 16, AM-1, AM-7, AM-13: 38 writes of one source queued at once run as two batches (32,
// then 6) with every kind of refusal among them: a duplicate of an earlier write of the
// batch, an Idempotency-Key replay of it and a reuse of its key for other content, an edit of
// a note stored before and a second edit of the same version (refused: no longer active),
// 28 notes of 8 tags each filling the source's cap exactly (30), the next refused at the cap
// while duplicates and replays still answer. Exactly the stored notes have tags, search rows
// and note_created events (in write order, consecutive positions), one receipt each (the
// chain verifies), the count of active notes is the cap, and search finds each stored note
// by a word of its own and its tags, the edited note only in its new version.
func TestNoteBatchRowsExactThroughRefusals(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		const limit = 30
		s, agent := queueEnv(t, d, fmt.Sprintf(`{"agent_memory": {"enabled": true, "max_notes_per_source": %d}}`, limit))
		person := integrationKey(t, d, agent)
		orig, err := s.Create(ctx, agent, "", "", Input{Kind: "procedure", Title: "Echo original", Body: "Before the batch.", Tags: []string{"old"}})
		require.NoError(t, err)
		e := orig.Note.ID
		before := readBatchRows(t, d, agent.SpaceID)
		receiptsBefore := countIn(t, d, agent.SpaceID, (*models.Receipt)(nil))

		create := func(p auth.Principal, idem string, in Input) func() (WriteResult, error) {
			return func() (WriteResult, error) { return s.Create(ctx, p, "", idem, in) }
		}
		edit := func(title string, tags []string) func() (WriteResult, error) {
			return func() (WriteResult, error) {
				return s.NewVersion(ctx, agent, "", "", e, Patch{Title: &title, Tags: &tags})
			}
		}
		note := func(i int) Input {
			tags := make([]string, MaxTags)
			for k := range tags {
				tags[k] = fmt.Sprintf("t%02d-%d", i, k)
			}
			return Input{SourceID: agent.Agent, Kind: "procedure", Title: fmt.Sprintf("Note word%02d", i), Body: "A note of the batch.", Tags: tags}
		}
		a := Input{SourceID: agent.Agent, Kind: "procedure", Title: "Alpha wordalpha", Body: "First of the batch.", Tags: []string{"alpha", "shared"}}
		other := Input{SourceID: agent.Agent, Kind: "procedure", Title: "Other", Body: "Reuses alpha's key."}
		calls := []func() (WriteResult, error){
			create(person, "key-a", a),              // 0 stored
			create(person, "", a),                   // 1 duplicate of 0
			create(person, "key-a", a),              // 2 replay of 0
			edit("Echo edited", []string{"edited"}), // 3 stored
			edit("Echo again", nil),                 // 4 refused: 3 retired the version it edits
			create(person, "key-a", other),          // 5 refused: key reused
		}
		for i := 6; i < 6+limit-2; i++ { // 6..33 stored: the cap is reached at 33
			idem := ""
			if i == 7 {
				idem = "key-7"
			}
			calls = append(calls, create(person, idem, note(i)))
		}
		calls = append(calls,
			create(person, "", note(34)),     // 34 refused at the cap
			create(person, "", note(6)),      // 35 duplicate of 6
			create(person, "key-7", note(7)), // 36 replay of 7
			create(person, "", note(34)),     // 37 refused at the cap
		)
		require.Len(t, calls, 38)
		answers := queueCalls(t, s, agent.SpaceID, calls)
		s.drain(agent.SpaceID)
		got := make([]createAnswer, len(answers))
		for i, c := range answers {
			got[i] = <-c
		}
		ok := func(i int) string {
			require.NoError(t, got[i].err, "write %d", i)
			require.NotNil(t, got[i].res.Note, "write %d", i)
			return got[i].res.Note.ID
		}
		alpha := ok(0)
		require.NoError(t, got[1].err)
		require.Equal(t, alpha, got[1].res.DuplicateOf)
		require.NoError(t, got[2].err)
		require.True(t, got[2].res.Replayed)
		require.Equal(t, alpha, got[2].res.Note.ID)
		e2 := ok(3)
		require.True(t, fault.IsCode(got[4].err, CodeNotActive), "second edit of one version: %v", got[4].err)
		require.True(t, fault.IsCode(got[5].err, CodeIdempotencyReuse), "key reused: %v", got[5].err)
		stored := []string{alpha, e2}
		want := map[string][]string{e: {"old"}, alpha: {"alpha", "shared"}, e2: {"edited"}}
		for i := 6; i < 6+limit-2; i++ {
			id := ok(i)
			stored = append(stored, id)
			tags := slices.Clone(note(i).Tags)
			slices.Sort(tags)
			want[id] = tags
		}
		for _, i := range []int{34, 37} {
			require.True(t, fault.IsCode(got[i].err, CodeCapReached), "write %d: %v", i, got[i].err)
		}
		require.NoError(t, got[35].err)
		require.Equal(t, got[6].res.Note.ID, got[35].res.DuplicateOf)
		require.NoError(t, got[36].err)
		require.True(t, got[36].res.Replayed)
		require.Equal(t, got[7].res.Note.ID, got[36].res.Note.ID)

		rows := readBatchRows(t, d, agent.SpaceID)
		require.Equal(t, want, rows.tags, "tags of exactly the stored notes")
		require.Equal(t, append(slices.Clone(before.events), stored...), rows.events, "note_created of exactly the stored notes, in write order")
		for i := range rows.positions {
			require.Equal(t, int64(i+1), rows.positions[i], "consecutive positions")
		}
		if db.IsSQLite(d) {
			wantFTS := append([]string{e}, stored...)
			slices.Sort(wantFTS)
			require.Equal(t, wantFTS, rows.fts, "one search row per stored note")
		}
		require.Equal(t, receiptsBefore+len(stored), countIn(t, d, agent.SpaceID, (*models.Receipt)(nil)), "a receipt per stored write")
		v, err := receipts.Verify(ctx, d, agent.SpaceID)
		require.NoError(t, err)
		require.True(t, v.OK, "the chain verifies: %+v", v)
		var active int
		require.NoError(t, d.NewRaw("SELECT active FROM note_source_counts WHERE space_id = ? AND source_id = ?", agent.SpaceID, agent.Agent).Scan(ctx, &active))
		require.Equal(t, limit, active)

		search := func(req SearchRequest) []string {
			req.Limit = MaxSearchLimit
			res, err := s.Search(ctx, agent, req)
			require.NoError(t, err)
			var ids []string
			for _, n := range res.Notes {
				ids = append(ids, n.ID)
			}
			return ids
		}
		require.Equal(t, []string{alpha}, search(SearchRequest{Q: "wordalpha"}))
		require.Equal(t, []string{e2}, search(SearchRequest{Q: "echo"}), "the edited note only in its new version")
		require.Equal(t, []string{e2}, search(SearchRequest{Tags: []string{"edited"}}))
		require.Empty(t, search(SearchRequest{Tags: []string{"old"}}), "the retired version leaves search")
		for i := 6; i < 6+limit-2; i++ {
			id := got[i].res.Note.ID
			require.Equal(t, []string{id}, search(SearchRequest{Q: fmt.Sprintf("word%02d", i)}), "note %d by its word", i)
			require.Equal(t, []string{id}, search(SearchRequest{Q: "batch", Tags: []string{fmt.Sprintf("t%02d-7", i)}}), "note %d by word and tag", i)
		}
		require.ElementsMatch(t, stored, search(SearchRequest{Q: "batch"}), "every stored note and no other (the retired version left)")
	})
}

// failInserts makes every insert into table whose column equals value fail in d, with the
// error "boom" (a trigger named after the table): the way a statement fails inside a batch
// (a note's insert) or at its end (its tags).
func failInserts(t *testing.T, d *bun.DB, table, column, value string) {
	t.Helper()
	ctx := context.Background()
	name := table + "_boom"
	if db.IsSQLite(d) {
		_, err := d.DB.ExecContext(ctx, fmt.Sprintf(`CREATE TRIGGER %s BEFORE INSERT ON %s WHEN NEW.%s = '%s' BEGIN SELECT RAISE(ABORT, 'boom'); END`, name, table, column, value))
		require.NoError(t, err)
		return
	}
	_, err := d.DB.ExecContext(ctx, fmt.Sprintf(`CREATE FUNCTION %s() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN IF NEW.%s = '%s' THEN RAISE EXCEPTION 'boom'; END IF; RETURN NEW; END $$`, name, column, value))
	require.NoError(t, err)
	_, err = d.DB.ExecContext(ctx, fmt.Sprintf(`CREATE TRIGGER %s BEFORE INSERT ON %s FOR EACH ROW EXECUTE FUNCTION %s()`, name, table, name))
	require.NoError(t, err)
}

// Issue 16: a batch whose side rows fail to insert (a note's tags, stored at the batch's end,
// or before an agent's proposal) fails whole: every write of it answers the error, the
// duplicate and the replay among them too, and nothing of any is stored (no note, tag, search
// row, event, receipt, idempotency record or count); the chain verifies and the next batch
// stores.
func TestNoteBatchSideRowsFailureFailsBatch(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		s, agent := queueEnv(t, d, `{"agent_memory": {"enabled": true, "writes": "human_only"}}`)
		person := integrationKey(t, d, agent)
		first, err := s.Create(ctx, person, "", "", Input{SourceID: agent.Agent, Kind: "procedure", Title: "Kept", Body: "Before.", Tags: []string{"kept"}})
		require.NoError(t, err)
		failInserts(t, d, "note_tags", "tag", "boom")
		counted := []any{(*models.Note)(nil), (*models.NoteTag)(nil), (*models.OutboxEvent)(nil), (*models.Receipt)(nil), (*models.NoteRequest)(nil), (*models.NoteProposal)(nil)}
		counts := func() []int {
			var out []int
			for _, m := range counted {
				out = append(out, countIn(t, d, agent.SpaceID, m))
			}
			return out
		}
		before, rowsBefore := counts(), readBatchRows(t, d, agent.SpaceID)

		create := func(p auth.Principal, idem string, in Input) func() (WriteResult, error) {
			return func() (WriteResult, error) { return s.Create(ctx, p, "", idem, in) }
		}
		boom := Input{SourceID: agent.Agent, Kind: "procedure", Title: "Boom", Body: "Its tag fails.", Tags: []string{"boom"}}
		plain := Input{SourceID: agent.Agent, Kind: "procedure", Title: "Plain", Body: "Fine alone."}
		for name, last := range map[string]func() (WriteResult, error){
			"at the end":        create(person, "", plain),
			"before a proposal": create(agent, "", Input{Kind: "procedure", Title: "Proposed", Body: "Needs review."}),
		} {
			answers := queueCalls(t, s, agent.SpaceID, []func() (WriteResult, error){
				create(person, "key-p", plain),
				create(person, "key-p", plain),
				create(person, "", Input{SourceID: agent.Agent, Kind: "procedure", Title: "Kept", Body: "Before.", Tags: []string{"kept"}}),
				create(person, "key-b", boom),
				last,
			})
			s.drain(agent.SpaceID)
			for i, c := range answers {
				a := <-c
				require.ErrorContains(t, a.err, "boom", "%s: write %d", name, i)
				require.Nil(t, a.res.Note, "%s: write %d", name, i)
				require.Empty(t, a.res.ProposalID, "%s: write %d", name, i)
			}
			require.Equal(t, before, counts(), "%s: nothing stored", name)
			require.Equal(t, rowsBefore, readBatchRows(t, d, agent.SpaceID), "%s: no side row stored", name)
			v, err := receipts.Verify(ctx, d, agent.SpaceID)
			require.NoError(t, err)
			require.True(t, v.OK, "%s: the chain verifies: %+v", name, v)
			var active int
			require.NoError(t, d.NewRaw("SELECT active FROM note_source_counts WHERE space_id = ? AND source_id = ?", agent.SpaceID, agent.Agent).Scan(ctx, &active))
			require.Equal(t, 1, active, "%s: the count is back", name)
		}

		res, err := s.Create(ctx, person, "", "key-b", plain)
		require.NoError(t, err)
		require.False(t, res.Replayed, "the failed batches left no idempotency record")
		require.NotEqual(t, first.Note.ID, res.Note.ID)
		require.Equal(t, before[0]+1, countIn(t, d, agent.SpaceID, (*models.Note)(nil)))
	})
}

// cancellingKeys is a key store that ends a request's context (cancel) when a proposal's
// title and body are sealed (noterows.InsertProposal asks for the proposal's key): a member
// after the proposal in the batch finds its request ended. The key comes from the real store.
type cancellingKeys struct {
	keystore.Store
	cancel context.CancelFunc
}

func (c cancellingKeys) DataKey(ctx context.Context, id string, create bool) ([]byte, error) {
	if strings.HasPrefix(id, noterows.ProposalKeyID("")) {
		c.cancel()
	}
	return c.Store.DataKey(ctx, id, create)
}

// Issue 16: a request that ends while its batch runs, before its turn, answers its context's
// error and stores nothing (no note, tag, search row, event, receipt or idempotency record),
// while the members before and after it are stored with their events in write order at
// consecutive positions, the proposal's among them, and the chain verifies.
func TestNoteBatchMemberEndsMidBatch(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		s, agent := queueEnv(t, d, `{"agent_memory": {"enabled": true, "writes": "human_only"}}`)
		person := integrationKey(t, d, agent)
		ended, cancel := context.WithCancel(ctx)
		defer cancel()
		ks, err := keystore.OpenFile(filepath.Join(t.TempDir(), "keys.json"), s.Hasher.Key("note-keys"))
		require.NoError(t, err)
		s.Keys = cancellingKeys{Store: ks, cancel: cancel}
		receiptsBefore := countIn(t, d, agent.SpaceID, (*models.Receipt)(nil))
		before := readBatchRows(t, d, agent.SpaceID)
		in := func(title string, tags ...string) Input {
			return Input{SourceID: agent.Agent, Kind: "procedure", Title: title, Body: "Mid batch.", Tags: tags}
		}
		answers := queueCalls(t, s, agent.SpaceID, []func() (WriteResult, error){
			func() (WriteResult, error) { return s.Create(ctx, person, "", "", in("Before", "one")) },
			func() (WriteResult, error) {
				return s.Create(ctx, agent, "", "", Input{Kind: "procedure", Title: "Proposed", Body: "Needs review."})
			},
			func() (WriteResult, error) { return s.Create(ended, person, "", "key-ended", in("Ended", "two")) },
			func() (WriteResult, error) { return s.Create(ctx, person, "", "", in("After", "three")) },
		})
		s.drain(agent.SpaceID)
		got := make([]createAnswer, len(answers))
		for i, c := range answers {
			got[i] = <-c
		}
		require.NoError(t, got[0].err)
		require.NoError(t, got[1].err)
		require.NotEmpty(t, got[1].res.ProposalID)
		require.ErrorIs(t, got[2].err, context.Canceled)
		require.Nil(t, got[2].res.Note)
		require.NoError(t, got[3].err)
		first, last := got[0].res.Note.ID, got[3].res.Note.ID

		rows := readBatchRows(t, d, agent.SpaceID)
		require.Equal(t, append(slices.Clone(before.events), first, got[1].res.ProposalID, last), rows.events, "the notes' and the proposal's events in write order")
		for i := range rows.positions {
			require.Equal(t, int64(i+1), rows.positions[i])
		}
		require.Equal(t, map[string][]string{first: {"one"}, last: {"three"}}, rows.tags)
		if db.IsSQLite(d) {
			want := []string{first, last}
			slices.Sort(want)
			require.Equal(t, want, rows.fts)
		}
		require.Equal(t, 2, countIn(t, d, agent.SpaceID, (*models.Note)(nil)))
		require.Zero(t, countIn(t, d, agent.SpaceID, (*models.NoteRequest)(nil)), "the ended request stored no idempotency record")
		require.Equal(t, receiptsBefore+3, countIn(t, d, agent.SpaceID, (*models.Receipt)(nil)))
		v, err := receipts.Verify(ctx, d, agent.SpaceID)
		require.NoError(t, err)
		require.True(t, v.OK, "the chain verifies: %+v", v)
	})
}

// Issue 16, AM-1, AM-13: note writes racing through two replicas (two Services, one
// database), without holding their queues: new notes, identical notes (one is stored), edits
// and retirements of the stored ones. Afterwards every note has exactly its tags, on SQLite
// one search row, and exactly one note_created event, the space's events are at positions
// 1..n; the count of active notes is exact, a receipt was stored per stored write and the
// chain verifies; search finds each active note by its own word and no retired one.
func TestNoteWritesRacingReplicasKeepSideRows(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		s1, agent := queueEnv(t, d, "")
		s2 := &Service{DB: s1.DB, Docs: s1.Docs, Hasher: s1.Hasher, Subjects: s1.Subjects}
		person := integrationKey(t, d, agent)
		receiptsBefore := countIn(t, d, agent.SpaceID, (*models.Receipt)(nil))
		eventsBefore := countIn(t, d, agent.SpaceID, (*models.OutboxEvent)(nil))

		var mu sync.Mutex
		var ids []string
		writes := 0 // stored writes (each with one receipt)
		stored := func(id string) {
			mu.Lock()
			defer mu.Unlock()
			writes++
			if id != "" {
				ids = append(ids, id)
			}
		}
		pick := func(i int) string {
			mu.Lock()
			defer mu.Unlock()
			if len(ids) == 0 {
				return ""
			}
			return ids[i%len(ids)]
		}
		const workers, rounds = 6, 12
		failed := make(chan error, workers) // a worker's unexpected error ends it
		var wg sync.WaitGroup
		for w := range workers {
			s := []*Service{s1, s2}[w%2]
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := range rounds {
					var res WriteResult
					var err error
					switch (w + r) % 4 {
					case 0, 1:
						res, err = s.Create(ctx, person, "", "", Input{SourceID: agent.Agent, Kind: "procedure",
							Title: fmt.Sprintf("Race word%c%c", 'a'+w, 'a'+r), Body: "Racing.", Tags: []string{fmt.Sprintf("worker-%c", 'a'+w), fmt.Sprintf("round-%c", 'a'+r)}})
					case 2:
						res, err = s.Create(ctx, person, "", "", Input{SourceID: agent.Agent, Kind: "procedure", Title: "Same everywhere", Body: "Identical.", Tags: []string{"same"}})
						if err == nil && res.DuplicateOf != "" {
							continue
						}
					case 3:
						id := pick(w*rounds + r)
						if id == "" {
							continue
						}
						if r%2 == 1 {
							_, err = s.Retire(ctx, agent, id)
							if err == nil {
								stored("")
							}
							if err == nil || fault.IsCode(err, CodeNotActive) {
								continue
							}
							failed <- fmt.Errorf("worker %d round %d: retire: %w", w, r, err)
							return
						}
						title := fmt.Sprintf("Edited word%c%c", 'a'+w, 'a'+r)
						res, err = s.NewVersion(ctx, agent, "", "", id, Patch{Title: &title})
						if fault.IsCode(err, CodeNotActive) {
							continue
						}
					}
					if err != nil {
						failed <- fmt.Errorf("worker %d round %d: %w", w, r, err)
						return
					}
					stored(res.Note.ID)
				}
			}()
		}
		wg.Wait()
		close(failed)
		for err := range failed {
			require.NoError(t, err)
		}

		var all []models.Note
		require.NoError(t, d.NewSelect().Model(&all).Where("space_id = ?", agent.SpaceID).Scan(ctx))
		rows := readBatchRows(t, d, agent.SpaceID)
		wantTags := map[string][]string{}
		var noteIDs []string
		active := 0
		for _, n := range all {
			noteIDs = append(noteIDs, n.ID)
			if tags := noterows.DecodeTags(n.Tags); len(tags) > 0 {
				slices.Sort(tags)
				wantTags[n.ID] = tags
			}
			if n.Status == StatusActive {
				active++
			}
		}
		require.Equal(t, wantTags, rows.tags)
		require.ElementsMatch(t, noteIDs, rows.events, "one note_created per note")
		require.Len(t, rows.positions, eventsBefore+len(all))
		for i := range rows.positions {
			require.Equal(t, int64(i+1), rows.positions[i], "consecutive positions")
		}
		if db.IsSQLite(d) {
			require.ElementsMatch(t, noteIDs, rows.fts, "one search row per note")
		}
		var kept int
		require.NoError(t, d.NewRaw("SELECT active FROM note_source_counts WHERE space_id = ? AND source_id = ?", agent.SpaceID, agent.Agent).Scan(ctx, &kept))
		require.Equal(t, active, kept, "the count of active notes is exact")
		require.Equal(t, receiptsBefore+writes, countIn(t, d, agent.SpaceID, (*models.Receipt)(nil)), "a receipt per stored write")
		v, err := receipts.Verify(ctx, d, agent.SpaceID)
		require.NoError(t, err)
		require.True(t, v.OK, "the chain verifies: %+v", v)
		for _, n := range all {
			if n.Title == "Same everywhere" {
				continue
			}
			word := strings.Fields(n.Title)[1]
			res, err := s1.Search(ctx, agent, SearchRequest{Q: word})
			require.NoError(t, err)
			var found []string
			for _, f := range res.Notes {
				found = append(found, f.ID)
			}
			if n.Status == StatusActive {
				require.Equal(t, []string{n.ID}, found, "%q finds its active note", word)
			} else {
				require.NotContains(t, found, n.ID, "%q: a retired note leaves search", word)
			}
		}
	})
}

// Issue 16: a write whose note insert fails inside a batch (a failed statement: on
// PostgreSQL the transaction is aborted until its savepoint is rolled back to) rolls back
// only itself, the source's count with it, and answers the error; the writes before and
// after it, a new note and an edit among them, are stored with exactly their tags, search
// rows, events (write order, consecutive positions) and receipts, and the chain verifies.
func TestNoteBatchFailedStatementRollsBackOnlyItsWrite(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		s, agent := queueEnv(t, d, `{"agent_memory": {"enabled": true, "max_notes_per_source": 3}}`)
		person := integrationKey(t, d, agent)
		orig, err := s.Create(ctx, agent, "", "", Input{Kind: "procedure", Title: "Original", Body: "Edited in the batch.", Tags: []string{"orig"}})
		require.NoError(t, err)
		failInserts(t, d, "notes", "title", "Boom")
		before := readBatchRows(t, d, agent.SpaceID)
		receiptsBefore := countIn(t, d, agent.SpaceID, (*models.Receipt)(nil))
		in := func(title string, tags ...string) Input {
			return Input{SourceID: agent.Agent, Kind: "procedure", Title: title, Body: "Around a failure.", Tags: tags}
		}
		title, boom := "Edited", "Boom"
		answers := queueCalls(t, s, agent.SpaceID, []func() (WriteResult, error){
			func() (WriteResult, error) { return s.Create(ctx, person, "", "key-1", in("First", "one")) },
			func() (WriteResult, error) { return s.Create(ctx, person, "", "key-b", in("Boom", "boom")) },
			func() (WriteResult, error) {
				return s.NewVersion(ctx, agent, "", "", orig.Note.ID, Patch{Title: &boom})
			},
			func() (WriteResult, error) {
				return s.NewVersion(ctx, agent, "", "", orig.Note.ID, Patch{Title: &title, Tags: &[]string{"edited"}})
			},
			func() (WriteResult, error) { return s.Create(ctx, person, "", "", in("Last", "three")) },
			func() (WriteResult, error) { return s.Create(ctx, person, "", "", in("Over", "four")) },
		})
		s.drain(agent.SpaceID)
		got := make([]createAnswer, len(answers))
		for i, c := range answers {
			got[i] = <-c
		}
		require.NoError(t, got[0].err)
		require.ErrorContains(t, got[1].err, "boom")
		require.ErrorContains(t, got[2].err, "boom", "the failed edit's retirement is rolled back with it")
		require.NoError(t, got[3].err, "the edit after it finds the version active")
		require.NoError(t, got[4].err)
		require.True(t, fault.IsCode(got[5].err, CodeCapReached), "three active notes: %v", got[5].err)
		first, edited, last := got[0].res.Note.ID, got[3].res.Note.ID, got[4].res.Note.ID

		rows := readBatchRows(t, d, agent.SpaceID)
		require.Equal(t, append(slices.Clone(before.events), first, edited, last), rows.events)
		for i := range rows.positions {
			require.Equal(t, int64(i+1), rows.positions[i])
		}
		require.Equal(t, map[string][]string{orig.Note.ID: {"orig"}, first: {"one"}, edited: {"edited"}, last: {"three"}}, rows.tags)
		if db.IsSQLite(d) {
			want := []string{orig.Note.ID, first, edited, last}
			slices.Sort(want)
			require.Equal(t, want, rows.fts)
		}
		require.Equal(t, 1, countIn(t, d, agent.SpaceID, (*models.NoteRequest)(nil)), "only the stored write's idempotency record")
		require.Equal(t, receiptsBefore+3, countIn(t, d, agent.SpaceID, (*models.Receipt)(nil)))
		v, err := receipts.Verify(ctx, d, agent.SpaceID)
		require.NoError(t, err)
		require.True(t, v.OK, "the chain verifies: %+v", v)
		var active int
		require.NoError(t, d.NewRaw("SELECT active FROM note_source_counts WHERE space_id = ? AND source_id = ?", agent.SpaceID, agent.Agent).Scan(ctx, &active))
		require.Equal(t, 3, active)
	})
}

// Issue 16, AM-7: when expired notes keep a source's count of active notes at the cap, every
// new note is counted exactly (on PostgreSQL the count-and-insert statement inserts nothing
// and the exact count decides): 10 distinct notes queued on two replicas (one batch each,
// racing for the space's head) fill exactly the 3 places the expired notes left, the other 7
// are refused at the cap, the count keeps every active note and the chain verifies.
func TestNoteCapExactOverExpiredAcrossReplicas(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		s1, p := queueEnv(t, d, `{"agent_memory": {"enabled": true, "max_notes_per_source": 5}}`)
		person := integrationKey(t, d, p)
		t0 := time.Now().UTC().Truncate(time.Second)
		expires := t0.Add(10 * time.Minute)
		s1.Now = func() time.Time { return t0 }
		for i := range 5 {
			in := Input{SourceID: p.Agent, Kind: "procedure", Title: fmt.Sprintf("Early %c", 'a'+i), Body: "Before."}
			if i < 3 {
				in.ValidUntil = &expires
			}
			_, err := s1.Create(ctx, person, "", "", in)
			require.NoError(t, err)
		}
		later := func() time.Time { return t0.Add(time.Hour) }
		s1.Now = later
		s2 := &Service{DB: s1.DB, Docs: s1.Docs, Hasher: s1.Hasher, Subjects: s1.Subjects, Now: later}
		ins := make([]Input, 10)
		for i := range ins {
			ins[i] = Input{SourceID: p.Agent, Kind: "procedure", Title: fmt.Sprintf("Late %c", 'a'+i), Body: "After.", Tags: []string{"late"}}
		}
		var stored []string
		refusedAtCap := 0
		for _, c := range raceReplicas(t, s1, s2, person, ins) {
			a := <-c
			if a.err == nil {
				stored = append(stored, a.res.Note.ID)
				continue
			}
			require.True(t, fault.IsCode(a.err, CodeCapReached), "%v", a.err)
			refusedAtCap++
		}
		require.Len(t, stored, 3, "the places the expired notes left")
		require.Equal(t, 7, refusedAtCap)
		var kept int
		require.NoError(t, d.NewRaw("SELECT active FROM note_source_counts WHERE space_id = ? AND source_id = ?", p.SpaceID, p.Agent).Scan(ctx, &kept))
		require.Equal(t, 8, kept, "every active note, the expired ones too")
		rows := readBatchRows(t, d, p.SpaceID)
		var late []string
		for id, tags := range rows.tags {
			if slices.Equal(tags, []string{"late"}) {
				late = append(late, id)
			}
		}
		require.ElementsMatch(t, stored, late, "tags of exactly the stored notes")
		require.Len(t, rows.events, 8)
		v, err := receipts.Verify(ctx, d, p.SpaceID)
		require.NoError(t, err)
		require.True(t, v.OK, "the chain verifies: %+v", v)
	})
}
