package state

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/agentmemory/agentmemory/internal/strictjson"
)

// errNotQuick stops a quick decode that meets anything but the plain shape (strictjson.Members).
var errNotQuick = errors.New("state: not the plain shape")

// DecodeQuick decodes the plain shape of a write (strictjson.QuickDecoder): the members of
// WriteRequest only, strings without escapes, if_version an integer or null, scope an object of
// kind and id. Anything else returns false and leaves r unchanged. body keeps data's bytes.
func (r *WriteRequest) DecodeQuick(data []byte) bool {
	var out WriteRequest
	if !quickMembers(data, func(name string, v []byte) (ok bool) {
		switch name {
		case "scope":
			out.Scope, ok = quickScope(v)
		case "agent":
			out.Agent, ok = quickString(v)
		case "mode":
			out.Mode, ok = quickString(v)
		case "subject":
			out.Subject, ok = quickString(v)
		case "if_version":
			out.IfVersion, ok = quickInt(v)
		case "body":
			out.Body, ok = json.RawMessage(v), true
		}
		return ok
	}) {
		return false
	}
	*r = out
	return true
}

// DecodeQuick decodes the plain shape of a read (see WriteRequest.DecodeQuick).
func (r *ReadRequest) DecodeQuick(data []byte) bool {
	var out ReadRequest
	if !quickMembers(data, func(name string, v []byte) (ok bool) {
		switch name {
		case "scope":
			out.Scope, ok = quickScope(v)
		case "agent":
			out.Agent, ok = quickString(v)
		}
		return ok
	}) {
		return false
	}
	*r = out
	return true
}

// quickScope is a scope member: null (nil) or {"kind", "id"} of plain strings.
func quickScope(v []byte) (*Scope, bool) {
	if string(v) == "null" {
		return nil, true
	}
	var s Scope
	ok := quickMembers(v, func(name string, v []byte) (ok bool) {
		switch name {
		case "kind":
			s.Kind, ok = quickString(v)
		case "id":
			s.ID, ok = quickString(v)
		}
		return ok
	})
	return &s, ok
}

// quickMembers walks the plain object data (strictjson.Members) and reports whether it is one
// and member accepted every name and value; an unknown name is member's to refuse.
func quickMembers(data []byte, member func(name string, v []byte) bool) bool {
	ok, err := strictjson.Members(data, func(name string, v []byte) error {
		if !member(name, v) {
			return errNotQuick
		}
		return nil
	})
	return ok && err == nil
}

// quickString is a string member without escapes, or null (which encoding/json leaves "").
func quickString(v []byte) (string, bool) {
	if string(v) == "null" {
		return "", true
	}
	return strictjson.PlainString(v)
}

// quickInt is an *int64 member: an integer that fits int64 (encoding/json's own test), or null.
func quickInt(v []byte) (*int64, bool) {
	if string(v) == "null" {
		return nil, true
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return nil, false
	}
	return &n, true
}
