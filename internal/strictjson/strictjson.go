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
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentmemory/agentmemory/internal/fault"
)

// Check is CheckDepth with MaxEnvelopeDepth.
func Check(data []byte) error { return CheckDepth(data, MaxEnvelopeDepth) }

// CheckDepth verifies that data is valid UTF-8 holding one JSON value nested at most maxDepth
// levels (see Scan; deeper is "json_too_deep"), with no duplicate object key at any depth, no
// NUL character in any string, no lone UTF-16 surrogate escape and no number outside float64's
// range ("invalid_number": 1e400, or 1e-400 whose non-zero digits underflow to 0). Other
// errors are fault.Invalid with code "invalid_json"; messages never repeat the caller's text.
// Time and memory are linear in len(data): member paths are built only for an error.
func CheckDepth(data []byte, maxDepth int) error {
	if !utf8.Valid(data) {
		return fault.New(fault.Invalid, "invalid_json", "the body is not valid UTF-8")
	}
	if err := Scan(data, maxDepth); err != nil {
		return err
	}
	if quickValid(data) {
		return nil // the common case, decided without encoding/json (fast.go)
	}
	return exactCheck(data)
}

// exactCheck is CheckDepth's check with encoding/json, on data already valid UTF-8 and within
// its nesting limit: it decides every case and words every error.
func exactCheck(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var path []segment
	if err := checkValue(dec, &path); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fault.New(fault.Invalid, "invalid_json", "unexpected data after the JSON value")
	}
	return nil
}

// segment is one step of a member path: an object member (key) or an array index.
type segment struct {
	key   string
	index int
	isKey bool
}

// pathString renders the path for an error message: $.a.b[3], with "?" for a member name that
// is not a plain identifier (never free text).
func pathString(path []segment) string {
	var b strings.Builder
	b.WriteByte('$')
	for _, s := range path {
		if !s.isKey {
			fmt.Fprintf(&b, "[%d]", s.index)
			continue
		}
		b.WriteByte('.')
		if safeName(s.key) {
			b.WriteString(s.key)
		} else {
			b.WriteByte('?')
		}
	}
	return b.String()
}

// checkValue checks the next value of dec. Its recursion is bounded by the depth Scan allowed;
// path is a shared stack, so no level allocates a path string.
func checkValue(dec *json.Decoder, path *[]segment) error {
	tok, err := dec.Token()
	if err != nil {
		return invalid(err)
	}
	switch v := tok.(type) {
	case string:
		if strings.ContainsRune(v, 0) {
			return fault.New(fault.Invalid, "invalid_json", "strings must not contain NUL characters (in %s)", pathString(*path))
		}
	case json.Number:
		if !fitsFloat64(string(v)) {
			p := strings.TrimPrefix(pathString(*path), "$.")
			return fault.New(fault.Invalid, "invalid_number", "a number in %s does not fit a 64-bit float (magnitude between about 2.2e-308 and 1.8e308, or 0)", pathString(*path)).With("member", p)
		}
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
				return fault.New(fault.Invalid, "invalid_json", "keys must not contain NUL characters (in %s)", pathString(*path))
			}
			if seen[key] {
				at := pathString(*path)
				if !safeName(key) {
					return fault.New(fault.Invalid, "invalid_json", "a key appears twice in %s", at)
				}
				return fault.New(fault.Invalid, "invalid_json", "duplicate key %q in %s", key, at).With("member", at+"."+key)
			}
			seen[key] = true
			*path = append(*path, segment{key: key, isKey: true})
			if err := checkValue(dec, path); err != nil {
				return err
			}
			*path = (*path)[:len(*path)-1]
		}
		if _, err := dec.Token(); err != nil {
			return invalid(err)
		}
	case json.Delim('['):
		*path = append(*path, segment{})
		for i := 0; dec.More(); i++ {
			(*path)[len(*path)-1].index = i
			if err := checkValue(dec, path); err != nil {
				return err
			}
		}
		*path = (*path)[:len(*path)-1]
		if _, err := dec.Token(); err != nil {
			return invalid(err)
		}
	}
	return nil
}

// fitsFloat64 reports whether the JSON number text lies within float64's range: not ±Inf
// after rounding, and not rounded to 0 when its digits are not all zero (underflow).
func fitsFloat64(text string) bool {
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return false
	}
	if f != 0 {
		return true
	}
	mantissa, _, _ := strings.Cut(strings.ToLower(text), "e")
	return strings.Trim(mantissa, "-+0.") == ""
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
//
// The nesting limit is EnvelopeDepth of v's type: MaxEnvelopeDepth when it can hold a
// free-form value, MaxPlainDepth otherwise.
func Decode(data []byte, v any) error { return DecodeDepth(data, v, EnvelopeDepth(v)) }

var depthCache sync.Map // reflect.Type -> int

// EnvelopeDepth is the nesting limit for a request decoded into v: MaxEnvelopeDepth when v's
// type can hold a free-form JSON value at any depth (json.RawMessage, an interface, a map of
// either), MaxPlainDepth otherwise.
func EnvelopeDepth(v any) int {
	t := reflect.TypeOf(v)
	if d, ok := depthCache.Load(t); ok {
		return d.(int)
	}
	d := MaxPlainDepth
	if freeForm(t, map[reflect.Type]bool{}) {
		d = MaxEnvelopeDepth
	}
	depthCache.Store(t, d)
	return d
}

