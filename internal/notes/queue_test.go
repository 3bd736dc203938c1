package notes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
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
	"github.com/agentmemory/agentmemory/internal/keyed"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/internal/subjects"
	"github.com/agentmemory/agentmemory/models"
)

// queueEnv is a space with features (a JSON document; "" for agent memory on), a Service on
// d and an agent principal that writes.
func queueEnv(t *testing.T, d *bun.DB, features string) (*Service, auth.Principal) {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	_, admin, err := spaces.CreateWith(ctx, d, "queue", now, spaces.CreateOptions{DirectPut: true})
	require.NoError(t, err)
	adminP, err := auth.Authenticate(ctx, d, admin)
	require.NoError(t, err)
	docs := spaces.Documents{DB: d}
	if features == "" {
		features = `{"agent_memory": {"enabled": true}}`
	}
	_, _, err = docs.Put(ctx, d, adminP, "features", []byte(features), now)
	require.NoError(t, err)
	h := keyed.New([]byte("queue-test-secret-0123456789abcdef0123"))
	ks, err := keystore.OpenFile(filepath.Join(t.TempDir(), "keys.json"), h.Key("subject-keys"))
	require.NoError(t, err)
	s := &Service{DB: d, Docs: docs, Hasher: h, Subjects: &subjects.Service{DB: d, Docs: docs, Hasher: h, Keys: ks, Now: time.Now}}
	_, key, err := spaces.MintKey(ctx, d, adminP, auth.KeySpec{Kind: "agent", Agent: "bot", Vendor: "acme", Scopes: []string{auth.ScopeAgentMemory, auth.ScopeAgentMemoryWrite}}, now)
	require.NoError(t, err)
	p, err := auth.Authenticate(ctx, d, key)
	require.NoError(t, err)
	return s, p
}

// hold waits until spaceID's batches have ended (an earlier write's goroutine may still be
// finding its queue empty), then marks them as running without running any, so writes queue
// behind until the test drains them.
func (q *spaceQueues) hold(spaceID string) {
	for {
		q.mu.Lock()
		if q.m == nil {
			q.m = map[string]*spaceQueue{}
		}
		if q.m[spaceID] == nil {
			q.m[spaceID] = &spaceQueue{running: true}
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
}

// waitQueued waits until n writes of spaceID wait for their batch; it fails the test if
// answer (a write's answer, nil for none) comes first, as a write refused before its queue.
func (q *spaceQueues) waitQueued(t *testing.T, spaceID string, n int, answer <-chan createAnswer) {
	t.Helper()
	for q.waiting(spaceID) < n {
		select {
		case a := <-answer:
			t.Fatalf("answered before it was queued: %+v", a)
		case <-time.After(time.Millisecond):
		}
	}
}

// Issue 16: a note write whose request ends while it waits for its space's turn in the
// process answers the context's error and stores nothing (no note, receipt or event); the
// queue of the space is gone once nobody waits (the map does not grow with spaces written
// once), and the next write is stored.
func TestNoteWriteCancelledWhileQueued(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		s, p := queueEnv(t, d, "")
		count := func(m any) int { return countIn(t, d, p.SpaceID, m) }
		receiptsBefore, eventsBefore := count((*models.Receipt)(nil)), count((*models.OutboxEvent)(nil))

		s.writes.hold(p.SpaceID) // another batch runs
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan createAnswer, 1)
		go func() {
			res, err := s.Create(wctx, p, "", "", Input{Kind: "procedure", Title: "Queued", Body: "Cancelled while queued."})
			done <- createAnswer{res, err}
		}()
		s.writes.waitQueued(t, p.SpaceID, 1, done)
		cancel()
		require.ErrorIs(t, (<-done).err, context.Canceled)
		s.drain(p.SpaceID) // the batch after: it skips the ended request

		require.Zero(t, count((*models.Note)(nil)), "no note stored")
		require.Equal(t, receiptsBefore, count((*models.Receipt)(nil)), "no receipt stored")
		require.Equal(t, eventsBefore, count((*models.OutboxEvent)(nil)), "no event stored")
		require.Zero(t, s.writes.queued(), "no queue left behind")

		res, err := s.Create(ctx, p, "", "", Input{Kind: "procedure", Title: "Next", Body: "Stored after."})
		require.NoError(t, err)
		require.NotNil(t, res.Note)
		require.Equal(t, 1, count((*models.Note)(nil)))
		// The write's batch goroutine forgets the space once it finds the queue empty.
		require.Eventually(t, func() bool { return s.writes.queued() == 0 }, 10*time.Second, time.Millisecond, "no queue left behind")
	})
}

