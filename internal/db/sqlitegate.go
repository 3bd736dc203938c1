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

	// checkpoint serialises this process's checkpoints of the file. SQLite runs one
	// checkpoint of a file at a time and answers a second one at once with SQLITE_BUSY (busy=1
	// from PRAGMA wal_checkpoint), without calling the busy handler: an erasure's
	// TRUNCATE checkpoint that met the pool's PASSIVE one failed as "blocked by readers"
	// (issue 27). Held by the checkpointer around each checkpoint and by a connection around
	// a PRAGMA wal_checkpoint statement, so the second waits for the first instead.
	checkpoint sync.Mutex
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
	g   *writeGate // its checkpoint lock is held around each checkpoint

	mu      sync.Mutex
	wrote   chan struct{} // a write committed since the last checkpoint (buffer of one)
	stop    chan struct{} // closed by close
	done    chan struct{} // closed when the running goroutine ends
	running bool
	closed  bool
}

func newCheckpointer(d driver.Driver, dsn string, g *writeGate) *checkpointer {
	return &checkpointer{d: d, dsn: dsn, g: g, wrote: make(chan struct{}, 1), stop: make(chan struct{})}
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
			_ = conn.Close() // the checkpointer's own connection, closed as it stops
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
			k.g.checkpoint.Lock()
			_, err := ex.ExecContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)", nil)
			k.g.checkpoint.Unlock()
			if err != nil {
				_ = conn.Close() // the checkpoint failed: a fresh connection is opened next round
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
	g := gateOf(path)
	return &gatedConnector{d: d, dsn: dsn, g: g, ck: newCheckpointer(d, dsn, g)}
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
		_ = c.Close() // the missing method is the error to report
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

// stmtKind is what a statement run outside a transaction asks of its file's locks.
type stmtKind uint8

const (
	stmtRead       stmtKind = iota // nothing
	stmtWrite                      // the write gate (isWrite)
	stmtCheckpoint                 // the checkpoint lock (isCheckpoint)
)

// kindOf classifies query for gate.
func kindOf(query string) stmtKind {
	switch {
	case isCheckpoint(query):
		return stmtCheckpoint
	case isWrite(query):
		return stmtWrite
	}
	return stmtRead
}

// isCheckpoint reports whether query is a PRAGMA wal_checkpoint (any mode, any schema).
func isCheckpoint(query string) bool {
	q := strings.ToLower(strings.Join(strings.Fields(query), " "))
	if !strings.HasPrefix(q, "pragma ") {
		return false
	}
	return strings.Contains(q, "wal_checkpoint")
}

// gate takes what a statement of kind needs: the write gate for a write outside a
// transaction, the file's checkpoint lock for a checkpoint. It returns the function that
// gives it back (nil when nothing was taken), to be called once the statement is done.
func (c *gatedConn) gate(ctx context.Context, kind stmtKind) (release func(), err error) {
	switch {
	case kind == stmtCheckpoint:
		c.g.checkpoint.Lock() // a checkpoint is short (milliseconds): no deadline needed
		return c.g.checkpoint.Unlock, nil
	case kind == stmtWrite && !c.inTx:
		if err := c.g.acquire(ctx); err != nil {
			return nil, err
		}
		return c.ungate, nil
	}
	return nil, nil
}

// ungate releases the gate gate took and tells the checkpointer a write committed.
func (c *gatedConn) ungate() {
	c.g.release()
	c.ck.wroteSome()
}

func (c *gatedConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	release, err := c.gate(ctx, kindOf(query))
	if err != nil {
		return nil, err
	}
	if release != nil {
		defer release()
	}
	return c.exec.ExecContext(ctx, query, args)
}

func (c *gatedConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	release, err := c.gate(ctx, kindOf(query))
	if err != nil {
		return nil, err
	}
	rows, err := c.query.QueryContext(ctx, query, args)
	return holdUntilClosed(rows, err, release)
}

func (c *gatedConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.prepare.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	se, ok1 := st.(driver.StmtExecContext)
	sq, ok2 := st.(driver.StmtQueryContext)
	if !ok1 || !ok2 {
		_ = st.Close() // the missing method is the error to report
		return nil, fmt.Errorf("db: the SQLite statement %T lacks a context method", st)
	}
	return &gatedStmt{Stmt: st, exec: se, query: sq, c: c, kind: kindOf(query)}, nil
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

// gatedStmt is a prepared statement that takes what its kind needs while it runs (kind:
// kindOf its text, decided once when it is prepared; see gatedConn.gate).
type gatedStmt struct {
	driver.Stmt
	exec  driver.StmtExecContext
	query driver.StmtQueryContext
	c     *gatedConn
	kind  stmtKind
}

func (s *gatedStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	release, err := s.c.gate(ctx, s.kind)
	if err != nil {
		return nil, err
	}
	if release != nil {
		defer release()
	}
	return s.exec.ExecContext(ctx, args)
}

func (s *gatedStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	release, err := s.c.gate(ctx, s.kind)
	if err != nil {
		return nil, err
	}
	rows, err := s.query.QueryContext(ctx, args)
	return holdUntilClosed(rows, err, release)
}

// holdUntilClosed keeps what gate took for rows until they are closed: a write's rows
// (INSERT ... RETURNING in autocommit: its write ends when the statement is reset, at Close)
// and a checkpoint's (it may run as the rows are read). With nothing taken (release nil)
// rows are returned as they are.
func holdUntilClosed(rows driver.Rows, err error, release func()) (driver.Rows, error) {
	if release == nil {
		return rows, err
	}
	if err != nil {
		release()
		return nil, err
	}
	return &gatedRows{Rows: rows, release: release}, nil
}

// gatedRows gives back what its statement took (release) once, at its first Close
// (database/sql closes a connection's rows from one goroutine at a time). The column type
// methods pass through.
type gatedRows struct {
	driver.Rows
	release func()
	closed  bool
}

func (r *gatedRows) Close() error {
	err := r.Rows.Close()
	if !r.closed {
		r.closed = true
		r.release()
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
