package receipts

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/agentmemory/agentmemory/models"
)

// commitPipelined is commit's transaction on PostgreSQL for a group alone (no space asked to
// be sealed), in two round trips on one connection of the pool instead of one per statement:
// each is one multi-statement query, whose statements run one after the other.
//
//  1. BEGIN, the asynchronous commit (SET LOCAL synchronous_commit = off), each of order's
//     heads locked (in that order), then the revisions of each space a receipt expects: read
//     once every head is held, as commit requires.
//  2. Each space's chain entry with its fresh receipts (appendStatement), COMMIT.
//
// ran is false when it wrote nothing and commit's general path must run instead: a space has
// no head row yet (that path creates it), or the pool's connections are not pgx's. A failure
// rolls the transaction back and is returned with ran true.
func (l *Log) commitPipelined(ctx context.Context, group []*pending, order []string) (ran bool, err error) {
	conn, err := l.db.DB.Conn(ctx)
	if err != nil {
		return true, fmt.Errorf("receipts: connection: %w", err)
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return nil
		}
		pc := c.Conn().PgConn()
		ran = true
		heads, current, err := l.lockAndRead(ctx, pc, group, order)
		if err == nil && len(heads) < len(order) {
			ran = false // a space without a head row
		}
		if err != nil || !ran {
			rollback(ctx, pc)
			return err
		}
		markStaleAgainst(group, current)
		var q strings.Builder
		for _, s := range order {
			var fresh []record
			var rows []*models.Receipt
			for _, p := range group {
				if !p.stale && p.rec.r.SpaceID == s {
					fresh = append(fresh, p.rec)
					rows = append(rows, p.rec.row)
				}
			}
			if len(fresh) == 0 {
				continue
			}
			entry, err := nextEntry(heads[s], fresh)
			if err != nil {
				rollback(ctx, pc)
				return err
			}
			q.WriteString(appendStatement(l.db, entry.Batch, rows) + ";\n")
		}
		q.WriteString("COMMIT")
		if _, err := pc.Exec(ctx, q.String()).ReadAll(); err != nil {
			rollback(ctx, pc)
			return fmt.Errorf("receipts: seal: %w", err)
		}
		return nil
	})
	return ran, err
}

// lockAndRead runs the first round trip of commitPipelined on pc and returns the heads it
// locked, by space (a space without a head row has none), and the revisions of the spaces
// group's receipts expect, by space and name.
func (l *Log) lockAndRead(ctx context.Context, pc *pgconn.PgConn, group []*pending, order []string) (map[string]head, map[[2]string]int64, error) {
	var expected []string
	for _, p := range group {
		if len(p.expect) > 0 && !slices.Contains(expected, p.rec.r.SpaceID) {
			expected = append(expected, p.rec.r.SpaceID)
		}
	}
	gen := l.db.QueryGen()
	var q strings.Builder
	q.WriteString("BEGIN;\nSET LOCAL synchronous_commit = off")
	for _, s := range order {
		q.WriteString(";\n" + gen.FormatQuery("SELECT seq, hash FROM receipt_heads WHERE space_id = ? FOR UPDATE", s))
	}
	for _, s := range expected {
		q.WriteString(";\n" + gen.FormatQuery("SELECT name, revision FROM space_revisions WHERE space_id = ?", s))
	}
	results, err := pc.Exec(ctx, q.String()).ReadAll()
	if err != nil {
		return nil, nil, fmt.Errorf("receipts: lock heads: %w", err)
	}
	if len(results) != 2+len(order)+len(expected) {
		return nil, nil, fmt.Errorf("receipts: lock heads: %d results", len(results))
	}
	heads := make(map[string]head, len(order))
	for i, s := range order {
		rows := results[2+i].Rows
		if len(rows) == 0 {
			continue
		}
		seq, err := strconv.ParseInt(string(rows[0][0]), 10, 64)
		if err != nil {
			return nil, nil, fmt.Errorf("receipts: lock head: %w", err)
		}
		heads[s] = head{SpaceID: s, Seq: seq, Hash: string(rows[0][1])}
	}
	current := map[[2]string]int64{}
	for i, s := range expected {
		for _, row := range results[2+len(order)+i].Rows {
			revision, err := strconv.ParseInt(string(row[1]), 10, 64)
			if err != nil {
				return nil, nil, fmt.Errorf("receipts: revisions: %w", err)
			}
			current[[2]string{s, string(row[0])}] = revision
		}
	}
	return heads, current, nil
}

// rollback ends pc's transaction, if one is open, without its changes. When that fails the
// connection still holds it, and the pool discards it (pgx's stdlib resets a session only
// outside a transaction).
func rollback(ctx context.Context, pc *pgconn.PgConn) {
	if pc.TxStatus() != 'I' {
		_, _ = pc.Exec(ctx, "ROLLBACK").ReadAll()
	}
}
