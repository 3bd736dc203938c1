package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
)

// TestScanTimeReadsAsTheDriver stores timestamps on SQLite in every layout the driver reads
// (bun's and TimeArg's, time.Time.String's, RFC 3339, with Z, without a zone, date only) and
// reads each both ways: as the driver parses the typed column into a time.Time, and as its
// text (`+col`) through db.ScanTime. They are the same instant. On PostgreSQL ScanTime takes
// the driver's time.Time. Text in no layout is an error that does not quote it.
func TestScanTimeReadsAsTheDriver(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 12, 2, 9, 37, 44, 123456000, time.UTC)
	t.Run("sqlite", func(t *testing.T) {
		d := dbtest.Open(t, "sqlite")
		_, err := d.ExecContext(ctx, `CREATE TABLE scan_times (id INTEGER PRIMARY KEY, at TIMESTAMP NOT NULL)`)
		require.NoError(t, err)
		texts := []any{
			db.TimeArg(d, at),
			at.String(),
			at.In(time.FixedZone("CET", 3600)).String(),
			"2026-12-02T09:37:44.123456+01:00",
			"2026-12-02 09:37:44.123456Z",
			"2026-12-02T09:37:44Z",
			"2026-12-02 09:37:44.123456",
			"2026-12-02 09:37",
			"2026-12-02",
		}
		for i, text := range texts {
			_, err := d.DB.ExecContext(ctx, `INSERT INTO scan_times (id, at) VALUES (?, ?)`, i, text)
			require.NoError(t, err)
			var typed, scanned time.Time
			require.NoError(t, d.DB.QueryRowContext(ctx, `SELECT at FROM scan_times WHERE id = ?`, i).Scan(&typed), "%v", text)
			require.NoError(t, d.DB.QueryRowContext(ctx, `SELECT +at AS at FROM scan_times WHERE id = ?`, i).Scan(db.ScanTime{T: &scanned}), "%v", text)
			require.True(t, typed.Equal(scanned), "%v: driver %v, ScanTime %v", text, typed, scanned)
			require.False(t, typed.IsZero())
		}
		var got time.Time
		require.NoError(t, d.DB.QueryRowContext(ctx, `SELECT +at AS at FROM scan_times WHERE id = 0`).Scan(db.ScanTime{T: &got}))
		require.True(t, at.Equal(got))

		err = db.ScanTime{T: &got}.Scan("secret-ish text")
		require.Error(t, err)
		require.NotContains(t, err.Error(), "secret")
		require.Error(t, db.ScanTime{T: &got}.Scan(int64(5)))
	})
	t.Run("postgres", func(t *testing.T) {
		d := dbtest.Open(t, "postgres")
		var got time.Time
		require.NoError(t, d.DB.QueryRowContext(ctx, `SELECT $1::timestamptz`, at).Scan(db.ScanTime{T: &got}))
		require.True(t, at.Equal(got), "%v", got)
	})
}
