package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/uptrace/bun"
)

// prepared holds, per pool, the statements QueryOne prepared (by query text). bun
// interpolates every value into the SQL text, so each of its statements is new to the
// database (SQLite compiles it, PostgreSQL parses it); the hot paths use QueryOne instead.
var prepared sync.Map // *bun.DB -> *stmts

// stmts is one pool's prepared statements. Its lock is never held while a statement is
// prepared: preparing on the pool waits for a free connection, and a transaction that waited
// for this lock meanwhile would hold its own connection (and, on SQLite, the write gate)
// while the connections it waits for are held by writers queued behind it.
type stmts struct {
	mu      sync.RWMutex
	m       map[string]*sql.Stmt
	pending map[string]bool // being prepared on the pool in the background (stmtTx)
	closed  bool            // Close ran: nothing more is kept
}

// stmtsOf returns d's statements, creating the empty set on first use.
func stmtsOf(d *bun.DB) *stmts {
	v, ok := prepared.Load(d)
	if !ok {
		v, _ = prepared.LoadOrStore(d, &stmts{m: map[string]*sql.Stmt{}, pending: map[string]bool{}})
	}
	return v.(*stmts)
}

// get is the pool statement of query, nil when none is kept yet.
func (s *stmts) get(query string) *sql.Stmt {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.m[query]
}

// keep stores st as the statement of query and returns the one kept: st, or the one a
// concurrent caller stored first (st is then closed). Errors: the pool was closed (st is
// closed).
func (s *stmts) keep(query string, st *sql.Stmt) (*sql.Stmt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = st.Close() // the pool is closed: the statement cannot run anyway
		return nil, errors.New("db: prepare: the pool is closed")
	}
	if old, ok := s.m[query]; ok {
		_ = st.Close() // a duplicate of old, never used
		return old, nil
	}
	s.m[query] = st
	return st, nil
}

// prepareLater prepares query on pool d in the background, once, and keeps it, so that the
// transactions after the first one run it prepared (stmtTx). A failure is dropped: the next
// transaction that needs the statement asks again.
func (s *stmts) prepareLater(d *bun.DB, query string) {
	s.mu.Lock()
	if s.closed || s.pending[query] {
		s.mu.Unlock()
		return
	}
	s.pending[query] = true
	s.mu.Unlock()
	go func() {
		st, err := d.DB.PrepareContext(context.Background(), sqlText(d, query))
		s.mu.Lock()
		delete(s.pending, query)
		s.mu.Unlock()
		if err == nil {
			_, _ = s.keep(query, st) // kept, or closed when the pool closed meanwhile
		}
	}()
}

// sqlText is query as d's database reads it (? rewritten to $n on PostgreSQL).
func sqlText(d *bun.DB, query string) string {
	if IsSQLite(d) {
		return query
	}
	return dollars(query)
}