// queueWrites holds spaceID's batches, starts one Create per input in this order (each
// queued before the next starts) and returns their answers, to be read after s.drain.
func queueWrites(t *testing.T, s *Service, p auth.Principal, ins []Input, idem []string) []chan createAnswer {
	t.Helper()
	s.writes.hold(p.SpaceID)
	out := make([]chan createAnswer, len(ins))
	for i, in := range ins {
		out[i] = make(chan createAnswer, 1)
		go func() {
			res, err := s.Create(context.Background(), p, "", idem[i], in)
			out[i] <- createAnswer{res, err}
		}()
		s.writes.waitQueued(t, p.SpaceID, i+1, out[i])
	}
	return out
}

// raceReplicas queues ins on two replicas of one space in turn (even indexes on s1, odd on
// s2), then commits both replicas' batches at once, and returns the answers, s1's first.
func raceReplicas(t *testing.T, s1, s2 *Service, p auth.Principal, ins []Input) []chan createAnswer {
	t.Helper()
	var ins1, ins2 []Input
	for i, in := range ins {
		if i%2 == 0 {
			ins1 = append(ins1, in)
		} else {
			ins2 = append(ins2, in)
		}
	}
	a1 := queueWrites(t, s1, p, ins1, make([]string, len(ins1)))
	a2 := queueWrites(t, s2, p, ins2, make([]string, len(ins2)))
	var wg sync.WaitGroup
	for _, s := range []*Service{s1, s2} {
		wg.Add(1)
		go func() { defer wg.Done(); s.drain(p.SpaceID) }()
	}
	wg.Wait()
	return append(a1, a2...)
}

type createAnswer struct {
	res WriteResult
	err error
}

// Issue 16: one batch of a space's queued note writes with refused members: a duplicate of
// an earlier member answers that note, an Idempotency-Key replay of an earlier member answers
// its first answer, a write over the cap is refused, and each rolls back only itself; the
// others are stored, each with its own receipt (the chain verifies) and one event each.
func TestNoteBatchRefusedMember(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		s, p := queueEnv(t, d, `{"agent_memory": {"enabled": true, "max_notes_per_source": 2}}`)
		receiptsBefore := countIn(t, d, p.SpaceID, (*models.Receipt)(nil))
		a := Input{Kind: "procedure", Title: "First", Body: "Stored."}
		ins := []Input{a, a, {Kind: "procedure", Title: "Second", Body: "Stored too."}, a, {Kind: "procedure", Title: "Third", Body: "Over the cap."}}
		idem := []string{"key-a", "", "", "key-a", ""}
		answers := queueWrites(t, s, p, ins, idem)
		s.drain(p.SpaceID)
		got := make([]createAnswer, len(answers))
		for i, c := range answers {
			got[i] = <-c
		}
		require.NoError(t, got[0].err)
		first := got[0].res.Note.ID
		require.NoError(t, got[1].err)
		require.Equal(t, first, got[1].res.DuplicateOf, "a duplicate of the batch's first write")
		require.NoError(t, got[2].err)
		second := got[2].res.Note.ID
		require.NoError(t, got[3].err)
		require.True(t, got[3].res.Replayed, "a replay of the batch's first write")
		require.Equal(t, first, got[3].res.Note.ID)
		require.True(t, fault.IsCode(got[4].err, CodeCapReached), "over the cap: %v", got[4].err)

		var ids []string
		require.NoError(t, d.NewSelect().Model((*models.Note)(nil)).Column("id").Where("space_id = ?", p.SpaceID).Order("id").Scan(ctx, &ids))
		require.ElementsMatch(t, []string{first, second}, ids)
		require.Equal(t, receiptsBefore+2, countIn(t, d, p.SpaceID, (*models.Receipt)(nil)), "a receipt per stored write")
		v, err := receipts.Verify(ctx, d, p.SpaceID)
		require.NoError(t, err)
		require.True(t, v.OK, "the chain verifies: %+v", v)
		var evs []models.OutboxEvent
		require.NoError(t, d.NewSelect().Model(&evs).Where("space_id = ? AND type = ?", p.SpaceID, events.TypeNoteCreated).Scan(ctx))
		require.Len(t, evs, 2, "one event per stored note")
		require.NotEqual(t, evs[0].Position, evs[1].Position)
		require.Zero(t, s.writes.queued())
	})
}

