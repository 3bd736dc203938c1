package receipts_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/receipts/receiptstest"
	"github.com/agentmemory/agentmemory/internal/signing"
	"github.com/agentmemory/agentmemory/models"
)

// logKeys is a deployment signing key as a checkpoint signer and its verifiers.
func logKeys(t *testing.T) (note.Signer, note.Verifiers) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	s, err := signing.NewSigner(priv, time.Time{})
	require.NoError(t, err)
	ns, err := s.NoteSigner(receipts.CheckpointName)
	require.NoError(t, err)
	vs, err := signing.NoteVerifiers(receipts.CheckpointName, s.Keys())
	require.NoError(t, err)
	return ns, vs
}

// catchUp appends every sealed receipt to the log at now and returns the latest checkpoint.
func catchUp(t *testing.T, d *bun.DB, signer note.Signer, now time.Time) receipts.Checkpoint {
	t.Helper()
	_, err := receipts.CatchUpLog(context.Background(), d, signer, now)
	require.NoError(t, err)
	cp, ok, err := receipts.LatestCheckpoint(context.Background(), d)
	require.NoError(t, err)
	require.True(t, ok)
	return cp
}

// ids lists the space's sealed receipts' ids in seq order.
func ids(t *testing.T, d *bun.DB, space string) []string {
	t.Helper()
	rs, err := receipts.List(context.Background(), d, space, 0, 1000)
	require.NoError(t, err)
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

// One log over every space: each receipt's proof verifies offline against the signed
// checkpoint, a later checkpoint is proved consistent with an earlier one, a checkpoint is
// signed at most once per second, and a space's proof names no other space's receipt.
func TestLogProofsAndCheckpoints(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		signer, verifiers := logKeys(t)
		at := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
		appendN(t, d, "sp_a", 5, at)
		appendN(t, d, "sp_b", 3, at)
		first := catchUp(t, d, signer, at)
		require.EqualValues(t, 8, first.Size)
		_, err := first.Open(verifiers)
		require.NoError(t, err)

		for _, space := range []string{"sp_a", "sp_b"} {
			for _, id := range ids(t, d, space) {
				p, err := receipts.Prove(ctx, d, space, id)
				require.NoError(t, err)
				require.NotNil(t, p.Log, "receipt %s is in the checkpoint", id)
				require.NoError(t, p.VerifyInLog(verifiers))
				doc, err := json.Marshal(p)
				require.NoError(t, err)
				other := map[string]string{"sp_a": "sp_b", "sp_b": "sp_a"}[space]
				require.NotContains(t, string(doc), other, "a proof reveals nothing of another space")
			}
		}
		_, err = receipts.Prove(ctx, d, "sp_b", ids(t, d, "sp_a")[0])
		require.ErrorIs(t, err, receipts.ErrNotFound, "a space's key proves only its own receipts")

		// More receipts half a second later: appended, but no checkpoint yet; at +1s, one.
		appendN(t, d, "sp_a", 2, at.Add(time.Minute))
		require.EqualValues(t, first.Size, catchUp(t, d, signer, at.Add(500*time.Millisecond)).Size)
		newer := catchUp(t, d, signer, at.Add(time.Second))
		require.EqualValues(t, 10, newer.Size)
		c, err := receipts.ProveConsistency(ctx, d, first.Size, 0)
		require.NoError(t, err)
		require.NotNil(t, c.Checkpoint)
		require.NoError(t, receipts.VerifyConsistency(first, newer, c, verifiers))
		require.NoError(t, receipts.VerifyConsistency(newer, first, c, verifiers), "either order")
		_, err = receipts.ProveConsistency(ctx, d, 0, 3)
		require.ErrorIs(t, err, receipts.ErrTreeRange)
		_, err = receipts.ProveConsistency(ctx, d, 3, 11)
		require.ErrorIs(t, err, receipts.ErrTreeRange)

		v, err := receipts.VerifyLog(ctx, d, verifiers, &first)
		require.NoError(t, err)
		require.Equal(t, receipts.LogVerification{OK: true, Size: 10, Checkpoints: 3}, v)
		sv, err := receipts.Verify(ctx, d, "sp_a")
		require.NoError(t, err)
		require.True(t, sv.OK, sv.Reason)
	})
}

