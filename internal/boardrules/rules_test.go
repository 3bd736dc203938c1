package boardrules_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/boardrules"
)

func v(raw string) boardrules.Value {
	if raw == "" {
		return boardrules.Missing
	}
	return boardrules.Present(json.RawMessage(raw))
}

func mustRule(t *testing.T, name, then, expr, typ string) boardrules.Rule {
	t.Helper()
	r, err := boardrules.Check(name, then, expr, typ)
	require.NoError(t, err)
	return r
}

func TestSettleEveryRule(t *testing.T) {
	tests := []struct {
		name                     string
		rule, then, expr, typ    string
		base, ours, theirs, want string // "" is absent; want "reject" is ErrReject
	}{
		{name: "reject", rule: "reject", typ: "string", base: `"a"`, ours: `"b"`, theirs: `"c"`, want: "reject"},
		{name: "ours", rule: "ours", typ: "string", base: `"a"`, ours: `"b"`, theirs: `"c"`, want: `"b"`},
		{name: "theirs", rule: "theirs", typ: "string", base: `"a"`, ours: `"b"`, theirs: `"c"`, want: `"c"`},
		{name: "max", rule: "max", typ: "integer", base: `1`, ours: `5`, theirs: `3`, want: `5`},
		{name: "max theirs", rule: "max", typ: "number", base: `1`, ours: `2.5`, theirs: `3`, want: `3`},
		{name: "min", rule: "min", typ: "integer", base: `9`, ours: `5`, theirs: `3`, want: `3`},
		{name: "min without theirs", rule: "min", typ: "integer", base: `9`, ours: `5`, want: `5`},
		{name: "max over a string rejects", rule: "max", typ: "json", base: `1`, ours: `"x"`, theirs: `3`, want: "reject"},
		{name: "sum keeps both increments", rule: "sum", typ: "integer", base: `10`, ours: `11`, theirs: `13`, want: `14`},
		{name: "sum from nothing", rule: "sum", typ: "integer", ours: `1`, theirs: `1`, want: `2`},
		{name: "sum of floats", rule: "sum", typ: "number", base: `1`, ours: `1.5`, theirs: `2`, want: `2.5`},
		{name: "sum past int64 goes float", rule: "sum", typ: "integer", base: `0`, ours: `9223372036854775807`, theirs: `1`, want: `9.223372036854776e+18`},
		{name: "union order stable", rule: "union", typ: "array", base: `["a"]`, ours: `["a","c","b"]`, theirs: `["a","d"]`, want: `["a","d","c","b"]`},
		{name: "union by value", rule: "union", typ: "array", base: `[]`, ours: `[{"x":1,"y":2}]`, theirs: `[{"y":2,"x":1}]`, want: `[{"y":2,"x":1}]`},
		{name: "union of a non-array rejects", rule: "union", typ: "json", base: `[]`, ours: `"a"`, theirs: `["b"]`, want: "reject"},
		{name: "merge_by_key disjoint keys", rule: "merge_by_key", typ: "object", base: `{"a":1}`, ours: `{"a":1,"b":2}`, theirs: `{"a":1,"c":3}`, want: `{"a":1,"b":2,"c":3}`},
		{name: "merge_by_key removal by one side", rule: "merge_by_key", typ: "object", base: `{"a":1,"b":2}`, ours: `{"a":1}`, theirs: `{"a":1,"b":2,"c":3}`, want: `{"a":1,"c":3}`},
		{name: "merge_by_key same key falls to reject", rule: "merge_by_key", typ: "object", base: `{"a":1}`, ours: `{"a":2}`, theirs: `{"a":3}`, want: "reject"},
		{name: "merge_by_key same key falls to then", rule: "merge_by_key", then: "max", typ: "object", base: `{"a":1}`, ours: `{"a":2}`, theirs: `{"a":3}`, want: `{"a":3}`},
		{name: "merge_by_key then theirs", rule: "merge_by_key", then: "ours", typ: "object", base: `{}`, ours: `{"a":"x"}`, theirs: `{"a":"y"}`, want: `{"a":"x"}`},
		{name: "cel value", rule: "cel", expr: `ours + theirs - base`, typ: "integer", base: `1`, ours: `2`, theirs: `5`, want: `6`},
		{name: "cel reject()", rule: "cel", expr: `ours.size() > theirs.size() ? ours : reject()`, typ: "string", base: `"a"`, ours: `"b"`, theirs: `"cc"`, want: "reject"},
		{name: "cel picks longer", rule: "cel", expr: `ours.size() > theirs.size() ? ours : reject()`, typ: "string", base: `"a"`, ours: `"bbb"`, theirs: `"cc"`, want: `"bbb"`},
		{name: "cel absent is null", rule: "cel", expr: `base == null ? theirs : ours`, typ: "string", ours: `"o"`, theirs: `"t"`, want: `"t"`},
		{name: "cel builds an object", rule: "cel", expr: `{"o": ours, "t": theirs}`, typ: "object", base: `1`, ours: `2`, theirs: `3`, want: `{"o":2,"t":3}`},
		{name: "cel runtime error rejects", rule: "cel", expr: `ours.missing`, typ: "json", base: `{}`, ours: `{"a":1}`, theirs: `{"b":1}`, want: "reject"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := mustRule(t, tc.rule, tc.then, tc.expr, tc.typ)
			got, err := r.Settle(v(tc.base), v(tc.ours), v(tc.theirs))
			if tc.want == "reject" {
				require.ErrorIs(t, err, boardrules.ErrReject)
				return
			}
			require.NoError(t, err)
			require.True(t, boardrules.Same(got, v(tc.want)), "got %s, want %s", got.Raw, tc.want)
		})
	}
}

