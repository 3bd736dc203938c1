package strictjson_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/strictjson"
)

type inner struct {
	Kind string `json:"kind"`
}

type Embedded struct {
	TaskID string `json:"task_id,omitempty"`
}

type envelope struct {
	Embedded
	Scope     *inner          `json:"scope"`
	IfVersion *int64          `json:"if_version"`
	Body      json.RawMessage `json:"body"`
	Items     []inner         `json:"items"`
	At        *time.Time      `json:"at"`
	Extra     map[string]any  `json:"extra"`
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		code    string // "" means accepted
		message string // a part of the message, when set
		leak    string // text that must not appear in the message
	}{
		{name: "valid", in: `{"scope":{"kind":"a"},"if_version":3,"body":{"Any":1,"any":2},"task_id":"t","items":[{"kind":"x"}],"extra":{"FREE":1}}`},
		{name: "case variant of a member", in: `{"if_version":1,"IF_VERSION":null}`, code: "unknown_member", message: `"IF_VERSION"`},
		{name: "case variant alone", in: `{"Scope":{"kind":"a"}}`, code: "unknown_member", message: `"Scope"`},
		{name: "case variant nested", in: `{"scope":{"Kind":"a"}}`, code: "unknown_member", message: `"scope.Kind"`},
		{name: "case variant in an array", in: `{"items":[{"kind":"a"},{"KIND":"b"}]}`, code: "unknown_member"},
		{name: "typo", in: `{"if_verison":1}`, code: "unknown_member", message: `"if_verison"`},
		{name: "unknown member that is free text", in: `{"ana.souza@example.com +5511912345678":1}`, code: "unknown_member", leak: "ana.souza"},
		{name: "duplicate key", in: `{"if_version":1,"if_version":2}`, code: "invalid_json", message: "duplicate"},
		{name: "duplicate key inside body", in: `{"body":{"a":{"b":1,"b":2}}}`, code: "invalid_json"},
		{name: "duplicate free-text key", in: `{"body":{"cpf 529.982.247-25":1,"cpf 529.982.247-25":2}}`, code: "invalid_json", leak: "529"},
		{name: "NUL in a value", in: `{"task_id":"a\u0000b"}`, code: "invalid_json", message: "NUL"},
		{name: "NUL in a key", in: `{"body":{"a\u0000":1}}`, code: "invalid_json", message: "NUL"},
		{name: "invalid UTF-8", in: "{\"task_id\":\"inv\xff\xfe\"}", code: "invalid_json", message: "UTF-8"},
		{name: "trailing data", in: `{"task_id":"a"} {}`, code: "invalid_json"},
		{name: "empty", in: ` `, code: "invalid_json"},
		{name: "syntax error", in: `{"task_id":ana@example.com}`, code: "invalid_json", leak: "ana"},
		{name: "bad time", in: `{"at":"ana.souza@example.com +5511912345678"}`, code: "invalid_member", leak: "ana"},
		{name: "wrong type", in: `{"if_version":"three"}`, code: "invalid_member", message: `"if_version"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var v envelope
			err := strictjson.Decode([]byte(tc.in), &v)
			if tc.code == "" {
				require.NoError(t, err)
				return
			}
			fe := fault.As(err)
			require.NotNil(t, fe, "got %v, want a fault %s", err, tc.code)
			require.Equal(t, tc.code, fe.Code, "got %s (%s), want %s", fe.Code, fe.Message, tc.code)
			require.Equal(t, fault.Invalid, fe.Kind)
			if tc.message != "" {
				require.Contains(t, fe.Message, tc.message)
			}
			if tc.leak != "" {
				require.NotContains(t, fe.Message, tc.leak)
				require.NotContains(t, fe.Error(), tc.leak)
				for _, d := range fe.Details {
					require.NotContains(t, d, tc.leak)
				}
			}
		})
	}
}

func TestCanonicalKeepsNumbersAndSortsKeys(t *testing.T) {
	o, err := strictjson.ParseObject([]byte(`{"b": 9007199254740993, "a": {"y": 1.50, "x": "<email>"}}`))
	require.NoError(t, err)
	require.Equal(t, `{"a":{"y":1.50,"x":"<email>"},"b":9007199254740993}`, string(o.Canonical()))
}

// Join of canonical values gives Canonical's bytes: the working-memory write joins the stored
// (canonical) fields with the written ones canonicalised once (issue 16), and the cap (WM-8)
// counts the same bytes either way.
func TestJoinOfCanonicalValuesIsCanonical(t *testing.T) {
	o, err := strictjson.ParseObject([]byte(`{"z\u00e9": "caf\u00e9 \"q\" \u003c", "a": {"y": 1.50, "x": [1, {"k": "\t"}]},
		"n": 9007199254740993, "e": "", "t": true, "nul": null}`))
	require.NoError(t, err)
	values := strictjson.Object{}
	for k, v := range o {
		values[k] = strictjson.CanonicalValue(v)
	}
	require.Equal(t, string(o.Canonical()), string(values.Join()))
	require.Equal(t, `{}`, string(strictjson.Object{}.Join()))
	require.Equal(t, `nope`, string(strictjson.CanonicalValue(json.RawMessage(`nope`))), "not JSON: returned as it is")
}

// Two unknown members: every decode of the same body names the same one (found by the
// adversarial round: the walk followed Go's random map order).
func TestUnknownMemberNamedTheSameEachTime(t *testing.T) {
	var v struct {
		A int `json:"a"`
	}
	for i := 0; i < 50; i++ {
		err := strictjson.Decode([]byte(`{"zz":1,"a":1,"mm":2,"bb":3}`), &v)
		require.Error(t, err)
		require.Contains(t, err.Error(), `unknown member "bb"`)
	}
}
