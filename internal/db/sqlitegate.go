package db

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"time"
)

// SQLite lets one connection write at a time. Without help, every other connection that
// wants to write (BEGIN IMMEDIATE, or a write statement in autocommit) fails its lock and
// sleeps in SQLite's busy handler, with the back-off 1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50,
// 100 ms: it does not wake when the writer finishes, so a queue of writers turns into sleeps of
// tens to hundreds of milliseconds (measured: BEGIN p99 176 ms at 8 note writers, issue 16).
// writeGate queues this process's writers in Go instead: a write transaction, from BEGIN to
// COMMIT or ROLLBACK, and a write statement outside a transaction each hold the gate of their
// database file, so at most one connection of the process asks SQLite for the write lock and
// the next one starts the moment it is released. Other processes on the same file still meet
// SQLite's busy handler, as before.

// writeGate is the writer lock of one SQLite file. It is a sync.Mutex, not a FIFO queue: a
// running goroutine takes a free gate at once, and a waiter is woken to compete for it (after
// waiting 1 ms, the runtime hands it over in arrival order and yields to the waiter). A strict
// queue would hand the gate to a waiter that is not running yet and leave it idle meanwhile,
// which cost short autocommit writes half their rate in a benchmark.
type writeGate struct {
	mu sync.Mutex
}

// gates holds one writeGate per SQLite file (absolute path) of the process: several pools on
// one file share it.
var gates sync.Map // string -> *writeGate

// gateOf returns the gate of the SQLite file at path.
func gateOf(path string) *writeGate {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	g, _ := gates.LoadOrStore(path, &writeGate{})
	return g.(*writeGate)
}

// SQLite checkpoints its WAL in the connection whose commit crosses wal_autocheckpoint pages:
// that commit then copies the WAL into the database before it returns (measured: one note
// write in 27 waited 3 to 77 ms for it, and the writers queued behind it). Instead, after a
// write the pool's checkpointer goroutine runs a PASSIVE checkpoint (which never waits for
// and never blocks writers or readers) on a connection of its own, at most once per
// checkpointEvery; the DSN's wal_autocheckpoint stays as a backstop, high enough that it runs
// only if these fall behind. The goroutine closes its connection and ends after
// checkpointIdle without writes, or when the pool closes.
//
// checkpointEvery is short so that each checkpoint is short (issue 16). At 8 note writers
// the WAL grows by about 30,000 frames a second (~15 per write). A checkpoint every 100 ms
// took the ~3,000 new ones in ~10 ms (up to 37 ms), a stretch of work on one of the 2
// processors, and the note writes slower than 10 ms overlapped one 2-3 times as often as
// the writes overall (p99 10.6-15.5 ms). Every 25 ms each takes ~1,000 frames (~3.5 ms) and
// the p99 was 8.7-9.7 ms at the same rate and CPU per write; the checkpoints' own time rose
// by about a third (hot pages are copied more often, each checkpoint syncs the files).
// docs/bench.md has the runs.
const (
	checkpointEvery = 25 * time.Millisecond
	checkpointIdle  = 2 * time.Second
)

// checkpointer checkpoints one pool's SQLite file after its writes.
type checkpointer struct {
	d   driver.Driver // opens the checkpoint connection
	dsn string

	mu      sync.Mutex
	wrote   chan struct{} // a write committed since the last checkpoint (buffer of one)
	stop    chan struct{} // closed by close
	done    chan struct{} // closed when the running goroutine ends
	running bool
	closed  bool
}

func newCheckpointer(d driver.Driver, dsn string) *checkpointer {
	return &checkpointer{d: d, dsn: dsn, wrote: make(chan struct{}, 1), stop: make(chan struct{})}
}

// wroteSome tells the checkpointer that a write committed, starting its goroutine if it is
// not on (and the pool is open).
func (k *checkpointer) wroteSome() {
	select {
	case k.wrote <- struct{}{}:
	default:
	}
	k.mu.Lock()
	if !k.running && !k.closed {
		k.running = true
		k.done = make(chan struct{})
		go k.run(k.done)
	}
	k.mu.Unlock()
}

// close stops the goroutine and waits until it has closed its connection.
func (k *checkpointer) close() {
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return
	}
	k.closed = true
	close(k.stop)
	done, running := k.done, k.running
	k.mu.Unlock()
	if running {
		<-done
	}
}

