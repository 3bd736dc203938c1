package sdk

import (
	"encoding/json"
	"fmt"
	"testing"
)

// A state's body prints as JSON, not as byte slices (issue 27): fmt's %v and Println use
// Body.String, also inside a State.
func TestBodyPrintsAsJSON(t *testing.T) {
	var st State
	if err := json.Unmarshal([]byte(`{"body":{"step":"sizes","offer":"familia-plus","n":{ "a" : [1, 2] }},"version":3,"updated_at":null}`), &st); err != nil {
		t.Fatal(err)
	}
	want := `{"n":{"a":[1,2]},"offer":"familia-plus","step":"sizes"}`
	if got := fmt.Sprint(st.Body); got != want {
		t.Fatalf("fmt.Sprint(body) = %s, want %s", got, want)
	}
	if got := fmt.Sprintf("%v", st); got != "{"+want+" 3 <nil> true}" && got != "{"+want+" 3 <nil> false}" {
		t.Fatalf("fmt.Sprintf(%%v, state) = %s, want the body as JSON inside", got)
	}
	if got := (Body(nil)).String(); got != "{}" {
		t.Fatalf("nil body = %s, want {}", got)
	}
	bad := Body{"x": json.RawMessage("not json")}
	if got := bad.String(); got != `{"x":"not json"}` || !json.Valid([]byte(got)) {
		t.Fatalf("invalid value printed as %s, want it quoted", got)
	}
	// The quick decoder (the common answer shape) gives the same Body.
	var quick State
	if !quick.decodeQuick([]byte(`{"body":{"step":"sizes"},"version":1,"updated_at":null}`)) {
		t.Fatal("decodeQuick refused the common shape")
	}
	if got := quick.Body.String(); got != `{"step":"sizes"}` {
		t.Fatalf("quick body = %s", got)
	}
}

// Field and Decode read the body into Go values; an absent field is (false, nil) and a wrong
// type an error naming the field.
func TestBodyFieldAndDecode(t *testing.T) {
	b := Body{"step": json.RawMessage(`"sizes"`), "count": json.RawMessage(`2`)}
	var step string
	ok, err := b.Field("step", &step)
	if err != nil || !ok || step != "sizes" {
		t.Fatalf("Field(step) = %v, %v, %q; want true, nil, sizes", ok, err, step)
	}
	var missing string
	if ok, err := b.Field("offer", &missing); ok || err != nil {
		t.Fatalf("Field(offer) = %v, %v; want false, nil", ok, err)
	}
	var n string
	if ok, err := b.Field("count", &n); !ok || err == nil {
		t.Fatalf("Field(count) into a string = %v, %v; want true and an error", ok, err)
	}
	var s struct {
		Step  string `json:"step"`
		Count int    `json:"count"`
	}
	if err := b.Decode(&s); err != nil || s.Step != "sizes" || s.Count != 2 {
		t.Fatalf("Decode = %+v, %v", s, err)
	}
	var m map[string]any
	if err := Body(nil).Decode(&m); err != nil || len(m) != 0 {
		t.Fatalf("nil Decode = %v, %v; want an empty map", m, err)
	}
	// A map[string]json.RawMessage still assigns both ways (the API stays compatible).
	var plain map[string]json.RawMessage = b
	b = plain
	if len(b) != 2 {
		t.Fatal("assignment lost fields")
	}
}