// freeForm reports whether t can hold a JSON value of any shape somewhere inside it.
func freeForm(t reflect.Type, seen map[reflect.Type]bool) bool {
	if t == nil || seen[t] {
		return false
	}
	seen[t] = true
	if t == rawMessageType {
		return true
	}
	switch t.Kind() {
	case reflect.Interface:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return freeForm(t.Elem(), seen)
	case reflect.Map:
		return freeForm(t.Elem(), seen)
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if f := t.Field(i); (f.IsExported() || f.Anonymous) && f.Tag.Get("json") != "-" && freeForm(f.Type, seen) {
				return true
			}
		}
	}
	return false
}

// QuickDecoder is a request type that decodes its common shape itself, without reflection
// (issue 16: the working-memory routes). Decode calls DecodeQuick on data that passed Check;
// DecodeQuick returns true when it decoded data exactly as Decode would have (every member
// known and of its type), and false, leaving the value as it was, for anything else, which
// Decode then decodes or refuses itself. Members and PlainString help write it.
type QuickDecoder interface {
	DecodeQuick(data []byte) bool
}

// DecodeDepth is Decode with a nesting limit of maxDepth levels (see Scan).
func DecodeDepth(data []byte, v any, maxDepth int) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return fault.New(fault.Invalid, "invalid_json", "the request body is empty")
	}
	if err := CheckDepth(data, maxDepth); err != nil {
		return err
	}
	if q, ok := v.(QuickDecoder); ok && q.DecodeQuick(data) {
		return nil
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

// ParseObject parses data (already Checked or not) as a JSON object nested at most
// MaxBodyDepth levels (the object itself is level 1). Values keep their text.
func ParseObject(data []byte) (Object, error) {
	if err := CheckDepth(data, MaxBodyDepth); err != nil {
		return nil, err
	}
	o := Object{}
	if ok, _ := Members(data, func(name string, value []byte) error {
		o[name] = value
		return nil
	}); ok {
		return o, nil // values share data's bytes
	}
	o = nil
	if err := json.Unmarshal(data, &o); err != nil || o == nil {
		return nil, fault.New(fault.Invalid, "invalid_json", "expected a JSON object")
	}
	return o, nil
}

// Canonical encodes o with its members sorted by key and every value re-encoded canonically:
// no insignificant whitespace, numbers keep their text, nested members keep their order, and
// every string (key or value) is written the one way whatever the client's escaping: raw UTF-8,
// with only '"', '\\' and control characters escaped (\n \r \t or \u00XX), no HTML
// escaping. So "é" and "\u00e9" give the same bytes, and the working-memory cap (WM-8) counts
// what is stored, not how the client escaped it. The same object always gives the same bytes.
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
		writeString(&b, k)
		b.WriteByte(':')
		if plainScalar(o[k]) {
			b.Write(o[k]) // already canonical
			continue
		}
		mark := b.Len()
		dec := json.NewDecoder(bytes.NewReader(o[k]))
		dec.UseNumber()
		if err := canonicalValue(&b, dec); err != nil {
			b.Truncate(mark)
			b.Write(o[k])
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}

// CanonicalValue returns raw in canonical form (see Object.Canonical), or raw itself when it
// is not valid JSON.
func CanonicalValue(raw json.RawMessage) json.RawMessage {
	if plainScalar(raw) {
		return raw
	}
	var b bytes.Buffer
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := canonicalValue(&b, dec); err != nil {
		return raw
	}
	return b.Bytes()
}

// Join is Canonical for an object whose values are already canonical (CanonicalValue, or
// members of a Canonical object read back): members sorted by key, keys written canonically,
// values as they are. It gives Canonical's bytes without parsing the values again.
func (o Object) Join() []byte {
	keys := make([]string, 0, len(o))
	size := 2
	for k, v := range o {
		keys = append(keys, k)
		size += len(k) + len(v) + 4
	}
	sort.Strings(keys)
	var b bytes.Buffer
	b.Grow(size)
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(&b, k)
		b.WriteByte(':')
		b.Write(o[k])
	}
	b.WriteByte('}')
	return b.Bytes()
}

// canonicalValue writes the next value of dec canonically (see Object.Canonical). Its
// recursion is bounded by the depth the value was checked for.
func canonicalValue(b *bytes.Buffer, dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch v := tok.(type) {
	case json.Delim:
		open, closing := byte(v), byte('}')
		if v == '[' {
			closing = ']'
		}
		b.WriteByte(open)
		for first := true; dec.More(); first = false {
			if !first {
				b.WriteByte(',')
			}
			if open == '{' {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				writeString(b, kt.(string))
				b.WriteByte(':')
			}
			if err := canonicalValue(b, dec); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return err
		}
		b.WriteByte(closing)
	case string:
		writeString(b, v)
	case json.Number:
		b.WriteString(string(v))
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case nil:
		b.WriteString("null")
	}
	return nil
}

// writeString writes s as a JSON string: raw UTF-8, escaping only '"', '\\' and control
// characters.
func writeString(b *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xF])
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
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
		fields := fieldsOf(t)
		for _, name := range sortedNames(obj) { // the same request names the same member
			raw := obj[name]
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
		for _, name := range sortedNames(obj) {
			raw := obj[name]
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

// sortedNames returns obj's member names in byte order.
func sortedNames(obj map[string]json.RawMessage) []string {
	names := make([]string, 0, len(obj))
	for name := range obj {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

var fieldsCache sync.Map // reflect.Type -> map[string]reflect.Type, read only once stored

// fieldsOf is structFields of the struct type t, computed once per type.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	if f, ok := fieldsCache.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	fields := map[string]reflect.Type{}
	structFields(t, fields)
	fieldsCache.Store(t, fields)
	return fields
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
