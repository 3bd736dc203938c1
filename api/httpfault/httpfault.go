// Package httpfault is the one edge policy for errors (issue 30 §3), shared by the JSON API
// (api/errors.go) and the Console (api/console): which HTTP status each fault kind gets, and
// how an error that is not a fault is logged (scrubbed: the database's code and the cause's
// shape, never a driver's message, which may quote a row).
package httpfault

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/logs"
)

// StatusClientClosedRequest is the status of a request whose caller went away before its
// answer (nginx's 499).
const StatusClientClosedRequest = 499

// statusOf maps each fault kind to its HTTP status: the only place statuses are chosen.
var statusOf = map[fault.Kind]int{
	fault.Invalid:       http.StatusBadRequest,
	fault.Unauthorized:  http.StatusUnauthorized,
	fault.Forbidden:     http.StatusForbidden,
	fault.NotFound:      http.StatusNotFound,
	fault.Conflict:      http.StatusConflict,
	fault.Stale:         http.StatusPreconditionFailed,
	fault.TooLarge:      http.StatusRequestEntityTooLarge,
	fault.Unprocessable: http.StatusUnprocessableEntity,
	fault.TooMany:       http.StatusTooManyRequests,
	fault.Unavailable:   http.StatusServiceUnavailable,
	fault.Canceled:      StatusClientClosedRequest,
	fault.Gone:          http.StatusGone,
}

// Status is the HTTP status of a fault kind; 500 for a kind the table does not know.
func Status(k fault.Kind) int {
	if s, ok := statusOf[k]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// StatusOf is the HTTP status of err: its fault's (Status), else 500.
func StatusOf(err error) int {
	if fe := fault.As(err); fe != nil {
		return Status(fe.Kind)
	}
	return http.StatusInternalServerError
}

// LogInternal logs err, an error the caller is answered only "internal error" for, once at
// error level under msg with attrs (route, request id: never scope ids or personal data),
// as logs.Scrub's code and cause, never err's message.
func LogInternal(ctx context.Context, log *slog.Logger, msg string, err error, attrs ...any) {
	log.ErrorContext(ctx, msg, append(attrs, Scrubbed(err)...)...)
}

// Scrubbed is err as log attributes: "code" and "cause" from logs.Scrub, never err's message.
func Scrubbed(err error) []any {
	code, cause := logs.Scrub(err)
	return []any{"code", code, "cause", cause}
}
