// Package logs builds the service's structured logger (log/slog; JSON in production) and
// carries the request id in a context so every record logged with that context names its
// request. What is logged is the caller's choice: never secrets, keys, scope ids, note or
// turn text, or personal data (DESIGN "Security baseline").
package logs

import (
	"context"
	"io"
	"log/slog"
)

// RequestIDKey is the attribute holding the request id.
const RequestIDKey = "request_id"

type ctxKey struct{}

// WithRequestID returns ctx carrying the request id id.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// RequestID returns the request id ctx carries, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(ctxKey{}).(string)
	return id
}

// New returns a logger writing to w: format "text" gives slog's text lines, anything else
// JSON; level is "debug", "info", "warn" or "error" (anything else is info). Records logged
// with a context that carries a request id get a request_id attribute unless they set one.
func New(format, level string, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: parseLevel(level)}
	var h slog.Handler
	if format == "text" {
		h = slog.NewTextHandler(w, opts)
	} else {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(requestIDHandler{h})
}

func parseLevel(s string) slog.Level {
	switch s {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	default:
		return slog.LevelInfo
	}
}

// requestIDHandler adds the context's request id to each record that lacks one.
type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := RequestID(ctx); id != "" {
		has := false
		r.Attrs(func(a slog.Attr) bool {
			has = a.Key == RequestIDKey
			return !has
		})
		if !has {
			r.AddAttrs(slog.String(RequestIDKey, id))
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(attrs)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}
