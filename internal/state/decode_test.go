package state

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/internal/strictjson"
)

// The requests decoded by encoding/json only: the same fields, without DecodeQuick.
type (
	exactWrite WriteRequest
	exactRead  ReadRequest
)

// TestQuickDecodeIsDecode: whenever DecodeQuick decodes a body, it gives what strictjson's
// reflection path gives; whatever it leaves is decoded or refused by that path (so errors are
// worded as before).
func TestQuickDecodeIsDecode(t *testing.T) {
	writes := []string{
		`{"scope":{"kind":"conversation","id":"c-1"},"mode":"merge_by_key","body":{"count":1,"step":"x"}}`,
		`{"scope":{"kind":"conversation","id":"c-1"},"mode":"cas","if_version":7,"body":{"a":[1,{"b":null}]},"agent":"bot","subject":"email:a@b.c"}`,
		`{"scope":null,"agent":null,"mode":null,"if_version":null,"body":null,"subject":null}`,
		`{"if_version":-0}`, `{"if_version":1.0}`, `{"if_version":1e2}`, `{"if_version":9223372036854775808}`,
		`{"if_version":"3"}`, `{"agent":3}`, `{"scope":{"kind":"task","id":"t","x":1}}`, `{"scope":[]}`,
		`{"scope":"c"}`, `{"Agent":"bot"}`, `{"agent":"b\u00f6t"}`, `{"agent":"b\"t"}`, `{"body":{"a":1},"extra":2}`,
		`{}`, `[]`, `"x"`, ` { "mode" : "cas" , "if_version" : 0 } `,
	}
	for _, in := range writes {
		if strictjson.Check([]byte(in)) != nil {
			continue
		}
		var quick WriteRequest
		if !quick.DecodeQuick([]byte(in)) {
			require.Equal(t, WriteRequest{}, quick, "left unchanged: %s", in)
			continue
		}
		var exact exactWrite
		require.NoError(t, strictjson.Decode([]byte(in), &exact), in)
		require.Equal(t, WriteRequest(exact), quick, in)
	}
	for _, in := range []string{`{"scope":{"kind":"conversation","id":"c"}}`, `{"scope":{"kind":"conversation","id":"c"},"agent":"a"}`,
		`{"scope":{"kind":"conversation","id":"c"},"mode":"cas"}`, `{"agent":null}`, `{}`} {
		var quick ReadRequest
		if !quick.DecodeQuick([]byte(in)) {
			require.Equal(t, ReadRequest{}, quick, in)
			continue
		}
		var exact exactRead
		require.NoError(t, strictjson.Decode([]byte(in), &exact), in)
		require.Equal(t, ReadRequest(exact), quick, in)
	}
	// The plain shapes are decoded quickly; the rest are left to the exact path.
	var w WriteRequest
	require.True(t, w.DecodeQuick([]byte(writes[1])))
	require.Equal(t, int64(7), *w.IfVersion)
	require.False(t, w.DecodeQuick([]byte(`{"if_version":1.0}`)))
	require.False(t, w.DecodeQuick([]byte(`{"Agent":"bot"}`)))
	var r ReadRequest
	require.False(t, r.DecodeQuick([]byte(`{"scope":{"kind":"conversation","id":"c"},"mode":"cas"}`)))
}

// TestCheckScalarIsCheckValue: checkValue's shortcut for scalars decides as its decoding does.
func TestCheckScalarIsCheckValue(t *testing.T) {
	types := []spaces.Field{{Type: "string"}, {Type: "text"}, {Type: "date"}, {Type: "datetime"}, {Type: "enum", Values: []string{"a"}},
		{Type: "enum"}, {Type: "integer"}, {Type: "number"}, {Type: "boolean"}, {Type: "object"}, {Type: "array"}, {Type: "other"}}
	values := []string{`null`, `"a"`, `"b"`, `"\u0061"`, `true`, `false`, `1`, `-1`, `1.5`, `1e3`, `9223372036854775808`, `{}`, `[]`, ` 1`}
	for _, f := range types {
		for _, v := range values {
			ok, decided := checkScalar(f, json.RawMessage(v))
			if !decided {
				continue
			}
			require.Equal(t, checkValueDecoded(f, json.RawMessage(v)), ok, "%s %s", f.Type, v)
		}
	}
}

// checkValueDecoded is checkValue's decision without its shortcut.
func checkValueDecoded(f spaces.Field, raw json.RawMessage) bool {
	return checkValue("x", f, json.RawMessage(" "+string(raw))) == nil // a leading space is never shortcut
}
