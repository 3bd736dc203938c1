package strictjson_test

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/strictjson"
)

// nested returns depth levels of arrays around 1, or of objects {"a": ...} when obj is set.
func nested(depth int, obj bool) []byte {
	if obj {
		return []byte(strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth))
	}
	return []byte(strings.Repeat("[", depth) + "1" + strings.Repeat("]", depth))
}

func requireCode(t *testing.T, err error, code string) {
	t.Helper()
	fe := fault.As(err)
	require.NotNil(t, fe, "got %v, want a fault %s", err, code)
	require.Equal(t, code, fe.Code, "got %s (%s)", fe.Code, fe.Message)
	require.Equal(t, fault.Invalid, fe.Kind)
}

func TestDepthLimitIsExact(t *testing.T) {
	for _, obj := range []bool{false, true} {
		require.NoError(t, strictjson.CheckDepth(nested(10, obj), 10))
		requireCode(t, strictjson.CheckDepth(nested(11, obj), 10), "json_too_deep")
	}
	// Brackets inside strings do not count, escaped quotes do not end a string.
	require.NoError(t, strictjson.CheckDepth([]byte(`["[[[[\"{{{{"]`), 1))

	// ParseObject: a working-memory body of MaxBodyDepth levels, counted from the body itself.
	_, err := strictjson.ParseObject(nested(strictjson.MaxBodyDepth, true))
	require.NoError(t, err)
	_, err = strictjson.ParseObject(nested(strictjson.MaxBodyDepth+1, true))
	requireCode(t, err, "json_too_deep")

	// Decode: such a body inside an envelope still fits MaxEnvelopeDepth.
	var v envelope
	body := nested(strictjson.MaxBodyDepth, true)
	require.NoError(t, strictjson.Decode([]byte(`{"body":`+string(body)+`}`), &v))
	require.NoError(t, strictjson.Decode([]byte(`{"body":`+string(nested(strictjson.MaxEnvelopeDepth-1, false))+`}`), &v))
	requireCode(t, strictjson.Decode([]byte(`{"body":`+string(nested(strictjson.MaxEnvelopeDepth, false))+`}`), &v), "json_too_deep")
	requireCode(t, strictjson.DecodeDepth([]byte(`{"body":[[1]]}`), &v, 2), "json_too_deep")

	// An envelope without a free-form member gets MaxPlainDepth.
	require.Equal(t, strictjson.MaxEnvelopeDepth, strictjson.EnvelopeDepth(&v))
	var plain struct {
		Items []inner `json:"items"`
		N     *int    `json:"n"`
	}
	require.Equal(t, strictjson.MaxPlainDepth, strictjson.EnvelopeDepth(&plain))
	requireCode(t, strictjson.Decode([]byte(`{"x":`+string(nested(strictjson.MaxPlainDepth, false))+`}`), &plain), "json_too_deep")
	var loose struct {
		Extra map[string][]any `json:"extra"`
	}
	require.Equal(t, strictjson.MaxEnvelopeDepth, strictjson.EnvelopeDepth(&loose))
}

// TestDeepNestingIsRefusedWithBoundedMemory: 1 MB of '[' (and of '{"a":') is refused with a
// few allocations and a few kilobytes, whatever its length (issue 11 §1: the old parser
// allocated a path string per level, quadratic in the depth).
func TestDeepNestingIsRefusedWithBoundedMemory(t *testing.T) {
	bodies := map[string][]byte{
		"arrays":  bytes.Repeat([]byte("["), 1<<20),
		"objects": bytes.Repeat([]byte(`{"a":`), (1<<20)/5),
		"mixed":   bytes.Repeat([]byte(`[{"a":`), (1<<20)/6),
	}
	for name, data := range bodies {
		t.Run(name, func(t *testing.T) {
			requireCode(t, strictjson.Check(data), "json_too_deep")
			allocs := testing.AllocsPerRun(5, func() { _ = strictjson.Check(data) })
			require.LessOrEqual(t, allocs, 20.0)

			var v envelope
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for i := 0; i < 5; i++ {
				requireCode(t, strictjson.Decode(data, &v), "json_too_deep")
				_, err := strictjson.ParseObject(data)
				requireCode(t, err, "json_too_deep")
			}
			runtime.ReadMemStats(&after)
			require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<10), "10 refusals of 1 MB of nesting allocated too much")
		})
	}
}

