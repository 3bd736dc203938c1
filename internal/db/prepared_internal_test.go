package db

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Close releases and forgets the statements a pool prepared, then closes the pool.
func TestCloseForgetsPreparedStatements(t *testing.T) {
	ctx := context.Background()
	d, err := Open(ctx, "sqlite://"+t.TempDir()+"/close.db", Options{})
	require.NoError(t, err)
	var one int
	require.NoError(t, QueryOne(ctx, d, "SELECT ?", []any{&one}, 1))
	require.Equal(t, 1, one)
	_, kept := prepared.Load(d)
	require.True(t, kept, "the statement is kept while the pool lives")
	require.NoError(t, Close(d))
	_, kept = prepared.Load(d)
	require.False(t, kept, "the pool's statements are forgotten")
	require.Error(t, d.PingContext(ctx), "the pool is closed")
}

// TimeArg binds a time on SQLite as the very text bun's dialect interpolates for it (between
// its quotes), whatever the zone, the fraction and the year.
func TestTimeArgIsBunsTextOnSQLite(t *testing.T) {
	d, err := Open(context.Background(), "sqlite://"+t.TempDir()+"/timearg.db", Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, Close(d)) })
	east := time.FixedZone("east", 5*3600+30*60)
	for _, tm := range []time.Time{
		time.Date(2026, 12, 2, 19, 4, 5, 0, time.UTC),
		time.Date(2026, 12, 2, 19, 4, 5, 123456789, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 120000000, east),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(12345, 6, 7, 8, 9, 10, 11000, east),
		time.Now(),
	} {
		want := strings.Trim(string(d.Dialect().AppendTime(nil, tm)), "'")
		require.Equal(t, want, TimeArg(d, tm), "time %v", tm)
	}
}