// Issue 16: when a batch's transaction fails at its end, every write of the batch answers the
// error and nothing of any is stored (no note, receipt or event); the next batch stores.
func TestNoteBatchCommitFails(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		s, p := queueEnv(t, d, "")
		receiptsBefore := countIn(t, d, p.SpaceID, (*models.Receipt)(nil))
		eventsBefore := countIn(t, d, p.SpaceID, (*models.OutboxEvent)(nil))
		failed := errors.New("commit failed")
		var ran int
		s.beforeBatchCommit = func(n int) error { ran = n; return failed }
		ins := []Input{{Kind: "procedure", Title: "One", Body: "Lost."}, {Kind: "procedure", Title: "Two", Body: "Lost."}, {Kind: "procedure", Title: "Three", Body: "Lost."}}
		answers := queueWrites(t, s, p, ins, []string{"", "key-2", ""})
		s.drain(p.SpaceID)
		require.Equal(t, 3, ran, "one batch ran all three")
		for _, c := range answers {
			a := <-c
			require.ErrorIs(t, a.err, failed)
			require.Nil(t, a.res.Note)
		}
		require.Zero(t, countIn(t, d, p.SpaceID, (*models.Note)(nil)))
		require.Zero(t, countIn(t, d, p.SpaceID, (*models.NoteRequest)(nil)))
		require.Equal(t, receiptsBefore, countIn(t, d, p.SpaceID, (*models.Receipt)(nil)))
		require.Equal(t, eventsBefore, countIn(t, d, p.SpaceID, (*models.OutboxEvent)(nil)))

		s.beforeBatchCommit = nil
		res, err := s.Create(ctx, p, "", "key-2", ins[1])
		require.NoError(t, err)
		require.False(t, res.Replayed, "the failed batch left no idempotency record")
		require.Equal(t, 1, countIn(t, d, p.SpaceID, (*models.Note)(nil)))
	})
}

// countIn counts model m's rows of spaceID.
func countIn(t *testing.T, d *bun.DB, spaceID string, m any) int {
	t.Helper()
	n, err := d.NewSelect().Model(m).Where("space_id = ?", spaceID).Count(context.Background())
	require.NoError(t, err)
	return int(n)
}

// Issue 16, AM-7: batches of two replicas (two Services, one database) racing for one
// space's head keep the hourly limit and the cap exact: 30 distinct notes of an agent, 15
// queued on each replica and committed as one batch each at once, store exactly RateLimit;
// 12 under a cap of 5 store exactly 5.
func TestNoteBatchLimitsExactAcrossReplicas(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		race := func(features string, n int) (stored int, codes map[string]int) {
			s1, p := queueEnv(t, d, features)
			s2 := &Service{DB: s1.DB, Docs: s1.Docs, Hasher: s1.Hasher, Subjects: s1.Subjects}
			ins := make([]Input, n)
			for i := range ins {
				ins[i] = Input{Kind: "procedure", Title: fmt.Sprintf("Note %d", i), Body: "Distinct."}
			}
			codes = map[string]int{}
			for _, c := range raceReplicas(t, s1, s2, p, ins) {
				a := <-c
				if a.err == nil {
					require.NotNil(t, a.res.Note)
					stored++
					continue
				}
				f := fault.As(a.err)
				require.NotNil(t, f, "a refusal, not %v", a.err)
				codes[f.Code]++
			}
			require.Equal(t, stored, countIn(t, d, p.SpaceID, (*models.Note)(nil)))
			v, err := receipts.Verify(context.Background(), d, p.SpaceID)
			require.NoError(t, err)
			require.True(t, v.OK, "the chain verifies: %+v", v)
			return stored, codes
		}
		stored, codes := race("", RateLimit+10)
		require.Equal(t, RateLimit, stored)
		require.Equal(t, map[string]int{CodeRateLimited: 10}, codes)
		stored, codes = race(`{"agent_memory": {"enabled": true, "max_notes_per_source": 5}}`, 12)
		require.Equal(t, 5, stored)
		require.Equal(t, map[string]int{CodeCapReached: 7}, codes)
	})
}

