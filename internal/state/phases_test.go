package state

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/internal/strictjson"
)

// TestCheckRequest: Write's first phase refuses a malformed request naming the member, and
// otherwise gives the mode (merge_by_key when empty), the body without its deletes, and the
// deletes sorted.
func TestCheckRequest(t *testing.T) {
	zero, neg := int64(0), int64(-1)
	cases := []struct {
		name        string
		req         WriteRequest
		wantMember  string // the refused member; empty when accepted
		wantMode    string
		wantBody    []string
		wantDeletes []string
	}{
		{"empty mode is merge", WriteRequest{Body: json.RawMessage(`{"a":1}`)}, "", ModeMerge, []string{"a"}, nil},
		{"unknown mode", WriteRequest{Mode: "append", Body: json.RawMessage(`{"a":1}`)}, "mode", "", nil, nil},
		{"cas needs if_version", WriteRequest{Mode: ModeCAS, Body: json.RawMessage(`{"a":1}`)}, "if_version", "", nil, nil},
		{"negative if_version", WriteRequest{IfVersion: &neg, Body: json.RawMessage(`{"a":1}`)}, "if_version", "", nil, nil},
		{"no body", WriteRequest{}, "body", "", nil, nil},
		{"null body", WriteRequest{Body: json.RawMessage(` null `)}, "body", "", nil, nil},
		{"array body", WriteRequest{Body: json.RawMessage(`[1]`)}, "body", "", nil, nil},
		{"cas takes no delete", WriteRequest{Mode: ModeCAS, IfVersion: &zero, Body: json.RawMessage(`{"a":{"$delete":true}}`)}, "body.a", "", nil, nil},
		{"deletes split and sorted", WriteRequest{Body: json.RawMessage(`{"z":{"$delete":true},"b":2,"c":{"$delete":true}}`)}, "", ModeMerge, []string{"b"}, []string{"c", "z"}},
		{"cas at 0", WriteRequest{Mode: ModeCAS, IfVersion: &zero, Body: json.RawMessage(`{"a":1}`)}, "", ModeCAS, []string{"a"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, body, deletes, err := checkRequest(tc.req)
			if tc.wantMember != "" {
				f := fault.As(err)
				require.NotNil(t, f, "want a fault, got %v", err)
				require.Equal(t, fault.Invalid, f.Kind)
				require.Equal(t, tc.wantMember, f.Details["member"])
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.wantMode, req.Mode)
			require.Equal(t, tc.wantBody, sortedKeys(body))
			require.Equal(t, tc.wantDeletes, deletes)
		})
	}
}

// TestUndeclared: an agent with no schema is always refused, naming every field and delete;
// a declared agent is refused only for fields its schema lacks.
func TestUndeclared(t *testing.T) {
	schema := spaces.ObjectType{Fields: map[string]spaces.Field{"a": {Type: "string"}, "b": {Type: "string"}}}
	cases := []struct {
		name        string
		t           target
		body        strictjson.Object
		deletes     []string
		wantNames   []string
		wantRefused bool
	}{
		{"no schema names all", target{}, strictjson.Object{"b": nil, "a": nil}, []string{"c"}, []string{"a", "b", "c"}, true},
		{"no schema, empty body", target{}, strictjson.Object{}, nil, []string{}, true},
		{"declared fields pass", target{declared: true, schema: schema}, strictjson.Object{"a": nil}, []string{"x"}, nil, false},
		{"undeclared named sorted", target{declared: true, schema: schema}, strictjson.Object{"z": nil, "a": nil, "y": nil}, nil, []string{"y", "z"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			names, refused := undeclared(tc.t, tc.body, tc.deletes)
			require.Equal(t, tc.wantRefused, refused)
			require.Equal(t, tc.wantNames, names)
		})
	}
}

// TestMerged: merge_by_key keeps the current fields and their times, drops the deletes and
// sets the written fields at now; cas keeps only what is written.
func TestMerged(t *testing.T) {
	old, now := time.Unix(1000, 0).UTC(), time.Unix(2000, 0).UTC()
	current := strictjson.Object{"a": json.RawMessage(`1`), "b": json.RawMessage(`2`), "c": json.RawMessage(`3`)}
	times := map[string]time.Time{"a": old, "b": old, "c": old}
	written := strictjson.Object{"b": json.RawMessage(`20`), "d": json.RawMessage(`4`)}
	cases := []struct {
		name      string
		mode      string
		deletes   []string
		wantBody  string
		wantTimes map[string]time.Time
	}{
		{"merge", ModeMerge, []string{"c"}, `{"a":1,"b":20,"d":4}`, map[string]time.Time{"a": old, "b": now, "d": now}},
		{"merge without deletes", ModeMerge, nil, `{"a":1,"b":20,"c":3,"d":4}`, map[string]time.Time{"a": old, "b": now, "c": old, "d": now}},
		{"cas", ModeCAS, nil, `{"b":20,"d":4}`, map[string]time.Time{"b": now, "d": now}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next, nextTimes := merged(tc.mode, current, times, tc.deletes, written, now)
			require.Equal(t, tc.wantBody, string(next.Join()))
			require.Equal(t, tc.wantTimes, nextTimes)
			require.Len(t, current, 3, "merged changes no argument")
		})
	}
}
