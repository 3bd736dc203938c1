package migrations_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"

	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/migrations"
)

// legacyReceipt is a row of the receipts table before batching (one receipt per chain entry).
type legacyReceipt struct {
	bun.BaseModel `bun:"table:receipts"`

	SpaceID    string    `bun:"space_id,pk"`
	Seq        int64     `bun:"seq,pk"`
	ID         string    `bun:"id"`
	Kind       string    `bun:"kind"`
	Action     string    `bun:"action"`
	ActorKeyID string    `bun:"actor_key_id"`
	ObjectIDs  string    `bun:"object_ids"`
	Detail     string    `bun:"detail"`
	At         time.Time `bun:"at"`
	PrevHash   string    `bun:"prev_hash"`
	Hash       string    `bun:"hash"`
}

// Issue 16: receipts chained one by one before batching stay verifiable after migration
// 20261202200000 (each becomes an entry of version 1 with its own hash), a head signed
// before it still verifies, the chain goes on in Merkle batches, and a changed old receipt is
// still caught. The migration goes down while the chain holds no batch.
func TestReceiptBatchesMigrationKeepsOldChain(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		var mig migrate.Migration
		for _, m := range migrations.Migrations.Sorted() {
			if m.Name == "20261202200000" {
				mig = m
			}
		}
		require.NotNil(t, mig.Up, "the migration is registered")
		migrator := migrate.NewMigrator(db, migrations.Migrations)
		require.NoError(t, mig.Down(ctx, migrator, &mig))

		// Three receipts chained the old way, and the head signed then.
		at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
		prev := receipts.Genesis
		for i := int64(1); i <= 3; i++ {
			r := receipts.Receipt{SpaceID: "sp_old", Seq: i, ID: "rcpt_old" + string(rune('0'+i)), Kind: receipts.KindAdmin,
				Action: "note.create", ActorKeyID: "key_1", ObjectIDs: []string{"note_1"}, Detail: map[string]any{"i": float64(i)},
				At: at.Add(time.Duration(i) * time.Second), PrevHash: prev}
			r.Hash = r.ComputeHash()
			objs, _ := json.Marshal(r.ObjectIDs)
			detail, _ := json.Marshal(r.Detail)
			_, err := db.NewInsert().Model(&legacyReceipt{SpaceID: r.SpaceID, Seq: r.Seq, ID: r.ID, Kind: r.Kind, Action: r.Action,
				ActorKeyID: r.ActorKeyID, ObjectIDs: string(objs), Detail: string(detail), At: r.At, PrevHash: r.PrevHash, Hash: r.Hash}).Exec(ctx)
			require.NoError(t, err)
			prev = r.Hash
		}
		_, err := db.NewRaw("INSERT INTO receipt_heads (space_id, seq, hash) VALUES (?, 3, ?)", "sp_old", prev).Exec(ctx)
		require.NoError(t, err)
		signed := receipts.Head{SpaceID: "sp_old", Seq: 3, Hash: prev}

		require.NoError(t, mig.Up(ctx, migrator, &mig))
		head, err := receipts.CurrentHead(ctx, db, "sp_old")
		require.NoError(t, err)
		require.Equal(t, signed.Hash, head.Hash)
		v, err := receipts.VerifySince(ctx, db, "sp_old", &signed)
		require.NoError(t, err)
		require.Equal(t, receipts.Verification{OK: true, Count: 3, Batches: 3}, v)
		p, err := receipts.Prove(ctx, db, "sp_old", "rcpt_old2")
		require.NoError(t, err)
		require.NoError(t, p.Verify(), "an old receipt's proof is its own entry")

		// The chain goes on in batches and still extends the old signed head.
		require.NoError(t, db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			r, err := receipts.Append(ctx, tx, "sp_old", receipts.Entry{Kind: receipts.KindAdmin, Action: "note.create"}, at.Add(time.Hour))
			require.EqualValues(t, 4, r.Seq)
			return err
		}))
		v, err = receipts.VerifySince(ctx, db, "sp_old", &signed)
		require.NoError(t, err)
		require.Equal(t, receipts.Verification{OK: true, Count: 4, Batches: 4}, v)

		// A changed old receipt is caught as before.
		_, err = db.NewRaw("UPDATE receipts SET detail = ? WHERE space_id = ? AND seq = 2", `{"i":9}`, "sp_old").Exec(ctx)
		require.NoError(t, err)
		v, err = receipts.Verify(ctx, db, "sp_old")
		require.NoError(t, err)
		require.Equal(t, receipts.ReasonHashMismatch, v.Reason)
		require.EqualValues(t, 2, v.Broken.Seq)

		// With a batch in the chain, the migration refuses to go down.
		require.Error(t, mig.Down(ctx, migrator, &mig))
	})
}
