package receiptstest

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
	"golang.org/x/mod/sumdb/tlog"
)

// RebuildLog recomputes the deployment log's stored tree hashes from its leaves as they are
// (in index order, from 0) and sets its size to their count: what a tamperer with write
// access to the database, but not the signing key, does after editing, removing, inserting or
// reordering leaves, so that the proofs the API computes agree with the changed leaves. The
// checkpoints signed before stay as they were.
func RebuildLog(ctx context.Context, d *bun.DB) error {
	var leaves []struct {
		Idx  int64  `bun:"idx"`
		Hash []byte `bun:"hash"`
	}
	if err := d.NewRaw("SELECT idx, hash FROM receipt_log_leaves ORDER BY idx ASC").Scan(ctx, &leaves); err != nil {
		return err
	}
	mem := map[int64]tlog.Hash{}
	read := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			h, ok := mem[x]
			if !ok {
				return nil, fmt.Errorf("hash %d missing", x)
			}
			out[i] = h
		}
		return out, nil
	})
	return d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, "DELETE FROM receipt_log_hashes"); err != nil {
			return err
		}
		for n, l := range leaves {
			if l.Idx != int64(n) {
				return fmt.Errorf("leaf %d at position %d: renumber the leaves first", l.Idx, n)
			}
			hs, err := tlog.StoredHashesForRecordHash(int64(n), tlog.Hash(l.Hash), read)
			if err != nil {
				return err
			}
			base := tlog.StoredHashIndex(0, int64(n))
			for j, h := range hs {
				mem[base+int64(j)] = h
				if _, err := tx.ExecContext(ctx, "INSERT INTO receipt_log_hashes (idx, hash) VALUES (?, ?)", base+int64(j), h[:]); err != nil {
					return err
				}
			}
		}
		_, err := tx.ExecContext(ctx, "UPDATE receipt_log_state SET size = ? WHERE id = 1", len(leaves))
		return err
	})
}

// ShiftLeaves adds delta to the index of every leaf at from or after (highest first when
// delta > 0, lowest first otherwise, so the keys never collide).
func ShiftLeaves(ctx context.Context, d *bun.DB, from, delta int64) error {
	order := "ASC"
	if delta > 0 {
		order = "DESC"
	}
	var idx []int64
	if err := d.NewRaw("SELECT idx FROM receipt_log_leaves WHERE idx >= ? ORDER BY idx "+order, from).Scan(ctx, &idx); err != nil {
		return err
	}
	for _, i := range idx {
		if _, err := d.ExecContext(ctx, "UPDATE receipt_log_leaves SET idx = ? WHERE idx = ?", i+delta, i); err != nil {
			return err
		}
	}
	return nil
}
