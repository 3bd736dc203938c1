package receipts

import (
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// leafCanonical writes the RFC 8785 (JCS) canonical JSON of r's leaf document (LeafHash)
// directly, without encoding and re-parsing it: the members in their canonical order, which
// is fixed. It handles what receipts hold: strings that are valid UTF-8, details of ASCII keys
// whose values are strings, booleans, null or integral numbers of magnitude below 2^53 (the
// numbers JSON decoding gives for counts). Anything else reports false, and LeafHash takes the
// general path (signing.Canonical); both give the same bytes (TestLeafCanonicalMatchesJCS).
func leafCanonical(r Receipt, objs []string, detail map[string]any) ([]byte, bool) {
	b := make([]byte, 0, 256)
	var ok bool
	b = append(b, `{"action":`...)
	if b, ok = appendJCSString(b, r.Action); !ok {
		return nil, false
	}
	b = append(b, `,"actor_key_id":`...)
	if b, ok = appendJCSString(b, r.ActorKeyID); !ok {
		return nil, false
	}
	b = append(b, `,"at":"`...)
	b = r.At.UTC().AppendFormat(b, timeFormat)
	b = append(b, `","detail":{`...)
	keys := make([]string, 0, len(detail))
	for k := range detail {
		for i := 0; i < len(k); i++ {
			if k[i] >= utf8.RuneSelf {
				return nil, false // UTF-16 order differs from byte order only beyond ASCII
			}
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b, _ = appendJCSString(b, k)
		b = append(b, ':')
		switch v := detail[k].(type) {
		case nil:
			b = append(b, "null"...)
		case bool:
			b = strconv.AppendBool(b, v)
		case string:
			if b, ok = appendJCSString(b, v); !ok {
				return nil, false
			}
		case float64:
			if v != math.Trunc(v) || math.Abs(v) >= 1<<53 {
				return nil, false
			}
			b = strconv.AppendInt(b, int64(v), 10)
		default:
			return nil, false
		}
	}
	b = append(b, `},"id":`...)
	if b, ok = appendJCSString(b, r.ID); !ok {
		return nil, false
	}
	b = append(b, `,"kind":`...)
	if b, ok = appendJCSString(b, r.Kind); !ok {
		return nil, false
	}
	b = append(b, `,"object_ids":[`...)
	for i, id := range objs {
		if i > 0 {
			b = append(b, ',')
		}
		if b, ok = appendJCSString(b, id); !ok {
			return nil, false
		}
	}
	b = append(b, `],"seq":`...)
	b = strconv.AppendInt(b, r.Seq, 10)
	b = append(b, `,"space_id":`...)
	if b, ok = appendJCSString(b, r.SpaceID); !ok {
		return nil, false
	}
	b = append(b, `,"type":"receipt"}`...)
	return b, true
}

// appendJCSString appends s as a JCS (ECMAScript JSON.stringify) string: '"' and '\' and the
// control characters escaped (\b \t \n \f \r, else \u00xx), everything else as is. It reports
// false for s that is not valid UTF-8.
func appendJCSString(b []byte, s string) ([]byte, bool) {
	if !utf8.ValidString(s) {
		return b, false
	}
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c >= 0x20:
			b = append(b, c)
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\t':
			b = append(b, '\\', 't')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c == '\r':
			b = append(b, '\\', 'r')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
	}
	return append(b, '"'), true
}
