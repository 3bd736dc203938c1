package receipts

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"math/big"
	"os"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"golang.org/x/mod/sumdb/note"

	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/signing"
)

// BenchmarkProof measures the deployment's receipt log as it grows (issue 32): a log of n
// receipts (10k and 100k; 1M with AGENTMEMORY_BENCH_1M=1), spread over 16 spaces, sealed in
// entries of 1000 and appended by AppendLog, then the inclusion proof of one receipt at a
// random position against the latest checkpoint (ProveInLog: ns/op), its offline check
// (LogProof.Verify, the note's signature included: verify-ns), and the walk of the whole
// log once (VerifyLog: verifylog-s) and the time its append took (append-s):
//
//	go test -run '^$' -bench 'BenchmarkProof' -benchtime 2000x -timeout 60m ./internal/receipts
func BenchmarkProof(b *testing.B) {
	sizes := []int{10_000, 100_000}
	if os.Getenv("AGENTMEMORY_BENCH_1M") == "1" {
		sizes = append(sizes, 1_000_000)
	}
	for _, engine := range []string{"sqlite", "postgres"} {
		for _, n := range sizes {
			b.Run(fmt.Sprintf("%s/%d", engine, n), func(b *testing.B) { benchProof(b, engine, n) })
		}
	}
}

const benchSpaces = 16

func benchProof(b *testing.B, engine string, n int) {
	ctx := context.Background()
	d := dbtest.Open(b, engine)
	signer, verifiers := benchKeys(b)
	fillChains(b, d, n)
	start := time.Now()
	if _, err := CatchUpLog(ctx, d, signer, time.Now()); err != nil {
		b.Fatal(err)
	}
	appendTook := time.Since(start)
	// The checkpoint of the whole log: a catch-up signs one at its first pass, the next
	// CheckpointEvery later (Log.Run's next pass).
	if _, err := AppendLog(ctx, d, signer, time.Now().Add(CheckpointEvery)); err != nil {
		b.Fatal(err)
	}
	start = time.Now()
	v, err := VerifyLog(ctx, d, verifiers, nil)
	if err != nil || !v.OK || v.Size != int64(n) {
		b.Fatalf("verify log: %+v, %v", v, err)
	}
	walk := time.Since(start)
	used := min(benchSpaces, n/1000)     // spaces holding entries
	per := int64(n / 1000 / used * 1000) // receipts each of them holds at least
	var verifyTime time.Duration
	b.ResetTimer()
	for range b.N {
		space := fmt.Sprintf("sp_%02d", randInt(b, int64(used)))
		seq := 1 + randInt(b, per)
		p, err := ProveInLog(ctx, d, space, seq)
		if err != nil || p == nil {
			b.Fatalf("prove %s/%d: %v", space, seq, err)
		}
		b.StopTimer()
		leaf, err := storedLeaf(ctx, d, space, seq)
		if err != nil {
			b.Fatal(err)
		}
		t := time.Now()
		if err := p.Verify(leaf, verifiers); err != nil {
			b.Fatal(err)
		}
		verifyTime += time.Since(t)
		b.StartTimer()
	}
	b.ReportMetric(float64(verifyTime.Nanoseconds())/float64(b.N), "verify-ns")
	b.ReportMetric(walk.Seconds(), "verifylog-s")
	b.ReportMetric(appendTook.Seconds(), "append-s")
}

// fillChains seals n block-read receipts over benchSpaces spaces, entries of 1000 (one
// transaction each, AppendGroup).
func fillChains(b *testing.B, d *bun.DB, n int) {
	ctx := context.Background()
	at := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	e := readEntry(0)
	for done := 0; done < n; {
		space := fmt.Sprintf("sp_%02d", (done/1000)%benchSpaces)
		k := min(1000, n-done)
		entries, ats := make([]Entry, k), make([]time.Time, k)
		for i := range entries {
			entries[i], ats[i] = e, at.Add(time.Duration(done+i)*time.Millisecond)
		}
		err := d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			h, err := LockHead(ctx, tx, space)
			if err != nil {
				return err
			}
			_, err = AppendGroup(ctx, tx, h, entries, ats)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		done += k
	}
}

// storedLeaf is the log leaf of the space's receipt seq as stored.
func storedLeaf(ctx context.Context, d *bun.DB, space string, seq int64) ([32]byte, error) {
	var l logLeafRow
	if err := d.NewSelect().Model(&l).Where("space_id = ? AND seq = ?", space, seq).Scan(ctx); err != nil {
		return [32]byte{}, err
	}
	return [32]byte(l.Hash), nil
}

func benchKeys(b *testing.B) (note.Signer, note.Verifiers) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	s, err := signing.NewSigner(priv, time.Time{})
	if err != nil {
		b.Fatal(err)
	}
	ns, err := s.NoteSigner(CheckpointName)
	if err != nil {
		b.Fatal(err)
	}
	vs, err := signing.NoteVerifiers(CheckpointName, s.Keys())
	if err != nil {
		b.Fatal(err)
	}
	return ns, vs
}

func randInt(b *testing.B, n int64) int64 {
	v, err := rand.Int(rand.Reader, big.NewInt(n))
	if err != nil {
		b.Fatal(err)
	}
	return v.Int64()
}