// run checkpoints the WAL after writes, at most once per checkpointEvery, until it has been
// idle for checkpointIdle or the pool closes. A failed checkpoint is left to the next one
// (or to the backstop): it loses nothing.
func (k *checkpointer) run(done chan struct{}) {
	var conn driver.Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
		close(done)
	}()
	idle := time.NewTimer(checkpointIdle)
	defer idle.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-k.wrote:
		case <-idle.C:
			k.mu.Lock()
			if len(k.wrote) == 0 {
				k.running = false
				k.mu.Unlock()
				return
			}
			k.mu.Unlock()
			continue
		}
		select { // the writes of the interval share one checkpoint
		case <-k.stop:
			return
		case <-time.After(checkpointEvery):
		}
		select {
		case <-k.wrote:
		default:
		}
		if conn == nil {
			c, err := k.d.Open(k.dsn)
			if err != nil {
				continue
			}
			conn = c
		}
		if ex, ok := conn.(driver.ExecerContext); ok {
			if _, err := ex.ExecContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)", nil); err != nil {
				conn.Close()
				conn = nil
			}
		}
		idle.Reset(checkpointIdle)
	}
}

// gateWait bounds a wait for the gate like busy_timeout bounds a wait for SQLite's lock: a
// writer that never gets it fails as it would have with SQLITE_BUSY.
const gateWait = 10 * time.Second

// errGateTimeout is what a writer gets after gateWait: the same words as SQLite's SQLITE_BUSY.
var errGateTimeout = errors.New("database is locked (SQLITE_BUSY: waited for this process's other writers)")

// acquire takes the gate, waiting until ctx ends or gateWait passes. A wait that gives up
// leaves a goroutine behind that releases the gate as soon as it gets it.
func (g *writeGate) acquire(ctx context.Context) error {
	if g.mu.TryLock() {
		return nil
	}
	got := make(chan struct{})
	go func() {
		g.mu.Lock()
		close(got)
	}()
	t := time.NewTimer(gateWait)
	defer t.Stop()
	var err error
	select {
	case <-got:
		return nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-t.C:
		err = errGateTimeout
	}
	go func() {
		<-got
		g.mu.Unlock()
	}()
	return err
}

func (g *writeGate) release() { g.mu.Unlock() }

// isWrite reports whether query, run outside a transaction, asks SQLite for the write lock:
// INSERT, UPDATE, DELETE, REPLACE, schema changes, VACUUM, and WITH ... followed by one of
// them. Anything else (SELECT, PRAGMA, transaction control) is run without the gate: a
// statement taken for a read is only as slow as before, never blocked.
func isWrite(query string) bool {
	q := strings.TrimLeft(query, " \t\r\n(")
	word := q
	if i := strings.IndexAny(q, " \t\r\n("); i >= 0 {
		word = q[:i]
	}
	switch strings.ToUpper(word) {
	case "INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP", "ALTER", "VACUUM", "REINDEX":
		return true
	case "WITH":
		u := strings.ToUpper(q)
		return strings.Contains(u, "INSERT ") || strings.Contains(u, "UPDATE ") || strings.Contains(u, "DELETE ")
	}
	return false
}

// gatedConnector opens SQLite connections through d that queue their writes on g and
// report them to the pool's checkpointer.
type gatedConnector struct {
	d   driver.Driver
	dsn string
	g   *writeGate
	ck  *checkpointer
}

// newGatedConnector is the connector of a pool on the SQLite file at path.
func newGatedConnector(d driver.Driver, path, dsn string) *gatedConnector {
	return &gatedConnector{d: d, dsn: dsn, g: gateOf(path), ck: newCheckpointer(d, dsn)}
}

// Close stops the pool's checkpointer (sql.DB.Close calls it).
func (c *gatedConnector) Close() error {
	c.ck.close()
	return nil
}

// Connect opens a connection of the file.
func (c *gatedConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.d.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return newGatedConn(conn, c.g, c.ck)
}

func (c *gatedConnector) Driver() driver.Driver { return c.d }

// gatedConn is a SQLite connection whose transactions and write statements hold the gate.
type gatedConn struct {
	driver.Conn
	begin   driver.ConnBeginTx
	prepare driver.ConnPrepareContext
	exec    driver.ExecerContext
	query   driver.QueryerContext
	g       *writeGate
	ck      *checkpointer
	inTx    bool // between BeginTx and the end of its transaction: the gate is held
}

func newGatedConn(c driver.Conn, g *writeGate, ck *checkpointer) (*gatedConn, error) {
	gc := &gatedConn{Conn: c, g: g, ck: ck}
	var ok1, ok2, ok3, ok4 bool
	gc.begin, ok1 = c.(driver.ConnBeginTx)
	gc.prepare, ok2 = c.(driver.ConnPrepareContext)
	gc.exec, ok3 = c.(driver.ExecerContext)
	gc.query, ok4 = c.(driver.QueryerContext)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		c.Close()
		return nil, fmt.Errorf("db: the SQLite driver %T lacks a context method", c)
	}
	return gc, nil
}

// BeginTx takes the gate, then begins (BEGIN IMMEDIATE): the gate is released when the
// transaction commits or rolls back, or when BEGIN fails.
func (c *gatedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if err := c.g.acquire(ctx); err != nil {
		return nil, err
	}
	tx, err := c.begin.BeginTx(ctx, opts)
	if err != nil {
		c.g.release()
		return nil, err
	}
	c.inTx = true
	return &gatedTx{Tx: tx, c: c}, nil
}

