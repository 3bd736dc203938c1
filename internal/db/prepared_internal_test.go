package db

import (
	"context"
	"testing"

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