// TestWideBodiesAreLinear: a long array of small objects (not deep) allocates in proportion
// to its size, not to size x depth.
func TestWideBodiesAreLinear(t *testing.T) {
	data := []byte(`{"body":{"a":[` + strings.TrimSuffix(strings.Repeat(`[[[[{"k":1}]]]],`, 20000), ",") + `]}}`)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	require.NoError(t, strictjson.Check(data))
	runtime.ReadMemStats(&after)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(40*len(data)))
}

func TestLoneSurrogatesAreRefused(t *testing.T) {
	tests := []struct {
		in   string
		code string
	}{
		{in: `"\ud800lone"`, code: "invalid_json"},
		{in: `"\uDBFF"`, code: "invalid_json"},
		{in: `"\udc00"`, code: "invalid_json"},
		{in: `"\ud800\u0041"`, code: "invalid_json"},
		{in: `"\ud800\ud800"`, code: "invalid_json"},
		{in: `"a\udfff\ud800"`, code: "invalid_json"},
		{in: `{"\ud800":1}`, code: "invalid_json"},
		{in: `"\ud83d\ude00 pair"`},
		{in: `"\uD83D\uDE00"`},
		{in: `"\\ud800 is text"`},
		{in: `"\ufffd"`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			err := strictjson.Check([]byte(tc.in))
			if tc.code == "" {
				require.NoError(t, err)
				return
			}
			requireCode(t, err, tc.code)
			require.NotContains(t, err.Error(), "lone\"")
		})
	}
}

func TestNumbersMustFitFloat64(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{in: `1e400`}, {in: `-1e400`}, {in: `1e-400`}, {in: `-0.0000001e-400`},
		{in: `{"a":[1,{"b":1E+309}]}`},
		{in: `0`, ok: true}, {in: `-0.0e-400`, ok: true}, {in: `0e999`, ok: true},
		{in: `1.7976931348623157e308`, ok: true}, {in: `5e-324`, ok: true},
		{in: `9007199254740993`, ok: true}, {in: `123456789012345678901234567890`, ok: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			err := strictjson.Check([]byte(tc.in))
			if tc.ok {
				require.NoError(t, err)
				return
			}
			requireCode(t, err, "invalid_number")
		})
	}
	fe := fault.As(strictjson.Check([]byte(`{"a":[1,{"b":1e400}]}`)))
	require.Equal(t, "a[1].b", fe.Details["member"])
	var v struct {
		N json.Number `json:"n"`
	}
	requireCode(t, strictjson.Decode([]byte(`{"n":1e-400}`), &v), "invalid_number")
}

// TestCanonicalIgnoresClientEscaping (WM-8): the same text sent raw or \u-escaped gives the
// same canonical bytes; HTML characters stay raw.
func TestCanonicalIgnoresClientEscaping(t *testing.T) {
	raw, err := strictjson.ParseObject([]byte(`{"n": "é 😀 <a&b>", "o": {"z": ["é", 1.0e2, true, null], "a": "x\ty\"\\"}}`))
	require.NoError(t, err)
	esc, err := strictjson.ParseObject([]byte(`{"o":{"\u007a":[ "\u00e9" ,1.0e2,true,null],"a":"x\u0009y\"\\"},"n":"\u00e9 \ud83d\ude00 \u003ca\u0026b\u003e"}`))
	require.NoError(t, err)
	want := `{"n":"é 😀 <a&b>","o":{"z":["é",1.0e2,true,null],"a":"x\ty\"\\"}}`
	require.Equal(t, want, string(raw.Canonical()))
	require.Equal(t, want, string(esc.Canonical()))
	ctl, err := strictjson.ParseObject([]byte(`{"c":"\u0001\u001f"}`))
	require.NoError(t, err)
	require.Equal(t, `{"c":"\u0001\u001f"}`, string(ctl.Canonical()))
}
