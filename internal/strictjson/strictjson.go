// Package strictjson parses request JSON strictly: a duplicate key at any depth, trailing data
// or (for envelopes) an unknown member is an error, and numbers keep their exact text.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"agentmemory/internal/fault"
)

// Check verifies that data is one JSON value with no duplicate object key at any depth.
// Errors are fault.Invalid with code "invalid_json".
func Check(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := checkValue(dec, "$"); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fault.New(fault.Invalid, "invalid_json", "unexpected data after the JSON value")
	}
	return nil
}

func checkValue(dec *json.Decoder, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return invalid(err)
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return invalid(err)
			}
			key := kt.(string)
			if seen[key] {
				return fault.New(fault.Invalid, "invalid_json", "duplicate key %q in %s", key, path).With("member", path+"."+key)
			}
			seen[key] = true
			if err := checkValue(dec, path+"."+key); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return invalid(err)
		}
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if err := checkValue(dec, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return invalid(err)
		}
	}
	return nil
}

func invalid(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fault.New(fault.Invalid, "invalid_json", "the JSON ends too early")
	}
	return fault.New(fault.Invalid, "invalid_json", "malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// Decode checks data (see Check), then decodes it into v refusing unknown members: an unknown
// member is fault.Invalid "unknown_member" naming it; a wrong type is "invalid_member".
func Decode(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return fault.New(fault.Invalid, "invalid_json", "the request body is empty")
	}
	if err := Check(data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		msg := err.Error()
		if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
			name = strings.Trim(name, `"`)
			return fault.New(fault.Invalid, "unknown_member", "unknown member %q", name).With("member", name)
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			member := te.Field
			if member == "" {
				return fault.New(fault.Invalid, "invalid_json", "the body must be a JSON %s", "object")
			}
			return fault.New(fault.Invalid, "invalid_member", "member %q must be a JSON %s", member, jsonKind(te.Type.Kind().String())).With("member", member)
		}
		return invalid(err)
	}
	return nil
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "slice", "array":
		return "array"
	case "map", "struct", "ptr":
		return "object"
	default:
		return "number"
	}
}

// Object is a JSON object whose member values keep their exact text.
type Object map[string]json.RawMessage

// ParseObject parses data (already Checked or not) as a JSON object. Values keep their text.
func ParseObject(data []byte) (Object, error) {
	if err := Check(data); err != nil {
		return nil, err
	}
	var o Object
	if err := json.Unmarshal(data, &o); err != nil || o == nil {
		return nil, fault.New(fault.Invalid, "invalid_json", "expected a JSON object")
	}
	return o, nil
}

// Canonical encodes o with its members sorted by key and every value compacted (numbers keep
// their text). The same object always gives the same bytes.
func (o Object) Canonical() []byte {
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		if err := json.Compact(&b, o[k]); err != nil {
			b.Write(o[k])
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}
