package sdk

import (
	"encoding/json"
	"sort"
	"strconv"
	"time"
)

// The working-memory calls encode their requests and decode the service's answers of the
// common shape directly, without encoding/json's reflection: a write or read costs the agent's
// process about half the CPU it did (issue 16). Every other shape goes through encoding/json,
// with the same result.

// encoded is a request body already encoded as JSON: do sends it as it is.
type encoded []byte

// quickDecoder is an answer type that decodes its common shape itself. decodeQuick is given a
// complete answer that json.Valid accepts; it returns false, leaving the value unchanged, on
// any other shape, and do then decodes the answer with encoding/json.
type quickDecoder interface {
	decodeQuick(data []byte) bool
}

// encodeWrite returns json.Marshal(req)'s bytes for a request whose body values are each the
// output of json.Marshal (compact, HTML-escaped), as Put builds them.
func encodeWrite(req writeRequest) encoded {
	size := 96 + len(req.Scope.Kind) + len(req.Scope.ID) + len(req.Agent) + len(req.Mode) + len(req.Subject)
	names := make([]string, 0, len(req.Body))
	for name, v := range req.Body {
		names = append(names, name)
		size += len(name) + len(v) + 4
	}
	sort.Strings(names)
	b := make([]byte, 0, size)
	b = append(b, `{"scope":`...)
	b = appendScope(b, req.Scope)
	if req.Agent != "" {
		b = append(b, `,"agent":`...)
		b = appendString(b, req.Agent)
	}
	b = append(b, `,"mode":`...)
	b = appendString(b, req.Mode)
	if req.IfVersion != nil {
		b = append(b, `,"if_version":`...)
		b = strconv.AppendInt(b, *req.IfVersion, 10)
	}
	b = append(b, `,"body":`...)
	if req.Body == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '{')
		for i, name := range names {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, name)
			b = append(b, ':')
			b = append(b, req.Body[name]...)
		}
		b = append(b, '}')
	}
	if req.Subject != "" {
		b = append(b, `,"subject":`...)
		b = appendString(b, req.Subject)
	}
	if req.Lease != nil {
		b = append(b, `,"lease":{"lease_id":`...)
		b = appendString(b, req.Lease.ID)
		b = append(b, `,"token":`...)
		b = strconv.AppendInt(b, req.Lease.Token, 10)
		b = append(b, '}')
	}
	return append(b, '}')
}

// encodeRead returns json.Marshal's bytes for the read request {"agent", "scope"}.
func encodeRead(scope Scope, agent string) encoded {
	b := make([]byte, 0, 48+len(agent)+len(scope.Kind)+len(scope.ID))
	b = append(b, `{"agent":`...)
	b = appendString(b, agent)
	b = append(b, `,"scope":`...)
	b = appendScope(b, scope)
	return append(b, '}')
}

func appendScope(b []byte, s Scope) []byte {
	b = append(b, `{"kind":`...)
	b = appendString(b, s.Kind)
	b = append(b, `,"id":`...)
	b = appendString(b, s.ID)
	return append(b, '}')
}

// appendString appends s as json.Marshal encodes it: quoted as it is when it is plain
// (printable ASCII without a quote, a backslash or an HTML-sensitive character), else by
// json.Marshal itself.
func appendString(b []byte, s string) []byte {
	if plain(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	q, _ := json.Marshal(s) // a string always encodes
	return append(b, q...)
}

// plain reports whether s is printable ASCII without '"', '\\', '<', '>' or '&': the strings
// encoding/json writes between quotes unchanged, and reads back unchanged.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// decodeQuick decodes {"stored", "version", "reason"}: stored a boolean, version an integer,
// reason null or a plain string. Any other member or value is left to encoding/json.
func (r *WriteResult) decodeQuick(data []byte) bool {
	var out WriteResult
	ok := members(data, func(name string, v []byte) bool {
		switch name {
		case "stored":
			switch string(v) {
			case "true":
				out.Stored = true
			case "false":
				out.Stored = false
			default:
				return false
			}
			return true
		case "version":
			n, err := strconv.ParseInt(string(v), 10, 64)
			out.Version = n
			return err == nil
		case "reason":
			if string(v) == "null" {
				out.Reason = nil
				return true
			}
			s, ok := plainString(v)
			out.Reason = &s
			return ok
		}
		return false
	})
	if ok {
		*r = out
	}
	return ok
}

// decodeQuick decodes {"body", "version", "updated_at"}: body an object whose member names
// are plain strings (its values kept as they are, as encoding/json keeps a RawMessage),
// version an integer, updated_at null or an RFC 3339 time. Any other shape is left to
// encoding/json.
func (s *State) decodeQuick(data []byte) bool {
	var out State
	ok := members(data, func(name string, v []byte) bool {
		switch name {
		case "body":
			if string(v) == "null" {
				out.Body = nil
				return true
			}
			body := map[string]json.RawMessage{}
			if !members(v, func(name string, v []byte) bool {
				body[name] = json.RawMessage(v[:len(v):len(v)]) // an append copies, never overwrites the answer
				return true
			}) {
				return false
			}
			out.Body = body
			return true
		case "version":
			n, err := strconv.ParseInt(string(v), 10, 64)
			out.Version = n
			return err == nil
		case "updated_at":
			if string(v) == "null" {
				out.UpdatedAt = nil
				return true
			}
			var t time.Time
			if _, ok := plainString(v); !ok || t.UnmarshalJSON(v) != nil {
				return false
			}
			out.UpdatedAt = &t
			return true
		}
		return false
	})
	if ok {
		*s = out
	}
	return ok
}

// members walks the object data, which must be valid JSON (json.Valid), calling member with
// each member's name and value (its bytes, without the surrounding whitespace), and reports
// whether data is an object whose names are all plain strings and member accepted every one.
func members(data []byte, member func(name string, value []byte) bool) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return skipSpace(data, i+1) == len(data)
	}
	for i < len(data) {
		if data[i] != '"' {
			return false
		}
		end := stringEnd(data, i)
		name, ok := plainString(data[i:end])
		if !ok {
			return false
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		i = skipSpace(data, i+1)
		vend := valueEnd(data, i)
		if !member(name, data[i:vend]) {
			return false
		}
		i = skipSpace(data, vend)
		if i >= len(data) {
			return false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return skipSpace(data, i+1) == len(data)
		default:
			return false
		}
	}
	return false
}

// plainString returns the text of the JSON string v when it has no escape and is plain
// (see plain).
func plainString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	s := string(v[1 : len(v)-1])
	return s, plain(s)
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string starting at data[i] (a quote) in valid
// JSON.
func stringEnd(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(data)
}

// valueEnd returns the index just past the value starting at data[i] in valid JSON.
func valueEnd(data []byte, i int) int {
	if i >= len(data) {
		return i
	}
	switch data[i] {
	case '"':
		return stringEnd(data, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				j = stringEnd(data, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(data)
	}
	j := i
	for j < len(data) && data[j] != ',' && data[j] != '}' && data[j] != ']' && data[j] != ' ' && data[j] != '\t' && data[j] != '\n' && data[j] != '\r' {
		j++
	}
	return j
}
