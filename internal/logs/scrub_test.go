package logs_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/logs"
)

// pgError stands in for *pgconn.PgError: a SQLSTATE and a message quoting the row.
type pgError struct{}

func (pgError) Error() string {
	return `ERROR: duplicate key value violates unique constraint "x" (SQLSTATE 23505): Key (email)=(ana@example.com)`
}
func (pgError) SQLState() string { return "23505" }

// liteError stands in for modernc's *sqlite.Error.
type liteError struct{}

func (liteError) Error() string {
	return "constraint failed: UNIQUE constraint failed: t.ana@example.com (2067)"
}
func (liteError) Code() int { return 2067 }

func TestScrub(t *testing.T) {
	tests := []struct {
		name      string
		in        error
		wantCode  string
		wantCause string
	}{
		{"postgres", fmt.Errorf("state: update: %w", pgError{}), "23505", "state: update [logs_test.pgError]"},
		{"sqlite", fmt.Errorf("notes: insert: %w", liteError{}), "sqlite 2067", "notes: insert: constraint failed [logs_test.liteError]"},
		{"id in the wrap", fmt.Errorf("notes: load nt_01ab: %w", errors.New("secret ana@example.com")), "", "notes [*errors.errorString]"},
		{"canceled", fmt.Errorf("state: write: %w", context.Canceled), "canceled", "state: write: context canceled [*errors.errorString]"},
		{"long plain text", errors.New("state: a b c d e: f"), "", "state [*errors.errorString]"},
		{"nothing plain", errors.New("ana@example.com"), "", "[*errors.errorString]"},
		{"nil", nil, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, cause := logs.Scrub(tc.in)
			require.Equal(t, tc.wantCode, code, "code: got %q, want %q", code, tc.wantCode)
			require.Equal(t, tc.wantCause, cause, "cause: got %q, want %q", cause, tc.wantCause)
			require.NotContains(t, cause, "ana@example.com")
		})
	}
}
