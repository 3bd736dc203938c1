package db

import (
	"fmt"
	"strings"
	"time"
)

// ScanTime is a sql.Scanner that stores a timestamp column into *T: a time.Time as the driver
// gives it (PostgreSQL), or the text SQLite stores. Selected on SQLite as `+col AS col`, a
// timestamp column loses its declared type and the driver hands its text over as stored,
// instead of trying its list of layouts (time.Time.String's first, which the text bun and
// TimeArg store never matches, allocating an error per column per row). The text bun and
// TimeArg write ("2006-01-02 15:04:05.999999-07:00", UTC) is read in one parse; any other
// layout the SQLite driver reads as a time (time.Time.String's, RFC 3339, without a zone,
// date only) is read as the driver reads it. Anything else is an error naming the text's
// length, never its content.
type ScanTime struct{ T *time.Time }

// storedLayout is the layout of the timestamps bun (and TimeArg) write on SQLite.
const storedLayout = "2006-01-02 15:04:05.999999999-07:00"

// otherLayouts are the other layouts modernc.org/sqlite reads a timestamp column in, in its
// order (after time.Time.String's, tried first).
var otherLayouts = []string{
	"2006-01-02T15:04:05.999999999-07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04",
	"2006-01-02T15:04",
	"2006-01-02",
}

// Scan implements sql.Scanner.
func (s ScanTime) Scan(src any) error {
	switch v := src.(type) {
	case time.Time:
		*s.T = v
		return nil
	case string:
		return s.parse(v)
	case []byte:
		return s.parse(string(v))
	}
	return fmt.Errorf("db: scan time: unsupported %T", src)
}

func (s ScanTime) parse(text string) error {
	if t, err := time.Parse(storedLayout, text); err == nil {
		*s.T = t
		return nil
	}
	str := text
	if i := strings.Index(str, "m="); i > 0 {
		str = str[:i]
	}
	if t, err := time.Parse("2006-01-02 15:04:05.999999999 -0700 MST", strings.TrimSpace(str)); err == nil {
		*s.T = t
		return nil
	}
	trimmed := strings.TrimSuffix(text, "Z")
	for _, layout := range otherLayouts {
		if t, err := time.Parse(layout, trimmed); err == nil {
			*s.T = t
			return nil
		}
	}
	return fmt.Errorf("db: scan time: %d bytes of text in no known layout", len(text))
}