// QueryOne runs query, written with ? placeholders (rewritten to $1, $2, ... on PostgreSQL),
// as a statement prepared once per pool of d and kept for the pool's life, and scans its
// first row into dest with bun's model scanning (a model, or scalars). No row is
// sql.ErrNoRows. Values are bound, never interpolated, so query must hold no other "?".
func QueryOne(ctx context.Context, d *bun.DB, query string, dest []any, args ...any) error {
	st, err := stmt(ctx, d, query)
	if err != nil {
		return err
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := d.ScanRow(ctx, rows, dest...); err != nil {
		return err
	}
	for rows.Next() {
	}
	return rows.Err()
}

// stmt is query prepared on pool d, prepared on first use (outside any transaction: the
// caller holds no connection) and kept for the pool's life.
func stmt(ctx context.Context, d *bun.DB, query string) (*sql.Stmt, error) {
	s := stmtsOf(d)
	if st := s.get(query); st != nil {
		return st, nil
	}
	st, err := d.DB.PrepareContext(ctx, sqlText(d, query))
	if err != nil {
		return nil, fmt.Errorf("db: prepare: %w", err)
	}
	return s.keep(query, st)
}

// stmtTx is query as a statement of tx, a transaction begun on pool d: the pool's prepared
// statement bound to tx's connection when d keeps one, else query prepared on tx's own
// connection (closed when tx ends) while the pool's is prepared in the background. It never
// takes a second connection of d while tx holds one: with every connection of the pool held
// by writers queued behind tx (on SQLite, in the write gate; on PostgreSQL, on the row locks
// tx holds), waiting for one would stall tx and them until the gate's or the statement's
// timeout (issue 34: the two-replica document quota test, about 1 run in 20 at 40 writers).
func stmtTx(ctx context.Context, d *bun.DB, tx bun.Tx, query string) (*sql.Stmt, error) {
	s := stmtsOf(d)
	if st := s.get(query); st != nil {
		return tx.Tx.StmtContext(ctx, st), nil
	}
	s.prepareLater(d, query)
	st, err := tx.Tx.PrepareContext(ctx, sqlText(d, query))
	if err != nil {
		return nil, fmt.Errorf("db: prepare: %w", err)
	}
	return st, nil
}

// dollars rewrites the ? placeholders of query as PostgreSQL's $1, $2, ...
func dollars(query string) string {
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// bunTimeLayout is the layout of bun's SQLite dialect for a time.Time
// (schema.BaseDialect.AppendTime, in UTC, between quotes).
const bunTimeLayout = "2006-01-02 15:04:05.999999-07:00"

// TimeArg is t as QueryOne binds it for a timestamp column of d, stored exactly as bun
// stores it when it interpolates t: on SQLite the same text (UTC, microseconds), on
// PostgreSQL the instant truncated to microseconds.
func TimeArg(d *bun.DB, t time.Time) any {
	if IsSQLite(d) {
		// Formatted into a buffer on the stack (issue 16: bun's AppendTime grew a slice
		// from nil, then the quotes were trimmed off a copy).
		var buf [len(bunTimeLayout) + 8]byte
		return string(t.UTC().AppendFormat(buf[:0], bunTimeLayout))
	}
	return t.UTC().Truncate(time.Microsecond)
}

// QueryRows is QueryOne for every row: the rows of query, prepared once per pool of d; the
// caller scans and closes them.
func QueryRows(ctx context.Context, d *bun.DB, query string, args ...any) (*sql.Rows, error) {
	st, err := stmt(ctx, d, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// QueryRowsTx is QueryRows inside tx, a transaction begun on d: the statement prepared once
// per pool of d, run on tx's connection (prepared there once, then reused); the caller scans
// and closes the rows.
func QueryRowsTx(ctx context.Context, d *bun.DB, tx bun.Tx, query string, args ...any) (*sql.Rows, error) {
	st, err := stmtTx(ctx, d, tx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// Close closes the statements QueryOne and QueryRows prepared on d, forgets them, then closes
// d. Close every pool those functions used through it, or its statements stay in memory for
// the life of the process. Errors: d's own Close error.
func Close(d *bun.DB) error {
	if v, ok := prepared.LoadAndDelete(d); ok {
		s := v.(*stmts)
		s.mu.Lock()
		for _, st := range s.m {
			_ = st.Close() // the pool's Close below releases what a failed statement close keeps
		}
		s.m = map[string]*sql.Stmt{}
		s.closed = true // a background prepare that ends later closes its statement (keep)
		s.mu.Unlock()
	}
	return d.Close()
}

// ExecTx runs query, a statement with ? placeholders (rewritten as on QueryOne), inside tx, a
// transaction begun on d: prepared once per pool of d and reused on tx's connection, its
// values bound, never interpolated (issue 16: the receipts' group commit writes through it
// on SQLite, where bun's interpolated text is compiled again on every call).
func ExecTx(ctx context.Context, d *bun.DB, tx bun.Tx, query string, args ...any) (sql.Result, error) {
	st, err := stmtTx(ctx, d, tx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// Exec runs query (? placeholders) inside idb: inside a bun.Tx as ExecTx does (prepared once
// per pool of the transaction's database, values bound); on anything else (a *bun.DB, a
// bun.Conn) through bun's formatting, which interpolates the values.
func Exec(ctx context.Context, idb bun.IDB, query string, args ...any) (sql.Result, error) {
	if tx, ok := idb.(bun.Tx); ok {
		return ExecTx(ctx, tx.NewSelect().DB(), tx, query, args...)
	}
	return idb.ExecContext(ctx, query, args...)
}

// Query is Exec for a statement that returns rows (QueryRowsTx inside a bun.Tx); the caller
// scans and closes them (ScanFirst for one row).
func Query(ctx context.Context, idb bun.IDB, query string, args ...any) (*sql.Rows, error) {
	if tx, ok := idb.(bun.Tx); ok {
		return QueryRowsTx(ctx, tx.NewSelect().DB(), tx, query, args...)
	}
	return idb.QueryContext(ctx, query, args...)
}

// ScanFirst scans the first of rows into dest (rows.Scan's destinations), reads the rest
// and closes rows. Errors: sql.ErrNoRows when there is no row, else the scan's or the rows'.
func ScanFirst(rows *sql.Rows, dest ...any) error {
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	for rows.Next() {
	}
	return rows.Err()
}