// Issue 16, AM-7: a source's count of active notes counts expired notes until they are
// retired, so a source at the cap by its count is counted exactly: a note that expired no
// longer holds a place (the write is stored), the count keeps every note, and the next write
// is refused at the cap (2 here); a note written, expiring and refused in one batch alike.
func TestNoteCapCountsExpiredNotesExactly(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		s, p := queueEnv(t, d, `{"agent_memory": {"enabled": true, "max_notes_per_source": 2}}`)
		t0 := time.Now().UTC().Truncate(time.Second)
		s.Now = func() time.Time { return t0 }
		expires := t0.Add(30 * time.Minute)
		for i, until := range []*time.Time{&expires, nil} {
			_, err := s.Create(ctx, p, "", "", Input{Kind: "procedure", Title: fmt.Sprintf("First %d", i), Body: "Kept.", ValidUntil: until})
			require.NoError(t, err)
		}
		_, err := s.Create(ctx, p, "", "", Input{Kind: "procedure", Title: "Refused", Body: "At the cap."})
		require.True(t, fault.IsCode(err, CodeCapReached), "two active notes: %v", err)

		s.writes.hold(p.SpaceID)
		later, earlier, last := make(chan createAnswer, 1), make(chan createAnswer, 1), make(chan createAnswer, 1)
		for i, at := range []time.Time{t0.Add(time.Hour), t0.Add(time.Minute), t0.Add(time.Hour)} {
			s.Now = func() time.Time { return at }
			out := []chan createAnswer{later, earlier, last}[i]
			go func() {
				res, err := s.Create(ctx, p, "", "", Input{Kind: "procedure", Title: fmt.Sprintf("Note %d", i), Body: "Distinct."})
				out <- createAnswer{res, err}
			}()
			s.writes.waitQueued(t, p.SpaceID, i+1, out)
		}
		s.drain(p.SpaceID)
		a := <-later
		require.NoError(t, a.err, "an hour on, the first note has expired: one active note, under the cap")
		b := <-earlier
		require.True(t, fault.IsCode(b.err, CodeCapReached), "a minute on, the first note is still active: %v", b.err)
		c := <-last
		require.True(t, fault.IsCode(c.err, CodeCapReached), "an hour on, two notes are active again: %v", c.err)
		var kept int
		require.NoError(t, d.NewRaw("SELECT active FROM note_source_counts WHERE space_id = ? AND source_id = ?", p.SpaceID, p.Agent).Scan(ctx, &kept))
		require.Equal(t, 3, kept, "the count keeps the expired note, which is still active")
	})
}

// Issue 16: a panic inside a batch's transaction fails the batch, not the process: every
// write of it answers an error, none is stored, and the space's next write is stored.
func TestNoteBatchPanicFailsBatch(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		s, p := queueEnv(t, d, "")
		s.beforeBatchCommit = func(int) error { panic("batch hook") }
		answers := queueWrites(t, s, p, []Input{{Kind: "procedure", Title: "One", Body: "Lost."}, {Kind: "procedure", Title: "Two", Body: "Lost."}}, []string{"", ""})
		s.drain(p.SpaceID)
		for _, c := range answers {
			a := <-c
			require.ErrorContains(t, a.err, "panic")
		}
		require.Zero(t, countIn(t, d, p.SpaceID, (*models.Note)(nil)))
		s.beforeBatchCommit = nil
		_, err := s.Create(ctx, p, "", "", Input{Kind: "procedure", Title: "Three", Body: "Stored."})
		require.NoError(t, err)
		require.Equal(t, 1, countIn(t, d, p.SpaceID, (*models.Note)(nil)))
	})
}