// An upgrade: receipts written by the chain's code paths (Append, the group committer, a
// receipt chained one by one before batching) before the log existed verify as before, and,
// once the log's first pass took them in, each proves its inclusion in the checkpoint.
func TestLogUpgradeBringsExistingReceiptsIn(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		signer, verifiers := logKeys(t)
		at := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
		insertChained(t, d, "sp_old", at)
		appendN(t, d, "sp_a", 3, at)
		l := receipts.NewLog(d, nil, 0)
		for i := range 4 {
			_, err := l.Record(ctx, "sp_b", receipts.Entry{Kind: receipts.KindAgentMemory, Action: "block.read", ActorKey: "key_1",
				ObjectIDs: []string{"n1"}, Detail: map[string]any{"i": i}}, at)
			require.NoError(t, err)
		}
		for _, s := range []string{"sp_old", "sp_a", "sp_b"} {
			v, err := receipts.Verify(ctx, d, s)
			require.NoError(t, err)
			require.True(t, v.OK, "%s before the log: %s", s, v.Reason)
		}
		cp := catchUp(t, d, signer, at)
		require.EqualValues(t, 8, cp.Size)
		for _, s := range []string{"sp_old", "sp_a", "sp_b"} {
			v, err := receipts.Verify(ctx, d, s)
			require.NoError(t, err)
			require.True(t, v.OK, "%s after the log: %s", s, v.Reason)
			for _, id := range ids(t, d, s) {
				p, err := receipts.Prove(ctx, d, s, id)
				require.NoError(t, err)
				require.NoError(t, p.Verify(), "the batch proof as before")
				require.NoError(t, p.VerifyInLog(verifiers))
			}
		}
		v, err := receipts.VerifyLog(ctx, d, verifiers, nil)
		require.NoError(t, err)
		require.True(t, v.OK, v.Reason)
	})
}

// insertChained stores a space's receipt as the chain held it before batching (a version 1
// entry: its own hash, linked to the genesis).
func insertChained(t *testing.T, d *bun.DB, space string, at time.Time) {
	t.Helper()
	ctx := context.Background()
	r := receipts.Receipt{SpaceID: space, Seq: 1, ID: "rcpt_legacy", Kind: receipts.KindAdmin, Action: "test.legacy", ActorKeyID: "key_0",
		ObjectIDs: []string{"o"}, Detail: map[string]any{}, At: at, PrevHash: receipts.Genesis}
	r.Hash = r.ComputeHash()
	seq := int64(1)
	_, err := d.NewInsert().Model(&models.Receipt{SpaceID: space, Seq: seq, ID: r.ID, Kind: r.Kind, Action: r.Action, ActorKeyID: r.ActorKeyID,
		ObjectIDs: `["o"]`, Detail: `{}`, At: at, PrevHash: r.PrevHash, Hash: r.Hash}).Exec(ctx)
	require.NoError(t, err)
	_, err = d.NewInsert().Model(&models.ReceiptBatch{SpaceID: space, Seq: 1, FirstSeq: 1, Version: receipts.VersionChained,
		Root: r.Hash, PrevHash: receipts.Genesis, Hash: r.Hash, At: at}).Exec(ctx)
	require.NoError(t, err)
	_, err = d.ExecContext(ctx, "INSERT INTO receipt_heads (space_id, seq, hash) VALUES (?, 1, ?)", space, r.Hash)
	require.NoError(t, err)
}

// tamperFixture is a log of two spaces' receipts with a signed checkpoint, the proofs taken
// before any change, and the keys.
type tamperFixture struct {
	d         *bun.DB
	signer    note.Signer
	verifiers note.Verifiers
	at        time.Time
	cp        receipts.Checkpoint
}

func newTamperFixture(t *testing.T, d *bun.DB) *tamperFixture {
	signer, verifiers := logKeys(t)
	at := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	appendN(t, d, "sp_a", 4, at)
	appendN(t, d, "sp_b", 4, at)
	return &tamperFixture{d: d, signer: signer, verifiers: verifiers, at: at, cp: catchUp(t, d, signer, at)}
}

// proofFails asserts that the receipt's proof, as the tampered database now computes it,
// does not verify against the checkpoint signed before the change.
func (f *tamperFixture) proofFails(t *testing.T, space string, seq int64) {
	t.Helper()
	id := ids(t, f.d, space)[seq-1]
	p, err := receipts.Prove(context.Background(), f.d, space, id)
	if err != nil {
		require.ErrorIs(t, err, receipts.ErrLogBroken, "the stored hashes do not cover the checkpoint")
		return
	}
	if p.Log == nil {
		return // the receipt has no leaf in the checkpoint any more: no proof to trust
	}
	p.Log.Checkpoint = f.cp
	require.Error(t, p.VerifyInLog(f.verifiers))
}

