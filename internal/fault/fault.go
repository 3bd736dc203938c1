// Package fault is the one error shape the domain packages return for anything a caller can
// act on: a Kind (which the API maps to an HTTP status in one table), a stable machine code
// and a message that never carries secrets, scope ids or personal data.
package fault

import (
	"errors"
	"fmt"
	"time"
)

// Kind classifies an Error; api/errors.go maps each to one HTTP status.
type Kind int

// The kinds of error, with the HTTP status the API gives each.
const (
	Invalid       Kind = iota + 1 // 400: malformed or invalid input
	Unauthorized                  // 401: no or unknown key
	Forbidden                     // 403: feature off, scope or role missing
	NotFound                      // 404
	Conflict                      // 409: state does not allow it, duplicate, limit reached
	Stale                         // 412: if_version does not match
	TooLarge                      // 413
	Unprocessable                 // 422: refused content (personal data)
	TooMany                       // 429: rate limit; RetryAfter set
	Unavailable                   // 503: a dependency did not answer; RetryAfter set
	Canceled                      // 499: the caller gave up (its request's context ended) before the answer
	Gone                          // 410: what was asked for existed and is gone for good (a pruned feed cursor)
)

// Error is a domain error a caller can act on. Code is stable (e.g. "agent_state_conflict");
// Details are extra members of the JSON error object and Extra members beside it (never
// values of personal data).
type Error struct {
	Kind       Kind
	Code       string
	Message    string
	Details    map[string]any
	Extra      map[string]any
	RetryAfter time.Duration
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// New returns an Error of kind with code and a formatted message.
func New(kind Kind, code, format string, args ...any) *Error {
	return &Error{Kind: kind, Code: code, Message: fmt.Sprintf(format, args...)}
}

// With returns e with one more detail member.
func (e *Error) With(key string, value any) *Error {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[key] = value
	return e
}

// As returns the *Error in err's chain, or nil.
func As(err error) *Error {
	var fe *Error
	if errors.As(err, &fe) {
		return fe
	}
	return nil
}

// IsCode reports whether err carries a fault with that code.
func IsCode(err error, code string) bool {
	fe := As(err)
	return fe != nil && fe.Code == code
}
