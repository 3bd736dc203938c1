package receipts

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/models"
)

// BenchmarkLogRecord measures the group committer alone (issue 16): 32 goroutines Record
// block-read receipts of one space (its head created before; each receipt names 20 notes and
// carries a block read's detail), each once the previous one returned, as the block reads of
// 32 agents do. It reports the receipts per group (chain
// entries written) and this process's CPU time per receipt (cpu-ns/op; PostgreSQL's own is
// not in it: read it from the server's processes):
//
//	go test -run '^$' -bench 'LogRecord/postgres' -benchtime 20000x ./internal/receipts
func BenchmarkLogRecord(b *testing.B) {
	for _, engine := range []string{"sqlite", "postgres"} {
		b.Run(engine, func(b *testing.B) {
			e := Entry{Kind: KindAgentMemory, Action: "block.read", ActorKey: "key_01jb2x7k3m9q4r5s6t7v8w9x0y",
				Detail: map[string]any{"tokens": 812, "not_modified": true, "source_id": "bench-bot"}}
			for i := range 20 {
				e.ObjectIDs = append(e.ObjectIDs, fmt.Sprintf("note_01jb2x7k3m9q4r5s6t7v8w%04d", i))
			}
			benchRecord(b, engine, e, false)
		})
	}
}

// BenchmarkLogRecordManifest is BenchmarkLogRecord for a block of 100 notes (issue 32), its
// receipt carrying the note ids (ids_100, as before manifests) or its manifest's hash
// (manifest_100, the manifest stored by the first read), one after the other per engine:
//
//	go test -run '^$' -bench 'LogRecordManifest' -benchtime 20000x ./internal/receipts
func BenchmarkLogRecordManifest(b *testing.B) {
	for _, engine := range []string{"sqlite", "postgres"} {
		ids := Entry{Kind: KindAgentMemory, Action: "block.read", ActorKey: "key_01jb2x7k3m9q4r5s6t7v8w9x0y",
			Detail: map[string]any{"tokens": 812, "not_modified": true, "source_id": "bench-bot"}}
		items := make([]ManifestItem, 100)
		for i := range items {
			items[i] = ManifestItem{ID: fmt.Sprintf("note_01jb2x7k3m9q4r5s6t7v8w%04d", i), Version: 1}
			ids.ObjectIDs = append(ids.ObjectIDs, items[i].ID)
		}
		manifest := ids
		manifest.ObjectIDs, manifest.Manifest = nil, NewManifest(ManifestBlock, "", nil, 2000, items)
		b.Run(engine+"/ids_100", func(b *testing.B) { benchRecord(b, engine, ids, false) })
		b.Run(engine+"/manifest_100", func(b *testing.B) { benchRecord(b, engine, manifest, false) })
	}
}

// BenchmarkLogRecordWithLog is BenchmarkLogRecordManifest's manifest_100 without (off) and with (on) the
// deployment log's appender running beside the group committer as Log.Run runs it (a pass
// every half second, a checkpoint at most once a second; issue 32): what the one log costs
// the committer. cpu-ns/op includes the appender's CPU.
//
//	go test -run '^$' -bench 'LogRecordWithLog' -benchtime 20000x ./internal/receipts
func BenchmarkLogRecordWithLog(b *testing.B) {
	items := make([]ManifestItem, 100)
	for i := range items {
		items[i] = ManifestItem{ID: fmt.Sprintf("note_01jb2x7k3m9q4r5s6t7v8w%04d", i), Version: 1}
	}
	e := Entry{Kind: KindAgentMemory, Action: "block.read", ActorKey: "key_01jb2x7k3m9q4r5s6t7v8w9x0y",
		Detail:   map[string]any{"tokens": 812, "not_modified": true, "source_id": "bench-bot"},
		Manifest: NewManifest(ManifestBlock, "", nil, 2000, items)}
	for _, engine := range []string{"sqlite", "postgres"} {
		b.Run(engine+"/off", func(b *testing.B) { benchRecord(b, engine, e, false) })
		b.Run(engine+"/on", func(b *testing.B) { benchRecord(b, engine, e, true) })
	}
}

// benchRecord has 32 goroutines Record e in one space of a fresh database of engine, b.N in
// all, and reports the CPU per receipt and the receipts per group; withLog runs the log's
// appender beside them (Log.runAppender).
func benchRecord(b *testing.B, engine string, e Entry, withLog bool) {
	d := dbtest.Open(b, engine)
	ctx := context.Background()
	l := NewLog(d, nil, 0)
	if withLog {
		actx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { l.runAppender(actx); close(done) }()
		defer func() { cancel(); <-done }()
	}
	if _, err := l.Record(ctx, "sp_a", readEntry(0), flushAt); err != nil {
		b.Fatal(err)
	}
	const agents = 32
	entries := func() int64 {
		n, err := d.NewSelect().Model((*models.ReceiptBatch)(nil)).Where("space_id = ?", "sp_a").Count(ctx)
		if err != nil {
			b.Fatal(err)
		}
		return int64(n)
	}
	before := entries()
	next := make(chan int, agents)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := cpuTime(b)
	for range agents {
		wg.Go(func() {
			for i := range next {
				if _, err := l.Record(ctx, "sp_a", e, flushAt.Add(time.Duration(i))); err != nil {
					b.Error(err)
				}
			}
		})
	}
	for i := range b.N {
		next <- i
	}
	close(next)
	wg.Wait()
	b.ReportMetric(float64((cpuTime(b)-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.StopTimer()
	b.ReportMetric(float64(b.N)/float64(entries()-before), "receipts/group")
	verifyBench(b, d)
}

// verifyBench fails b unless the benchmark's chain verifies with nothing unsealed.
func verifyBench(b *testing.B, d *bun.DB) {
	v, err := Verify(context.Background(), d, "sp_a")
	if err != nil || !v.OK || v.Unsealed != 0 {
		b.Fatalf("verify: %+v, %v", v, err)
	}
}

// cpuTime is the CPU time (user and system) this process used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
