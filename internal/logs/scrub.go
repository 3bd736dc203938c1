package logs

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// plainSegment is a ": "-separated piece of an error message that can only be one of our own
// operation prefixes ("state", "update", "drop expired"): lowercase words, no digits, no
// punctuation, at most three words, so never an id or a value. Scrub keeps at most
// maxSegments of them.
var plainSegment = regexp.MustCompile(`^[a-z]+( [a-z]+){0,2}$`)

const maxSegments = 4

// Scrub reduces err to what may be logged (issue 13): code is the database's error code when
// the chain holds one (PostgreSQL's SQLSTATE, e.g. "23505"; SQLite's extended result code,
// e.g. "sqlite 2067"), "canceled" or "deadline_exceeded" for an ended context, else "";
// cause is the message's leading operation prefixes ("state: update") followed by the Go
// type of the innermost error in brackets ("state: update [*pgconn.PgError]"). Neither ever
// holds a value, an id or a driver's message text, which may quote the row (a duplicate key's
// value, a constraint's detail). A nil err gives "", "".
func Scrub(err error) (code, cause string) {
	if err == nil {
		return "", ""
	}
	var pg interface{ SQLState() string }
	var lite interface{ Code() int }
	switch {
	case errors.Is(err, context.Canceled):
		code = "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		code = "deadline_exceeded"
	case errors.As(err, &pg):
		code = pg.SQLState()
	case errors.As(err, &lite):
		code = "sqlite " + strconv.Itoa(lite.Code())
	}
	var prefix []string
	for _, seg := range strings.Split(err.Error(), ": ") {
		if len(prefix) == maxSegments || !plainSegment.MatchString(seg) {
			break
		}
		prefix = append(prefix, seg)
	}
	inner := err
	for {
		next := errors.Unwrap(inner)
		if next == nil {
			break
		}
		inner = next
	}
	cause = fmt.Sprintf("[%T]", inner)
	if len(prefix) > 0 {
		cause = strings.Join(prefix, ": ") + " " + cause
	}
	return code, cause
}