// Issue 16, AM-13, GOV-4: a batch stores its notes' tags, search rows and note_created events
// at its end, each kind in one statement, in the order of its writes: an agent's proposal
// queued between a person's notes (writes: human_only) has its event between theirs, a
// duplicate of an earlier member stores no tag, search row or event, and the positions are
// consecutive in write order. On SQLite each stored note is in the search index once.
func TestNoteBatchStoresRowsInWriteOrder(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		s, agent := queueEnv(t, d, `{"agent_memory": {"enabled": true, "writes": "human_only"}}`)
		person := integrationKey(t, d, agent)

		a := Input{Kind: "procedure", SourceID: agent.Agent, Title: "Alpha", Body: "Refund alpha.", Tags: []string{"refund", "orders"}}
		writes := []struct {
			p  auth.Principal
			in Input
		}{
			{person, a},
			{agent, Input{Kind: "procedure", Title: "Proposed", Body: "Needs review.", Tags: []string{"review"}}},
			{person, Input{Kind: "procedure", SourceID: agent.Agent, Title: "Bravo", Body: "Refund bravo.", Tags: []string{"gift"}}},
			{person, a},
			{person, Input{Kind: "procedure", SourceID: agent.Agent, Title: "Charlie", Body: "Refund charlie."}},
		}
		s.writes.hold(agent.SpaceID)
		answers := make([]chan createAnswer, len(writes))
		for i, w := range writes {
			answers[i] = make(chan createAnswer, 1)
			go func() {
				res, err := s.Create(ctx, w.p, "", "", w.in)
				answers[i] <- createAnswer{res, err}
			}()
			s.writes.waitQueued(t, agent.SpaceID, i+1, answers[i])
		}
		s.drain(agent.SpaceID)
		got := make([]createAnswer, len(answers))
		for i, c := range answers {
			got[i] = <-c
			require.NoError(t, got[i].err, "write %d", i)
		}
		alpha, bravo, charlie := got[0].res.Note.ID, got[2].res.Note.ID, got[4].res.Note.ID
		require.NotEmpty(t, got[1].res.ProposalID)
		require.Equal(t, alpha, got[3].res.DuplicateOf)

		var evs []models.OutboxEvent
		require.NoError(t, d.NewSelect().Model(&evs).Where("space_id = ?", agent.SpaceID).Order("position ASC").Scan(ctx))
		var order []string
		for i, row := range evs {
			if i > 0 {
				require.Equal(t, evs[i-1].Position+1, row.Position, "consecutive positions")
				require.Greater(t, row.Seq, evs[i-1].Seq, "seq in position order")
			}
			var e events.Event
			require.NoError(t, json.Unmarshal([]byte(row.Payload), &e))
			order = append(order, e.NoteID+e.ProposalID)
		}
		require.Equal(t, []string{alpha, got[1].res.ProposalID, bravo, charlie}, order, "events in write order")

		var tags []models.NoteTag
		require.NoError(t, d.NewSelect().Model(&tags).Where("space_id = ?", agent.SpaceID).Order("note_id", "tag").Scan(ctx))
		gotTags := map[string][]string{}
		for _, tg := range tags {
			gotTags[tg.NoteID] = append(gotTags[tg.NoteID], tg.Tag)
		}
		require.Equal(t, map[string][]string{alpha: {"orders", "refund"}, bravo: {"gift"}}, gotTags)

		if !db.IsSQLite(d) {
			return // PostgreSQL's search column is generated from the note's row
		}
		var ids []string
		require.NoError(t, d.NewRaw("SELECT note_id FROM notes_fts WHERE notes_fts MATCH 'refund'").Scan(ctx, &ids))
		require.ElementsMatch(t, []string{alpha, bravo, charlie}, ids, "each stored note is in the search index once")
	})
}

// Issue 16: a space's batch goroutine lets the writes about to be queued join its batch
// (gather). On one processor, with one write queued and 7 handlers runnable that each queue
// one, the next batch takes all 8 (without gather it takes the first alone).
func TestNoteBatchGathersQueuedWrites(t *testing.T) {
	procs := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(procs)
	var q spaceQueues
	q.enqueue("sp_a", &queuedWrite{})
	var wg sync.WaitGroup
	for range 7 {
		wg.Go(func() { q.enqueue("sp_a", &queuedWrite{}) })
	}
	q.gather("sp_a")
	require.Len(t, q.take("sp_a"), 8)
	wg.Wait()
}
