package sdk

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// The quick encoders write exactly json.Marshal's bytes, for plain strings and for the ones
// json.Marshal escapes (HTML characters, quotes, non-ASCII, control characters).
func TestEncodeWriteAndReadAsMarshal(t *testing.T) {
	v := int64(7)
	zero := int64(0)
	raw := func(x any) json.RawMessage {
		b, err := json.Marshal(x)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	writes := []writeRequest{
		{Scope: Conversation("c-1"), Mode: "merge_by_key", Body: map[string]json.RawMessage{"count": raw(1), "step": raw("a")}},
		{Scope: Subject("email:ana@example.com"), Agent: "bot", Mode: "cas", IfVersion: &v, Body: map[string]json.RawMessage{}, Subject: "email:ana@example.com"},
		{Scope: Object("order", "shop", "<1&2>"), Mode: "cas", IfVersion: &zero, Body: map[string]json.RawMessage{"n\"ote": raw("x<y"), "é": raw(map[string]any{"a": []any{1, "b"}}), "gone": raw(Delete)}},
		{Scope: Task("tab\there"), Agent: "ägent", Mode: "merge_by_key", Body: nil},
	}
	for _, w := range writes {
		want, err := json.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		if got := encodeWrite(w); !bytes.Equal(got, want) {
			t.Errorf("encodeWrite:\n got %s\nwant %s", got, want)
		}
	}
	reads := []struct {
		scope Scope
		agent string
	}{
		{Conversation("c-1"), ""},
		{Object("order", "shop", "\"1\""), "bot<1>"},
	}
	for _, r := range reads {
		want, err := json.Marshal(map[string]any{"scope": r.scope, "agent": r.agent})
		if err != nil {
			t.Fatal(err)
		}
		if got := encodeRead(r.scope, r.agent); !bytes.Equal(got, want) {
			t.Errorf("encodeRead:\n got %s\nwant %s", got, want)
		}
	}
}

// decodeQuick takes the service's common answers and decodes them as encoding/json does.
func TestDecodeQuickAsEncodingJSON(t *testing.T) {
	results := []string{
		`{"stored":true,"version":12,"reason":null}` + "\n",
		` { "stored" : false , "version" : 0 , "reason" : "over_cap" } `,
		`{"version":3,"stored":true}`,
	}
	for _, answer := range results {
		var quick, want WriteResult
		if !quick.decodeQuick([]byte(answer)) {
			t.Fatalf("%s: not decoded", answer)
		}
		if err := json.Unmarshal([]byte(answer), &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(quick, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", answer, quick, want)
		}
	}
	states := []string{
		`{"body":{"count":5,"step":"merge"},"version":7,"updated_at":"2026-12-02T14:15:14.123456Z"}` + "\n",
		`{"body":{},"version":0,"updated_at":null}`,
		`{"body":{"a":{"b":[1,{"c":"]}\"{"}]},"s":"x\"y","n":-1.5e3,"t":true,"z":null},"version":9,"updated_at":"2026-12-02T14:15:14Z"}`,
		`{"body":{"a":1,"a":2},"version":1,"updated_at":null}`,
		`{"body":null,"version":1,"updated_at":"2026-12-02T14:15:14+02:00"}`,
	}
	for _, answer := range states {
		var quick, want State
		if !quick.decodeQuick([]byte(answer)) {
			t.Fatalf("%s: not decoded", answer)
		}
		dec := json.NewDecoder(bytes.NewReader([]byte(answer)))
		dec.UseNumber()
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(quick, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", answer, quick, want)
		}
	}
}

// Any other shape is refused, leaving the value unchanged: do then decodes it with
// encoding/json.
func TestDecodeQuickRefusesOtherShapes(t *testing.T) {
	results := []string{
		`{"stored":false,"version":4,"reason":"not_declared_field","fields":["a"]}`,
		`{"stored":true,"version":1.5,"reason":null}`,
		`{"Stored":true,"version":1,"reason":null}`,
		`{"stored":true,"version":2,"reason":"a\u0041"}`,
		`{"stored":"yes","version":2,"reason":null}`,
		`[{"stored":true}]`,
	}
	for _, answer := range results {
		r := WriteResult{MaxBytes: -1}
		if r.decodeQuick([]byte(answer)) || r.MaxBytes != -1 {
			t.Errorf("%s: decoded %+v", answer, r)
		}
	}
	states := []string{
		`{"body":{"\u00e9":1},"version":1,"updated_at":null}`,
		`{"body":[],"version":1,"updated_at":null}`,
		`{"body":{},"version":1,"updated_at":"yesterday"}`,
		`{"body":{},"version":1,"updated_at":null,"extra":1}`,
	}
	for _, answer := range states {
		st := State{Version: -1}
		if st.decodeQuick([]byte(answer)) || st.Version != -1 {
			t.Errorf("%s: decoded %+v", answer, st)
		}
	}
}

// A value taken from the answer cannot grow into the bytes after it.
func TestDecodeQuickValuesDoNotAlias(t *testing.T) {
	answer := []byte(`{"body":{"a":1,"b":2},"version":1,"updated_at":null}`)
	var st State
	if !st.decodeQuick(answer) {
		t.Fatal("not decoded")
	}
	_ = append(st.Body["a"], '9')
	if string(st.Body["b"]) != "2" || !json.Valid(answer) {
		t.Fatalf("an append to one value changed another: %s", answer)
	}
}