func TestCELCostLimitRejects(t *testing.T) {
	// Each side is a list of 300 numbers: the nested comprehension costs far past the limit.
	list := "["
	for i := 0; i < 300; i++ {
		if i > 0 {
			list += ","
		}
		list += "1"
	}
	list += "]"
	r := mustRule(t, "cel", "", `ours.map(x, theirs.map(y, theirs.map(z, x + y + z))).size()`, "json")
	_, err := r.Settle(v(list), v(list), v(list))
	require.ErrorIs(t, err, boardrules.ErrReject)
	require.Contains(t, err.Error(), "cost")
}

func TestCheckRefusesMisfits(t *testing.T) {
	tests := []struct{ name, rule, then, expr, typ string }{
		{name: "unknown rule", rule: "lww", typ: "string"},
		{name: "union on a string", rule: "union", typ: "string"},
		{name: "sum on a string", rule: "sum", typ: "string"},
		{name: "merge_by_key on an array", rule: "merge_by_key", typ: "array"},
		{name: "then off merge_by_key", rule: "ours", then: "theirs", typ: "string"},
		{name: "bad then", rule: "merge_by_key", then: "union", typ: "object"},
		{name: "cel without expr", rule: "cel", typ: "string"},
		{name: "expr off cel", rule: "ours", expr: "ours", typ: "string"},
		{name: "cel syntax", rule: "cel", expr: "ours +", typ: "string"},
		{name: "cel unknown variable", rule: "cel", expr: "mine", typ: "string"},
		{name: "cel unknown function", rule: "cel", expr: "now()", typ: "string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := boardrules.Check(tc.rule, tc.then, tc.expr, tc.typ)
			require.Error(t, err)
		})
	}
}

func TestMergeThreeWay(t *testing.T) {
	rules := map[string]boardrules.Rule{
		"count": mustRule(t, "sum", "", "", "integer"),
		"title": mustRule(t, "reject", "", "", "string"),
	}
	obj := func(s string) map[string]json.RawMessage {
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(s), &m))
		return m
	}
	base := obj(`{"count":1,"title":"a","owner":"x"}`)
	theirs := obj(`{"count":3,"title":"a","owner":"y","extra":true}`)

	next, out, err := boardrules.Merge(rules, base, theirs, obj(`{"count":2,"title":"b","owner":"x"}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"count":4,"title":"b","owner":"y","extra":true}`, mustJSON(t, next))
	require.Equal(t, []boardrules.Outcome{{Field: "count", Rule: "sum"}}, out)

	_, out, err = boardrules.Merge(rules, base, obj(`{"title":"c"}`), obj(`{"title":"b"}`))
	var c *boardrules.Conflict
	require.True(t, errors.As(err, &c), "got %v, want a conflict", err)
	require.Equal(t, []boardrules.Outcome{{Field: "title", Rule: "reject", Rejected: true}}, out)

	// A field without a rule is reject.
	_, _, err = boardrules.Merge(rules, base, theirs, obj(`{"owner":"z"}`))
	require.True(t, errors.As(err, &c))
}

func mustJSON(t *testing.T, m map[string]json.RawMessage) string {
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return string(b)
}

// Two writers who both incremented a counter from the same base to the same value made two
// increments: sum is asked (and a cel rule), not skipped as one change.
func TestMergeEqualIncrementsAreTwo(t *testing.T) {
	obj := func(s string) map[string]json.RawMessage {
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(s), &m))
		return m
	}
	rules := map[string]boardrules.Rule{"hits": mustRule(t, "sum", "", "", "integer"), "name": mustRule(t, "reject", "", "", "string"),
		"byKey": mustRule(t, "merge_by_key", "sum", "", "object")}
	next, out, err := boardrules.Merge(rules, obj(`{"hits":5,"name":"a","byKey":{"x":1}}`), obj(`{"hits":6,"name":"b","byKey":{"x":2}}`), obj(`{"hits":6,"name":"b","byKey":{"x":2}}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"hits":7,"name":"b","byKey":{"x":3}}`, mustJSON(t, next))
	require.Equal(t, []boardrules.Outcome{{Field: "byKey", Rule: "merge_by_key"}, {Field: "hits", Rule: "sum"}}, out)
}
