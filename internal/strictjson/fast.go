package strictjson

import "bytes"

// The fast path (issue 16). quickValid, Members and PlainString answer the common request
// (plain keys, short numbers, strings without a NUL escape) in one pass over the bytes,
// without encoding/json's tokens, reflection or allocations. They only ever decide "yes":
// anything they do not recognise as plainly valid is handed to the exact path
// (encoding/json), which accepts or refuses it and words the error, so the rules and the
// messages stay the exact path's.

// quickValid reports whether data, already valid UTF-8 and within its nesting limit (Scan),
// is one JSON value the exact path (checkValue) accepts: correct syntax, no duplicate key,
// no NUL escape, every number within float64's range. false means "not decided here", never
// "invalid": a key written with an escape, for one, is left to the exact path.
func quickValid(data []byte) bool {
	i, ok := quickValue(data, skipSpace(data, 0))
	return ok && skipSpace(data, i) == len(data)
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// quickValue checks the value at data[i] and returns the index just after it. Its recursion
// is bounded by the depth Scan allowed.
func quickValue(data []byte, i int) (int, bool) {
	if i >= len(data) {
		return i, false
	}
	switch c := data[i]; {
	case c == '{':
		return quickObject(data, i+1)
	case c == '[':
		i = skipSpace(data, i+1)
		if i < len(data) && data[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = quickValue(data, i); !ok {
				return i, false
			}
			i = skipSpace(data, i)
			if i >= len(data) {
				return i, false
			}
			if data[i] == ']' {
				return i + 1, true
			}
			if data[i] != ',' {
				return i, false
			}
			i = skipSpace(data, i+1)
		}
	case c == '"':
		end, _, ok := quickString(data, i)
		return end, ok
	case c == '-' || (c >= '0' && c <= '9'):
		return quickNumber(data, i)
	case c == 't':
		return literal(data, i, "true")
	case c == 'f':
		return literal(data, i, "false")
	case c == 'n':
		return literal(data, i, "null")
	}
	return i, false
}

func literal(data []byte, i int, word string) (int, bool) {
	if bytes.HasPrefix(data[i:], []byte(word)) {
		return i + len(word), true
	}
	return i, false
}

// quickKeys is how many keys quickObject compares pairwise, without allocating; a wider
// object's keys go into a map.
const quickKeys = 16

// quickObject checks an object whose '{' is just before data[i].
func quickObject(data []byte, i int) (int, bool) {
	var keys [quickKeys][]byte
	var wide map[string]struct{}
	n := 0
	i = skipSpace(data, i)
	if i < len(data) && data[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return i, false
		}
		end, escaped, ok := quickString(data, i)
		if !ok || escaped {
			return i, false // an escaped key is compared unescaped by the exact path
		}
		key := data[i+1 : end-1]
		switch {
		case wide != nil:
			if _, dup := wide[string(key)]; dup {
				return i, false
			}
			wide[string(key)] = struct{}{}
		default:
			for _, k := range keys[:n] {
				if bytes.Equal(k, key) {
					return i, false
				}
			}
			if n < quickKeys {
				keys[n] = key
				n++
				break
			}
			wide = make(map[string]struct{}, 2*quickKeys)
			for _, k := range keys {
				wide[string(k)] = struct{}{}
			}
			wide[string(key)] = struct{}{}
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return i, false
		}
		if i, ok = quickValue(data, skipSpace(data, i+1)); !ok {
			return i, false
		}
		i = skipSpace(data, i)
		if i >= len(data) {
			return i, false
		}
		if data[i] == '}' {
			return i + 1, true
		}
		if data[i] != ',' {
			return i, false
		}
		i = skipSpace(data, i+1)
	}
}

// quickString checks the string whose '"' is data[i] and returns the index after its closing
// quote, and whether it holds any escape. A control character, a malformed escape or a \u
// escape of NUL is not decided here.
func quickString(data []byte, i int) (end int, escaped, ok bool) {
	for i++; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			return i + 1, escaped, true
		case c < 0x20:
			return i, escaped, false
		case c == '\\':
			escaped = true
			if i+1 >= len(data) {
				return i, escaped, false
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				r, ok := hex4(data, i+2)
				if !ok || r == 0 {
					return i, escaped, false
				}
				i += 5
			default:
				return i, escaped, false
			}
		}
	}
	return i, escaped, false
}

// quickNumber checks the number at data[i] (JSON's grammar); one with an exponent or more
// than 15 digits is checked against float64's range (fitsFloat64).
func quickNumber(data []byte, i int) (int, bool) {
	start := i
	if data[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case digits() == 0:
		return i, false
	}
	exact := true
	if i < len(data) && data[i] == '.' {
		i++
		if digits() == 0 {
			return i, false
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if digits() == 0 {
			return i, false
		}
		exact = false
	}
	if (!exact || i-start > 16) && !fitsFloat64(string(data[start:i])) {
		return i, false
	}
	return i, true
}

// Members calls fn with each member of the JSON object data, in order: its name and its value's
// exact bytes. data must have passed Check (or Decode, ParseObject). ok is false, and fn is
// not called past that point, when data is not an object or a member's name holds an escape
// (the caller then uses encoding/json); err is fn's first error, which stops the walk.
func Members(data []byte, fn func(name string, value []byte) error) (ok bool, err error) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false, nil
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return true, nil
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return false, nil
		}
		end, escaped, sok := quickString(data, i)
		if !sok || escaped {
			return false, nil
		}
		name := data[i+1 : end-1]
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return false, nil
		}
		start := skipSpace(data, i+1)
		stop, vok := quickValue(data, start)
		if !vok {
			return false, nil
		}
		if err := fn(string(name), data[start:stop]); err != nil {
			return true, err
		}
		i = skipSpace(data, stop)
		if i >= len(data) {
			return false, nil
		}
		if data[i] == '}' {
			return true, nil
		}
		if data[i] != ',' {
			return false, nil
		}
		i = skipSpace(data, i+1)
	}
}

// PlainString returns the text of the JSON string value, which has no escape; ok is false for
// any other value (a string with an escape included: decode that one with encoding/json).
func PlainString(value []byte) (s string, ok bool) {
	if len(value) < 2 || value[0] != '"' || value[len(value)-1] != '"' || bytes.IndexByte(value, '\\') >= 0 {
		return "", false
	}
	return string(value[1 : len(value)-1]), true
}

// IsScalar reports whether the JSON value is a string, number, boolean or null: no object or
// array is inside it.
func IsScalar(value []byte) bool {
	return len(value) > 0 && value[0] != '{' && value[0] != '['
}

// plainScalar reports whether raw, a valid JSON value, is already canonical as it stands (see
// Object.Canonical): a number, a literal, or a string without escapes (which then holds no
// quote, backslash or control character), with no space around it.
func plainScalar(raw []byte) bool {
	if len(raw) == 0 || !IsScalar(raw) || skipSpace(raw, 0) != 0 {
		return false
	}
	switch last := raw[len(raw)-1]; {
	case last == ' ' || last == '\t' || last == '\n' || last == '\r':
		return false
	case raw[0] == '"':
		_, ok := PlainString(raw)
		return ok
	}
	return true
}
