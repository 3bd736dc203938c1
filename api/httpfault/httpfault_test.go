package httpfault

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/fault"
)

func TestStatusOf(t *testing.T) {
	cases := []struct {
		name string
		in   error
		want int
	}{
		{"invalid", fault.New(fault.Invalid, "x", "m"), http.StatusBadRequest},
		{"stale", fault.New(fault.Stale, "x", "m"), http.StatusPreconditionFailed},
		{"wrapped unprocessable", fmt.Errorf("notes: write: %w", fault.New(fault.Unprocessable, "x", "m")), http.StatusUnprocessableEntity},
		{"canceled", fault.New(fault.Canceled, "x", "m"), StatusClientClosedRequest},
		{"gone", fault.New(fault.Gone, "x", "m"), http.StatusGone},
		{"unknown kind", fault.New(fault.Kind(99), "x", "m"), http.StatusInternalServerError},
		{"not a fault", errors.New("boom"), http.StatusInternalServerError},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, StatusOf(c.in))
		})
	}
}

// TestLogInternalIsScrubbed: the logged line carries the cause's shape, never its message.
func TestLogInternalIsScrubbed(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	LogInternal(context.Background(), log, "console: internal error", fmt.Errorf("notes: load: %w", errors.New(`duplicate key value "ana@example.com"`)), "route", "/console/notes")
	require.Contains(t, buf.String(), `"cause":"notes: load [*errors.errorString]"`)
	require.Contains(t, buf.String(), `"route":"/console/notes"`)
	require.NotContains(t, buf.String(), "ana@example.com")
}
