package feed_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/feed"
	"github.com/agentmemory/agentmemory/models"
)

// openURL opens and migrates the database at u (a replica's own pool).
func openURL(t *testing.T, u string) *bun.DB {
	t.Helper()
	d, err := db.Open(context.Background(), u, dbtest.Shipped())
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close(d) }) // closing a pool at the test's end: nothing to lose
	_, err = db.Migrate(context.Background(), d)
	require.NoError(t, err)
	return d
}

func insertBase(ctx context.Context, idb bun.IDB, spaceID, id string) error {
	_, err := idb.NewInsert().Model(&models.KnowledgeBase{ID: id, SpaceID: spaceID, Name: id, Settings: "{}",
		CreatedAt: time.Now().UTC()}).Exec(ctx)
	return err
}

// TestFeedNeverPassesAnInFlightChange: a change that took its seq first but commits last is
// still read after the reader has read the later one, at the next cursor (never skipped).
func TestFeedNeverPassesAnInFlightChange(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		_, err := d.NewInsert().Model(&models.Space{ID: "spc_a", Name: "a", CreatedAt: time.Now()}).Exec(ctx)
		require.NoError(t, err)
		slow, err := d.BeginTx(ctx, nil)
		require.NoError(t, err)
		require.NoError(t, insertBase(ctx, slow, "spc_a", "kb_slow"))
		if !db.IsSQLite(d) {
			// PostgreSQL: a later transaction takes a later seq and commits first.
			require.NoError(t, insertBase(ctx, d, "spc_a", "kb_fast"))
			recs := readAll(t, d, "spc_a", 0, 10)
			require.Len(t, recs, 1)
			require.Equal(t, [2]any{int64(1), "kb_fast"}, [2]any{recs[0].Cursor, recs[0].Key})
		} else {
			// SQLite: writers take turns, so the reader only ever waits for the open one.
			require.Empty(t, readAll(t, d, "spc_a", 0, 10))
		}
		require.NoError(t, slow.Commit())
		recs := readAll(t, d, "spc_a", 0, 10)
		require.Equal(t, "kb_slow", recs[len(recs)-1].Key)
		require.Equal(t, int64(len(recs)), recs[len(recs)-1].Cursor, "the late commit takes the next cursor")
	})
}

// TestFeedHelperReplica is the writer process of TestFeedUnderTwoReplicasAndAKill: with
// FEED_HELPER_URL set it inserts knowledge bases one per transaction (held open a moment, so
// a kill often lands inside one), numbers the feed now and then (as a replica's reader does),
// and prints each id once committed. Without it, it does nothing.
func TestFeedHelperReplica(t *testing.T) {
	u := os.Getenv("FEED_HELPER_URL")
	if u == "" {
		t.Skip("helper process of TestFeedUnderTwoReplicasAndAKill")
	}
	d := openURL(t, u)
	ctx := context.Background()
	name := os.Getenv("FEED_HELPER_NAME")
	n, err := strconv.Atoi(os.Getenv("FEED_HELPER_N"))
	require.NoError(t, err)
	for i := range n {
		id := fmt.Sprintf("kb_%s_%d", name, i)
		err := d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			if err := insertBase(ctx, tx, "spc_a", id); err != nil {
				return err
			}
			time.Sleep(time.Millisecond)
			return nil
		})
		require.NoError(t, err)
		fmt.Println("committed", id)
		if i%7 == 0 {
			_, err := feed.Advance(ctx, d, "spc_a")
			require.NoError(t, err)
		}
	}
}

// startReplica runs TestFeedHelperReplica as a process writing n bases named name; lines
// receives the ids it reports committed.
func startReplica(t *testing.T, u, name string, n int, lines chan<- string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFeedHelperReplica$", "-test.count=1")
	cmd.Env = append(os.Environ(), "FEED_HELPER_URL="+u, "FEED_HELPER_NAME="+name, "FEED_HELPER_N="+strconv.Itoa(n))
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if id, ok := strings.CutPrefix(sc.Text(), "committed "); ok {
				lines <- id
			}
		}
	}()
	return cmd
}

// TestFeedUnderTwoReplicasAndAKill: two writer processes on one database, each numbering the
// feed as it goes, while this process reads it; one is killed with SIGKILL mid-run. Every
// committed row appears exactly once, at cursors 1..N without a gap, and what the reader saw
// while they ran is a prefix of the final feed (no cursor ever changed its record).
func TestFeedUnderTwoReplicasAndAKill(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			u := dbtest.URL(t, engine)
			d := openURL(t, u)
			ctx := context.Background()
			_, err := d.NewInsert().Model(&models.Space{ID: "spc_a", Name: "a", CreatedAt: time.Now()}).Exec(ctx)
			require.NoError(t, err)

			committed := make(chan string, 1000)
			survivor := startReplica(t, u, "one", 120, committed)
			victim := startReplica(t, u, "two", 400, committed)
			var mu sync.Mutex
			var seen []feed.Record
			stop := make(chan struct{})
			readerDone := make(chan error, 1)
			go func() { readerDone <- follow(ctx, d, &mu, &seen, stop) }()

			reported := map[string]bool{}
			for victimCount := 0; victimCount < 40; {
				id := <-committed
				reported[id] = true
				if strings.HasPrefix(id, "kb_two_") {
					victimCount++
				}
			}
			require.NoError(t, victim.Process.Signal(syscall.SIGKILL))
			_ = victim.Wait() // killed: its exit status says so, nothing to check
			require.NoError(t, survivor.Wait())
			close(stop)
			require.NoError(t, <-readerDone)
			for len(committed) > 0 {
				reported[<-committed] = true
			}
			checkFeed(t, d, reported, seen)
		})
	}
}

// follow reads the feed from its last cursor until stop, appending to seen.
func follow(ctx context.Context, d *bun.DB, mu *sync.Mutex, seen *[]feed.Record, stop <-chan struct{}) error {
	var after int64
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		page, err := feed.Read(ctx, d, nil, "spc_a", feed.Query{After: after, Limit: 17})
		if err != nil {
			return err
		}
		mu.Lock()
		*seen = append(*seen, page...)
		mu.Unlock()
		if len(page) > 0 {
			after = page[len(page)-1].Cursor
		}
	}
}

// checkFeed: the final feed holds each stored base once, at cursors 1..N; every id a replica
// reported committed is among them; seen (read while writers ran) is its prefix.
func checkFeed(t *testing.T, d *bun.DB, reported map[string]bool, seen []feed.Record) {
	t.Helper()
	var stored []string
	require.NoError(t, d.NewSelect().Model((*models.KnowledgeBase)(nil)).Column("id").Scan(context.Background(), &stored))
	final := readAll(t, d, "spc_a", 0, 100)
	keys := map[string]int64{}
	for i, r := range final {
		require.Equal(t, int64(i+1), r.Cursor, "no gap")
		_, dup := keys[r.Key]
		require.False(t, dup, "no duplicate: %s", r.Key)
		keys[r.Key] = r.Cursor
	}
	require.Len(t, final, len(stored), "one record per committed row, none for the killed transaction")
	for _, id := range stored {
		require.Contains(t, keys, id)
	}
	for id := range reported {
		require.Contains(t, keys, id, "a reported commit is in the feed")
	}
	require.LessOrEqual(t, len(seen), len(final))
	for i, r := range seen {
		require.Equal(t, final[i].Key, r.Key, "cursor %d read while writing is the same record now", r.Cursor)
		require.Equal(t, final[i].Cursor, r.Cursor)
	}
	require.GreaterOrEqual(t, len(stored), 160, "both replicas wrote (got %d rows)", len(stored))
}
