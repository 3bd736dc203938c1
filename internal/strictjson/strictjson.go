// Package strictjson parses request JSON strictly: a duplicate key at any depth, trailing data
// or (for envelopes) an unknown member is an error, and numbers keep their exact text.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"agentmemory/internal/fault"
)

// Check verifies that data is valid UTF-8 holding one JSON value with no duplicate object key
// at any depth and no NUL character in any string. Errors are fault.Invalid with code
// "invalid_json"; their messages never repeat the caller's text.
func Check(data []byte) error {
	if !utf8.Valid(data) {
		return fault.New(fault.Invalid, "invalid_json", "the body is not valid UTF-8")
	}
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
	if str, ok := tok.(string); ok && strings.ContainsRune(str, 0) {
		return fault.New(fault.Invalid, "invalid_json", "strings must not contain NUL characters (in %s)", path)
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
			if strings.ContainsRune(key, 0) {
				return fault.New(fault.Invalid, "invalid_json", "keys must not contain NUL characters (in %s)", path)
			}
			if seen[key] {
				if !safeName(key) {
					return fault.New(fault.Invalid, "invalid_json", "a key appears twice in %s", path)
				}
				return fault.New(fault.Invalid, "invalid_json", "duplicate key %q in %s", key, path).With("member", path+"."+key)
			}
			seen[key] = true
			child := path + "." + key
			if !safeName(key) {
				child = path + ".?"
			}
			if err := checkValue(dec, child); err != nil {
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

// invalid turns a decoding error into a fault whose message never repeats the caller's text:
// only the byte offset of a syntax error is given.
func invalid(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fault.New(fault.Invalid, "invalid_json", "the JSON ends too early")
	}
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fault.New(fault.Invalid, "invalid_json", "malformed JSON at byte %d", syn.Offset)
	}
	return fault.New(fault.Invalid, "invalid_json", "malformed JSON")
}

var namePattern = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$.:-]{0,63}$`)

// safeName reports whether a member name may be repeated in an error message: a short
// identifier, never free text that could carry personal data.
func safeName(name string) bool { return namePattern.MatchString(name) }

// unknownMember is the fault for a member v's type does not declare.
func unknownMember(path, name string) error {
	if !safeName(name) {
		return fault.New(fault.Invalid, "unknown_member", "an unknown member in %s", path)
	}
	member := strings.TrimPrefix(path+"."+name, "$.")
	return fault.New(fault.Invalid, "unknown_member", "unknown member %q", member).With("member", member)
}

// Decode checks data (see Check), then decodes it into v refusing unknown members, matched
// exactly (encoding/json alone would take "IF_VERSION" for "if_version"): an unknown member is
// fault.Invalid "unknown_member" naming it when its name is a plain identifier; a wrong type
// is "invalid_member".
func Decode(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return fault.New(fault.Invalid, "invalid_json", "the request body is empty")
	}
	if err := Check(data); err != nil {
		return err
	}
	if err := exactMembers(data, reflect.TypeOf(v), "$"); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		msg := err.Error()
		if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
			return unknownMember("$", strings.Trim(name, `"`))
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			member := te.Field
			if member == "" {
				return fault.New(fault.Invalid, "invalid_json", "the body must be a JSON %s", "object")
			}
			return fault.New(fault.Invalid, "invalid_member", "member %q must be a JSON %s", member, jsonKind(te.Type.Kind().String())).With("member", member)
		}
		var pe *time.ParseError
		if errors.As(err, &pe) {
			return fault.New(fault.Invalid, "invalid_member", "times are RFC 3339 strings such as 2026-12-31T23:59:59Z")
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

var rawMessageType = reflect.TypeOf(json.RawMessage(nil))

// exactMembers walks data along t and refuses any object member whose name is not exactly a
// JSON name of t's struct fields (embedded structs count as their fields). Values kept raw
// (json.RawMessage, interfaces) and maps' keys are not checked. Type mismatches are left to
// the decoder.
func exactMembers(data []byte, t reflect.Type, path string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t == rawMessageType {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		if t.PkgPath() == "time" {
			return nil
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(data, &obj) != nil {
			return nil
		}
		fields := map[string]reflect.Type{}
		structFields(t, fields)
		for name, raw := range obj {
			ft, ok := fields[name]
			if !ok {
				return unknownMember(path, name)
			}
			if err := exactMembers(raw, ft, path+"."+name); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		var items []json.RawMessage
		if json.Unmarshal(data, &items) != nil {
			return nil
		}
		for i, raw := range items {
			if err := exactMembers(raw, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		var obj map[string]json.RawMessage
		if json.Unmarshal(data, &obj) != nil {
			return nil
		}
		for name, raw := range obj {
			child := path + "." + name
			if !safeName(name) {
				child = path + ".?"
			}
			if err := exactMembers(raw, t.Elem(), child); err != nil {
				return err
			}
		}
	}
	return nil
}

// structFields adds the JSON names of t's exported fields to out, flattening embedded structs
// without a JSON name the way encoding/json does.
func structFields(t reflect.Type, out map[string]reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				structFields(ft, out)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
}