// logFails asserts that the log's verification fails with reason, and with the checkpoint
// kept outside the database too.
func (f *tamperFixture) logFails(t *testing.T, reasons ...string) {
	t.Helper()
	for _, since := range []*receipts.Checkpoint{nil, &f.cp} {
		v, err := receipts.VerifyLog(context.Background(), f.d, f.verifiers, since)
		require.NoError(t, err)
		require.False(t, v.OK)
		require.Contains(t, reasons, v.Reason)
	}
}

// Tampering with the log is detected by its verification and by the proof checks: an edited,
// deleted, inserted or reordered leaf (the tree's hashes recomputed, as a tamperer without
// the key can), a receipt edited under its leaf, and forked checkpoints.
func TestLogTampering(t *testing.T) {
	ctx := context.Background()
	cases := map[string]func(t *testing.T, f *tamperFixture){
		"edited receipt": func(t *testing.T, f *tamperFixture) {
			rewrite(t, f.d, "sp_a", 2) // the chain recomputed: it verifies alone
			f.logFails(t, receipts.ReasonLogLeafMismatch)
			v, err := receipts.Verify(ctx, f.d, "sp_a")
			require.NoError(t, err)
			require.Equal(t, receipts.ReasonLogMismatch, v.Reason)
			f.proofFails(t, "sp_a", 2)
		},
		"edited leaf": func(t *testing.T, f *tamperFixture) {
			rewrite(t, f.d, "sp_a", 2)
			require.NoError(t, fixHexLeaf(ctx, f.d, "sp_a", 2))
			require.NoError(t, receiptstest.RebuildLog(ctx, f.d))
			f.logFails(t, receipts.ReasonCheckpointMismatch)
			f.proofFails(t, "sp_a", 2)
			f.proofFails(t, "sp_b", 1)
		},
		"deleted leaf": func(t *testing.T, f *tamperFixture) {
			_, err := f.d.ExecContext(ctx, "DELETE FROM receipt_log_leaves WHERE space_id = 'sp_a' AND seq = 4")
			require.NoError(t, err)
			require.NoError(t, receiptstest.ShiftLeaves(ctx, f.d, 4, -1))
			require.NoError(t, receiptstest.RebuildLog(ctx, f.d))
			f.logFails(t, receipts.ReasonCheckpointMismatch, receipts.ReasonLogRolledBack)
			f.proofFails(t, "sp_b", 1)
			v, err := receipts.Verify(ctx, f.d, "sp_a")
			require.NoError(t, err)
			require.True(t, v.OK, "the space's leaves 1..3 are still its receipts; the log's verification and the proofs catch the gap")
		},
		"inserted leaf": func(t *testing.T, f *tamperFixture) {
			appendN(t, f.d, "sp_c", 1, f.at) // a receipt the tamperer places early in the log
			rs, err := receipts.List(ctx, f.d, "sp_c", 0, 1)
			require.NoError(t, err)
			require.NoError(t, receiptstest.ShiftLeaves(ctx, f.d, 2, 1))
			_, err = f.d.ExecContext(ctx, "INSERT INTO receipt_log_leaves (idx, space_id, seq, hash) VALUES (2, 'sp_c', 1, ?)", mustHash(t, rs[0].Hash))
			require.NoError(t, err)
			require.NoError(t, receiptstest.RebuildLog(ctx, f.d))
			f.logFails(t, receipts.ReasonCheckpointMismatch)
			f.proofFails(t, "sp_a", 3)
		},
		"reordered leaves": func(t *testing.T, f *tamperFixture) {
			// sp_a's last leaf (3) and sp_b's first (4) swap places: each space keeps its order.
			for _, q := range []string{"UPDATE receipt_log_leaves SET idx = -1 WHERE idx = 3", "UPDATE receipt_log_leaves SET idx = 3 WHERE idx = 4",
				"UPDATE receipt_log_leaves SET idx = 4 WHERE idx = -1"} {
				_, err := f.d.ExecContext(ctx, q)
				require.NoError(t, err)
			}
			require.NoError(t, receiptstest.RebuildLog(ctx, f.d))
			f.logFails(t, receipts.ReasonCheckpointMismatch)
			f.proofFails(t, "sp_a", 4)
			f.proofFails(t, "sp_b", 1)
		},
		"forked checkpoint": func(t *testing.T, f *tamperFixture) {
			// The key's holder signs another tree of the same size.
			other := tlog.RecordHash([]byte("another tree"))
			msg, err := receipts.SignTree(tlog.Tree{N: f.cp.Size, Hash: other}, f.signer)
			require.NoError(t, err)
			fork := receipts.Checkpoint{Size: f.cp.Size, Hash: other, Note: string(msg), At: f.at}
			require.ErrorIs(t, receipts.VerifyConsistency(f.cp, fork, receipts.Consistency{}, f.verifiers), receipts.ErrFork)
			v, err := receipts.VerifyLog(ctx, f.d, f.verifiers, &fork)
			require.NoError(t, err)
			require.Equal(t, receipts.ReasonCheckpointMismatch, v.Reason)
		},
		"rewritten log, newly signed": func(t *testing.T, f *tamperFixture) {
			// The log is rewritten (a leaf edited, the hashes rebuilt) and grows; a new
			// checkpoint is signed over it: it is not consistent with the one kept.
			rewrite(t, f.d, "sp_a", 1)
			require.NoError(t, fixHexLeaf(ctx, f.d, "sp_a", 1))
			require.NoError(t, receiptstest.RebuildLog(ctx, f.d))
			appendN(t, f.d, "sp_b", 1, f.at.Add(time.Minute))
			newer := catchUp(t, f.d, f.signer, f.at.Add(2*time.Second))
			require.Greater(t, newer.Size, f.cp.Size)
			c, err := receipts.ProveConsistency(ctx, f.d, f.cp.Size, newer.Size)
			require.NoError(t, err)
			require.ErrorIs(t, receipts.VerifyConsistency(f.cp, newer, c, f.verifiers), receipts.ErrFork)
			c.From.Hash = f.cp.Hash // the kept tree's hash instead of the rewritten one
			require.ErrorIs(t, receipts.VerifyConsistency(f.cp, newer, c, f.verifiers), receipts.ErrFork)
			v, err := receipts.VerifyLog(ctx, f.d, f.verifiers, &f.cp)
			require.NoError(t, err)
			require.Equal(t, receipts.ReasonCheckpointMismatch, v.Reason)
		},
	}
	for name, tamper := range cases {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			dbtest.Each(t, func(t *testing.T, d *bun.DB) {
				f := newTamperFixture(t, d)
				v, err := receipts.VerifyLog(ctx, d, f.verifiers, &f.cp)
				require.NoError(t, err)
				require.True(t, v.OK, "before: %s", v.Reason)
				tamper(t, f)
			})
		})
	}
}

