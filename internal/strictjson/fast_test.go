package strictjson

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// quickCases are bodies on both sides of every rule quickValid decides.
var quickCases = []string{
	`{}`, `[]`, ` {"a":1} `, `{"a":{"b":[1,2,{"c":null}]},"d":true,"e":false}`, `"x"`, `0`, `-0`, `1.5e3`,
	`{"a":1,"a":2}`, `{"a":1,"b":{"c":1,"c":2}}`, `{"a\u0041":1,"aA":2}`, `{"\u0061":1,"a":2}`,
	`{"a":"x\u0000y"}`, `{"a\u0000":1}`, `{"a":"\u00e9\n\t\"\\\/"}`, `{"a":"\ud83d\ude00"}`,
	`{"a":1}{}`, `{"a":1,}`, `[1,]`, `{"a" 1}`, `{a:1}`, `[01]`, `[1.]`, `[.5]`, `[1e]`, `[-]`, `[+1]`,
	`[1e400]`, `[1e-400]`, `[0e-400]`, `[123456789012345678901234567890]`, `[tru]`, `[nul]`, `["\x"]`,
	"[\"a\tb\"]", `["\u12"]`, `[1 2]`, `{"a":1 "b":2}`, `{"a":[}`, `{`, `[`, `"`, ``, ` `, `nul`, `{"a":}`,
	`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17}`,
	`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k3":17}`,
	`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k16":17}`,
}

// TestQuickValidNeverAcceptsWhatTheExactPathRefuses: the fast path's "yes" is always the exact
// path's, and on the plain cases it does say yes.
func TestQuickValidNeverAcceptsWhatTheExactPathRefuses(t *testing.T) {
	for _, in := range quickCases {
		agree(t, []byte(in))
	}
	for _, in := range []string{`{}`, `{"a":{"b":[1,2,{"c":null}]},"d":true,"e":false}`, `{"a":"\u00e9\n"}`, `[-0.5e-3]`,
		`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17}`} {
		require.True(t, quickValid([]byte(in)), in)
	}
	for _, in := range []string{`{"a":1,"a":2}`, `{"a":"x\u0000y"}`, `[1e400]`, `{"a":1}{}`,
		`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k16":17}`} {
		require.False(t, quickValid([]byte(in)), in)
		require.Error(t, Check([]byte(in)), in)
	}
}

// agree fails when quickValid accepts data that the exact path refuses.
func agree(t testing.TB, data []byte) {
	if !utf8.Valid(data) || Scan(data, MaxEnvelopeDepth) != nil {
		return
	}
	if quickValid(data) {
		require.NoError(t, exactCheck(data), "quickValid accepted %q", data)
	}
}

func FuzzQuickValid(f *testing.F) {
	for _, in := range quickCases {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, data []byte) { agree(t, data) })
}

// TestMembersWalksPlainObjects: Members gives each member's name and exact bytes, and hands
// escaped names and non-objects back to the caller.
func TestMembersWalksPlainObjects(t *testing.T) {
	var got []string
	ok, err := Members([]byte(` { "a" : 1 , "b":{"c":[1, "x"]} ,"d":"e\n"} `), func(name string, value []byte) error {
		got = append(got, name+"="+string(value))
		return nil
	})
	require.True(t, ok)
	require.NoError(t, err)
	require.Equal(t, []string{`a=1`, `b={"c":[1, "x"]}`, `d="e\n"`}, got)
	for _, in := range []string{`[1]`, `{"\u0061":1}`, `"a"`} {
		ok, _ := Members([]byte(in), func(string, []byte) error { return nil })
		require.False(t, ok, in)
	}
	s, ok := PlainString([]byte(`"abc"`))
	require.True(t, ok)
	require.Equal(t, "abc", s)
	_, ok = PlainString([]byte(`"a\"b"`))
	require.False(t, ok)
	var back string
	require.NoError(t, json.Unmarshal([]byte(`"`+strings.Repeat("é", 3)+`"`), &back))
	s, ok = PlainString([]byte(`"` + back + `"`))
	require.True(t, ok)
	require.Equal(t, back, s)
}
