package receipts

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"
)

// commitPipelined is commit's transaction on PostgreSQL for a group alone (no space asked to
// be sealed), in two round trips on one connection of the pool instead of one per statement:
//
//  1. One multi-statement query, whose statements run one after the other: BEGIN, the
//     asynchronous commit (SET LOCAL synchronous_commit = off), each of order's heads locked
//     (in that order), then the revisions of each space a receipt expects: read once every
//     head is held, as commit requires.
//  2. One batch of the extended protocol: per space, sealStatement (prepared once per
//     connection) with the space's chain entry and fresh receipts bound as values, then
//     COMMIT. Nothing is interpolated: PostgreSQL neither parses nor plans the receipts' text
//     (as it did for appendStatement's), and the values are encoded once, in binary.
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
		ran, err = l.pipelineOn(ctx, c, group, order)
		return err
	})
	return ran, err
}

// pipelineOn runs commitPipelined's two round trips on the pgx connection c; ran as there.
func (l *Log) pipelineOn(ctx context.Context, c *stdlib.Conn, group []*pending, order []string) (bool, error) {
	pc := c.Conn().PgConn()
	// Prepared before the transaction, so that a failed prepare leaves none open; pgx keeps
	// the statement for the connection's life, by name (no round trip after the first).
	sd, err := c.Conn().Prepare(ctx, sealStatementName, sealStatement)
	if err != nil {
		return true, fmt.Errorf("receipts: prepare seal: %w", err)
	}
	heads, current, err := l.lockAndRead(ctx, pc, group, order)
	if err != nil {
		rollback(ctx, pc)
		return true, err
	}
	if len(heads) < len(order) {
		rollback(ctx, pc)
		return false, nil // a space without a head row
	}
	markStaleAgainst(group, current)
	batch, err := sealBatch(c.Conn().TypeMap(), sd, group, order, heads)
	if err != nil {
		rollback(ctx, pc)
		return true, err
	}
	if _, err := pc.ExecBatch(ctx, batch).ReadAll(); err != nil {
		rollback(ctx, pc)
		return true, fmt.Errorf("receipts: seal: %w", err)
	}
	return true, nil
}

// sealBatch builds the second round trip: per space of order with fresh (not stale) receipts
// in group, sd bound to the space's next chain entry (after heads[space]) and those receipts,
// then COMMIT.
func sealBatch(tm *pgtype.Map, sd *pgconn.StatementDescription, group []*pending, order []string, heads map[string]head) (*pgconn.Batch, error) {
	var batch pgconn.Batch
	for _, s := range order {
		var fresh []record
		for _, p := range group {
			if !p.stale && p.rec.r.SpaceID == s {
				fresh = append(fresh, p.rec)
			}
		}
		if len(fresh) == 0 {
			continue
		}
		entry, err := nextEntry(heads[s], fresh)
		if err != nil {
			return nil, err
		}
		values, err := sealValues(tm, sd, entry.Batch, fresh)
		if err != nil {
			return nil, err
		}
		batch.ExecStatement(sd, values, binaryFormats[:len(values)], nil)
	}
	batch.ExecParams("COMMIT", nil, nil, nil, nil)
	return &batch, nil
}

// sealStatementName names sealStatement on each connection that prepared it.
const sealStatementName = "agentmemory_receipts_seal"

// sealStatement inserts a space's chain entry ($1 space, $2 seq, $3 first_seq, $4 version,
// $5 root, $6 prev_hash, $7 hash, $8 at) and its fresh receipts, sealed, one per element of
// the arrays $9-$17 (id, kind, action, actor_key_id, object_ids, detail, at, seq, hash: the
// columns of insertColumns after space_id, inserted in the arrays' order), and moves the
// space's head to the entry: appendStatement's writes, with values bound instead of
// interpolated (data-modifying CTEs, all run).
const sealStatement = `WITH entry AS (
	INSERT INTO receipt_batches (space_id, seq, first_seq, version, root, prev_hash, hash, at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
), fresh AS (
	INSERT INTO receipts ` + insertColumns + `
	SELECT $1, * FROM unnest($9::text[], $10::text[], $11::text[], $12::text[], $13::text[],
		$14::text[], $15::timestamptz[], $16::bigint[], $17::text[])
)
UPDATE receipt_heads SET seq = $2, hash = $7 WHERE space_id = $1`

// binaryFormats are the parameter formats of sealStatement: every value in binary.
var binaryFormats = []int16{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}

// sealValues are sealStatement's values for the entry b holding fresh (sealed by nextEntry:
// seq and hash set in their rows), encoded in binary through tm for the parameter types of
// its prepared statement sd.
func sealValues(tm *pgtype.Map, sd *pgconn.StatementDescription, b Batch, fresh []record) ([][]byte, error) {
	cols := make([][]string, 7) // id, kind, action, actor_key_id, object_ids, detail, hash
	for i := range cols {
		cols[i] = make([]string, len(fresh))
	}
	at := make([]time.Time, len(fresh))
	seq := make([]int64, len(fresh))
	for i, rec := range fresh {
		row := rec.row
		cols[0][i], cols[1][i], cols[2][i], cols[3][i] = row.ID, row.Kind, row.Action, row.ActorKeyID
		cols[4][i], cols[5][i], cols[6][i] = row.ObjectIDs, row.Detail, row.Hash
		at[i], seq[i] = row.At.UTC().Truncate(time.Microsecond), row.Seq
	}
	args := []any{b.SpaceID, b.Seq, b.FirstSeq, b.Version, b.Root, b.PrevHash, b.Hash, b.At.UTC().Truncate(time.Microsecond),
		cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], at, seq, cols[6]}
	if len(sd.ParamOIDs) != len(args) {
		return nil, fmt.Errorf("receipts: seal statement takes %d values, not %d", len(sd.ParamOIDs), len(args))
	}
	values := make([][]byte, len(args))
	for i, a := range args {
		v, err := tm.Encode(sd.ParamOIDs[i], pgtype.BinaryFormatCode, a, nil)
		if err != nil {
			return nil, fmt.Errorf("receipts: seal value %d: %w", i+1, err)
		}
		values[i] = v
	}
	return values, nil
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
		_, _ = pc.Exec(ctx, "ROLLBACK").ReadAll() // a connection whose rollback fails is discarded by the pool (see above)
	}
}