// fixHexLeaf sets the log leaf of the space's receipt seq to its stored hash (hex in the
// receipts table, bytes in the log).
func fixHexLeaf(ctx context.Context, d *bun.DB, space string, seq int64) error {
	var h string
	if err := d.NewRaw("SELECT hash FROM receipts WHERE space_id = ? AND seq = ?", space, seq).Scan(ctx, &h); err != nil {
		return err
	}
	raw, err := hex.DecodeString(h)
	if err != nil {
		return err
	}
	_, err = d.ExecContext(ctx, "UPDATE receipt_log_leaves SET hash = ? WHERE space_id = ? AND seq = ?", raw, space, seq)
	return err
}

func mustHash(t *testing.T, hexHash string) []byte {
	t.Helper()
	h, err := hex.DecodeString(hexHash)
	require.NoError(t, err)
	return h
}

// Log.Run appends what the group committer sealed and signs checkpoints on its own: a
// receipt answered by Record is in a signed checkpoint within two intervals (here 200 ms),
// and checkpoints are at least CheckpointEvery apart while the log grows.
func TestRunAppendsAndSignsCheckpoints(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		signer, verifiers := logKeys(t)
		l := receipts.NewLog(d, nil, 200*time.Millisecond)
		l.SetCheckpointSigner(signer)
		done := make(chan struct{})
		go func() { l.Run(ctx); close(done) }()
		for round := range 3 {
			r, err := l.Record(ctx, "sp_a", receipts.Entry{Kind: receipts.KindAgentMemory, Action: "block.read", ActorKey: "key_1",
				Detail: map[string]any{"round": round}}, time.Now())
			require.NoError(t, err)
			answered := time.Now()
			require.Eventually(t, func() bool {
				p, err := receipts.Prove(ctx, d, "sp_a", r.ID)
				return err == nil && p.Log != nil && p.VerifyInLog(verifiers) == nil
			}, 5*time.Second, 20*time.Millisecond)
			require.Less(t, time.Since(answered), 3*time.Second, "a proof within about 1.5 s of the answer, plus a pass")
		}
		var ats []time.Time
		require.NoError(t, d.NewRaw("SELECT at FROM receipt_checkpoints ORDER BY size").Scan(ctx, &ats))
		require.Len(t, ats, 3)
		for i := 1; i < len(ats); i++ {
			require.GreaterOrEqual(t, ats[i].Sub(ats[i-1]), receipts.CheckpointEvery)
		}
		cancel()
		<-done
	})
}
