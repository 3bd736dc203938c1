package sdk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// Body is a working-memory state's body as read: each declared field's name mapped to its
// JSON value, exactly as the service answered it (a pii field arrives masked, e.g. "send to
// <email>"). It is a map[string]json.RawMessage, so indexing and ranging work as on one and
// a map[string]json.RawMessage assigns to it; its methods give readable forms:
//
//	fmt.Println(cur.Body)                 // {"offer":"familia-plus","step":"sizes"}
//	var step string
//	ok, err := cur.Body.Field("step", &step) // ok false: the field is absent
//	var s struct{ Step string `json:"step"` }
//	err = cur.Body.Decode(&s)             // the whole body into a struct or map
type Body map[string]json.RawMessage

// String returns the body as one compact JSON object, members in name order; a nil body is
// "{}". A value that is not valid JSON (a Body built by hand) is written as a JSON string of
// its bytes, so the result is always valid JSON.
func (b Body) String() string {
	names := make([]string, 0, len(b))
	for name := range b {
		names = append(names, name)
	}
	sort.Strings(names)
	var out bytes.Buffer
	out.WriteByte('{')
	for i, name := range names {
		if i > 0 {
			out.WriteByte(',')
		}
		key, _ := json.Marshal(name) // a string always marshals
		out.Write(key)
		out.WriteByte(':')
		out.Write(compactValue(b[name]))
	}
	out.WriteByte('}')
	return out.String()
}

// compactValue returns v without insignificant white space, or v's bytes as a JSON string
// when v is not valid JSON.
func compactValue(v json.RawMessage) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, v); err != nil || len(v) == 0 {
		s, _ := json.Marshal(string(v)) // a string always marshals
		return s
	}
	return buf.Bytes()
}

// Field decodes the value of field name into v (a pointer, as for json.Unmarshal). It reports
// false with a nil error when the body has no such field; a value that does not decode into
// v is an error naming the field. A JSON null decodes as json.Unmarshal decodes it (v is
// left unchanged for most types) and reports true.
func (b Body) Field(name string, v any) (bool, error) {
	raw, ok := b[name]
	if !ok {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return true, fmt.Errorf("sdk: field %q: %w", name, err)
	}
	return true, nil
}

// Decode decodes the whole body into v (a pointer to a struct or a map, as for
// json.Unmarshal); a nil body decodes as {}.
func (b Body) Decode(v any) error {
	if err := json.Unmarshal([]byte(b.String()), v); err != nil {
		return fmt.Errorf("sdk: decode body: %w", err)
	}
	return nil
}
