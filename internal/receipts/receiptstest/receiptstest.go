// Package receiptstest does to a space's receipt chain what write access to the database
// allows (change a receipt, cut the chain) with every hash recomputed, for tests that show
// what a signed head still catches.
package receiptstest

import (
	"context"
	"encoding/json"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/models"
)

// Rewrite sets the detail of the space's sealed receipt seq and recomputes every leaf hash,
// root, entry hash and link, and the head row.
func Rewrite(ctx context.Context, d *bun.DB, spaceID string, seq int64, detail map[string]any) error {
	data, err := json.Marshal(detail)
	if err != nil {
		return err
	}
	if _, err := d.NewUpdate().Model((*models.Receipt)(nil)).Set("detail = ?", string(data)).
		Where("space_id = ? AND seq = ?", spaceID, seq).Exec(ctx); err != nil {
		return err
	}
	return Reseal(ctx, d, spaceID)
}

// Truncate removes the space's receipts after seq (and the entries holding only them), ends
// the entry holding seq there, and recomputes every hash and the head row.
func Truncate(ctx context.Context, d *bun.DB, spaceID string, seq int64) error {
	if _, err := d.NewDelete().Model((*models.Receipt)(nil)).Where("space_id = ? AND seq > ?", spaceID, seq).Exec(ctx); err != nil {
		return err
	}
	if _, err := d.NewDelete().Model((*models.ReceiptBatch)(nil)).Where("space_id = ? AND first_seq > ?", spaceID, seq).Exec(ctx); err != nil {
		return err
	}
	if _, err := d.NewUpdate().Model((*models.ReceiptBatch)(nil)).Set("seq = ?", seq).
		Where("space_id = ? AND seq > ?", spaceID, seq).Exec(ctx); err != nil {
		return err
	}
	return Reseal(ctx, d, spaceID)
}

// Reseal recomputes every hash of the space's chain over its stored receipts and entry
// boundaries: leaf hashes, roots, entry hashes and links, and the head row.
func Reseal(ctx context.Context, d *bun.DB, spaceID string) error {
	batches, err := receipts.ListBatches(ctx, d, spaceID, 0, 1<<30)
	if err != nil {
		return err
	}
	prev := receipts.Genesis
	var last int64
	for _, b := range batches {
		rs, err := receipts.List(ctx, d, spaceID, b.FirstSeq-1, int(b.Seq-b.FirstSeq+1))
		if err != nil {
			return err
		}
		b.PrevHash = prev
		if b.Version == receipts.VersionChained {
			r := rs[0]
			r.PrevHash = prev
			b.Hash = r.ComputeHash()
			if _, err := d.NewUpdate().Model((*models.Receipt)(nil)).Set("prev_hash = ?, hash = ?", prev, b.Hash).
				Where("space_id = ? AND seq = ?", spaceID, r.Seq).Exec(ctx); err != nil {
				return err
			}
		} else {
			leaves := make([]string, len(rs))
			for i, r := range rs {
				leaves[i] = r.LeafHash()
				if _, err := d.NewUpdate().Model((*models.Receipt)(nil)).Set("hash = ?", leaves[i]).
					Where("space_id = ? AND seq = ?", spaceID, r.Seq).Exec(ctx); err != nil {
					return err
				}
			}
			if b.Root, err = receipts.MerkleRoot(leaves); err != nil {
				return err
			}
			b.At = rs[len(rs)-1].At
			b.Hash = b.ComputeHash()
		}
		if _, err := d.NewUpdate().Model((*models.ReceiptBatch)(nil)).
			Set("root = ?, prev_hash = ?, hash = ?, at = ?", b.Root, b.PrevHash, b.Hash, b.At).
			Where("space_id = ? AND seq = ?", spaceID, b.Seq).Exec(ctx); err != nil {
			return err
		}
		prev, last = b.Hash, b.Seq
	}
	_, err = d.NewRaw("UPDATE receipt_heads SET seq = ?, hash = ? WHERE space_id = ?", last, prev, spaceID).Exec(ctx)
	return err
}