// Begin is BeginTx without a context (driver.Conn).
func (c *gatedConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

// gate takes the gate for a statement outside a transaction that writes (write: isWrite of
// its text) and reports whether it did; the caller then ends the write with ungate.
func (c *gatedConn) gate(ctx context.Context, write bool) (held bool, err error) {
	if c.inTx || !write {
		return false, nil
	}
	if err := c.g.acquire(ctx); err != nil {
		return false, err
	}
	return true, nil
}

// ungate releases the gate gate took and tells the checkpointer a write committed.
func (c *gatedConn) ungate() {
	c.g.release()
	c.ck.wroteSome()
}

func (c *gatedConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	held, err := c.gate(ctx, isWrite(query))
	if err != nil {
		return nil, err
	}
	if held {
		defer c.ungate()
	}
	return c.exec.ExecContext(ctx, query, args)
}

func (c *gatedConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	held, err := c.gate(ctx, isWrite(query))
	if err != nil {
		return nil, err
	}
	rows, err := c.query.QueryContext(ctx, query, args)
	return c.holdUntilClosed(rows, err, held)
}

func (c *gatedConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.prepare.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	se, ok1 := st.(driver.StmtExecContext)
	sq, ok2 := st.(driver.StmtQueryContext)
	if !ok1 || !ok2 {
		st.Close()
		return nil, fmt.Errorf("db: the SQLite statement %T lacks a context method", st)
	}
	return &gatedStmt{Stmt: st, exec: se, query: sq, c: c, write: isWrite(query)}, nil
}

func (c *gatedConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// Ping, ResetSession and IsValid pass through to the driver's connection when it has them.
func (c *gatedConn) Ping(ctx context.Context) error {
	if p, ok := c.Conn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (c *gatedConn) ResetSession(ctx context.Context) error {
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *gatedConn) IsValid() bool {
	if v, ok := c.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

// gatedTx releases the gate when its transaction ends, whatever the outcome.
type gatedTx struct {
	driver.Tx
	c    *gatedConn
	done bool
}

func (t *gatedTx) end(err error) error {
	if !t.done {
		t.done = true
		t.c.inTx = false
		t.c.g.release()
	}
	return err
}

func (t *gatedTx) Commit() error {
	err := t.end(t.Tx.Commit())
	if err == nil {
		t.c.ck.wroteSome()
	}
	return err
}

func (t *gatedTx) Rollback() error { return t.end(t.Tx.Rollback()) }

// gatedStmt is a prepared statement that holds the gate while it runs when it is a write
// (write: isWrite of its text, decided once when it is prepared) outside a transaction.
type gatedStmt struct {
	driver.Stmt
	exec  driver.StmtExecContext
	query driver.StmtQueryContext
	c     *gatedConn
	write bool
}

func (s *gatedStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	held, err := s.c.gate(ctx, s.write)
	if err != nil {
		return nil, err
	}
	if held {
		defer s.c.ungate()
	}
	return s.exec.ExecContext(ctx, args)
}

func (s *gatedStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	held, err := s.c.gate(ctx, s.write)
	if err != nil {
		return nil, err
	}
	rows, err := s.query.QueryContext(ctx, args)
	return s.c.holdUntilClosed(rows, err, held)
}

// holdUntilClosed keeps the gate of a write's rows (INSERT ... RETURNING in autocommit: its
// write ends when the statement is reset, at Close) until they are closed. Without the gate
// (held false) rows are returned as they are.
func (c *gatedConn) holdUntilClosed(rows driver.Rows, err error, held bool) (driver.Rows, error) {
	if !held {
		return rows, err
	}
	if err != nil {
		c.ungate()
		return nil, err
	}
	return &gatedRows{Rows: rows, c: c}, nil
}

// gatedRows ends its write (gatedConn.ungate) once, at its first Close (database/sql closes
// a connection's rows from one goroutine at a time). The column type methods pass through.
type gatedRows struct {
	driver.Rows
	c      *gatedConn
	closed bool
}

func (r *gatedRows) Close() error {
	err := r.Rows.Close()
	if !r.closed {
		r.closed = true
		r.c.ungate()
	}
	return err
}

func (r *gatedRows) ColumnTypeDatabaseTypeName(i int) string {
	if t, ok := r.Rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return t.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

func (r *gatedRows) ColumnTypeScanType(i int) reflect.Type {
	if t, ok := r.Rows.(driver.RowsColumnTypeScanType); ok {
		return t.ColumnTypeScanType(i)
	}
	return reflect.TypeFor[any]()
}

func (r *gatedRows) ColumnTypeNullable(i int) (nullable, ok bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeNullable); ok {
		return t.ColumnTypeNullable(i)
	}
	return false, false
}
