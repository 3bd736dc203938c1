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
	n := 256 + len(r.Action) + len(r.ActorKeyID) + len(r.ID) + len(r.Kind) + len(r.SpaceID)
	for _, id := range objs {
		n += len(id) + 3
	}
	b, ok := appendLeafHead(make([]byte, 0, n), r)
	if ok {
		b, ok = appendLeafDetail(b, detail)
	}
	if ok {
		b, ok = appendLeafTail(b, r, objs)
	}
	if !ok {
		return nil, false
	}
	return b, true
}

// appendLeafHead appends the leaf document's members before the detail's content: the
// opening brace, action, actor_key_id, at, and `"detail":{`. It reports false for a string
// that is not valid UTF-8.
func appendLeafHead(b []byte, r Receipt) ([]byte, bool) {
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
	return b, true
}

// appendLeafDetail appends detail's members in JCS order and the closing brace. It reports
// false for a key beyond ASCII (UTF-16 order differs from byte order only there) or a value
// appendJCSScalar does not handle.
func appendLeafDetail(b []byte, detail map[string]any) ([]byte, bool) {
	keys := make([]string, 0, len(detail))
	for k := range detail {
		for i := 0; i < len(k); i++ {
			if k[i] >= utf8.RuneSelf {
				return nil, false
			}
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var ok bool
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		if b, ok = appendJCSString(b, k); !ok {
			return nil, false
		}
		b = append(b, ':')
		if b, ok = appendJCSScalar(b, detail[k]); !ok {
			return nil, false
		}
	}
	return append(b, '}'), true
}

// appendJCSScalar appends v, a value of a receipt's detail, in JCS form: null, a boolean, a
// string, or an integral float64 of magnitude below 2^53 written as an integer. It reports
// false for anything else (the general path handles it).
func appendJCSScalar(b []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		return strconv.AppendBool(b, v), true
	case string:
		return appendJCSString(b, v)
	case float64:
		if v != math.Trunc(v) || math.Abs(v) >= 1<<53 {
			return b, false
		}
		return strconv.AppendInt(b, int64(v), 10), true
	default:
		return b, false
	}
}

// appendLeafTail appends the leaf document's members after the detail: id, kind, object_ids
// (objs, in the given order), seq, space_id, type, and the closing brace. It reports false for
// a string that is not valid UTF-8.
func appendLeafTail(b []byte, r Receipt, objs []string) ([]byte, bool) {
	var ok bool
	b = append(b, `,"id":`...)
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
	return append(b, `,"type":"receipt"}`...), true
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
	start := 0 // s[start:i] needs no escape
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		start = i + 1
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\t':
			b = append(b, '\\', 't')
		case '\n':
			b = append(b, '\\', 'n')
		case '\f':
			b = append(b, '\\', 'f')
		case '\r':
			b = append(b, '\\', 'r')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
	}
	b = append(b, s[start:]...)
	return append(b, '"'), true
}

// encodeDetail writes detail as json.Marshal does and returns it with what json.Unmarshal
// gives back for it (numbers as float64), without encoding and decoding it: for details of
// plainString keys whose values are plainString strings, booleans, nil, or integers (int,
// int64, or an integral float64 other than -0) of magnitude below 2^53. Anything else
// reports false, and the caller takes the general path; both give the same bytes and values
// (TestEncodeDetailMatchesJSON).
func encodeDetail(detail map[string]any) ([]byte, map[string]any, bool) {
	keys := make([]string, 0, len(detail))
	for k := range detail {
		if !plainString(k) {
			return nil, nil, false
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]byte, 0, 64)
	decoded := make(map[string]any, len(detail))
	out = append(out, '{')
	for i, k := range keys {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, '"')
		out = append(out, k...)
		out = append(out, '"', ':')
		switch v := detail[k].(type) {
		case nil:
			out = append(out, "null"...)
			decoded[k] = nil
		case bool:
			out = strconv.AppendBool(out, v)
			decoded[k] = v
		case string:
			if !plainString(v) {
				return nil, nil, false
			}
			out = append(out, '"')
			out = append(out, v...)
			out = append(out, '"')
			decoded[k] = v
		case int:
			if !exactInt(int64(v)) {
				return nil, nil, false
			}
			out = strconv.AppendInt(out, int64(v), 10)
			decoded[k] = float64(v)
		case int64:
			if !exactInt(v) {
				return nil, nil, false
			}
			out = strconv.AppendInt(out, v, 10)
			decoded[k] = float64(v)
		case float64:
			if v != math.Trunc(v) || math.Abs(v) >= 1<<53 || (v == 0 && math.Signbit(v)) {
				return nil, nil, false
			}
			out = strconv.AppendInt(out, int64(v), 10)
			decoded[k] = v
		default:
			return nil, nil, false
		}
	}
	return append(out, '}'), decoded, true
}

// encodeIDs writes ids as json.Marshal does when every id is a plainString; else it reports
// false.
func encodeIDs(ids []string) ([]byte, bool) {
	n := 2
	for _, id := range ids {
		if !plainString(id) {
			return nil, false
		}
		n += len(id) + 3
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, id := range ids {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, '"')
		out = append(out, id...)
		out = append(out, '"')
	}
	return append(out, ']'), true
}

// plainString reports whether s is printable ASCII that json.Marshal writes as it is between
// quotes (no '"', '\', or '<', '>', '&', which it escapes for HTML).
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// exactInt reports whether v survives a JSON round trip as a float64 (|v| < 2^53).
func exactInt(v int64) bool {
	return v > -(1<<53) && v < 1<<53
}
