package sdk

import (
	"encoding/json"
	"strings"
	"testing"
)

// The SDK's own depth scan (the SDK cannot import the service's strictjson): the limit counts
// arrays and objects, brackets inside strings do not count, and lone surrogate escapes are
// refused while valid pairs pass.
func TestScanDepth(t *testing.T) {
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	cases := []struct {
		name, in string
		max      int
		code     string // "" when accepted
	}{
		{"at the limit", nest(5), 5, ""},
		{"one past", nest(6), 5, "json_too_deep"},
		{"objects count", `{"a":{"b":{"c":1}}}`, 2, "json_too_deep"},
		{"siblings do not add up", `[[1],[2],[3]]`, 2, ""},
		{"brackets in strings", `{"a":"[[[[{{{{"}`, 1, ""},
		{"escaped quote stays in the string", `{"a":"\"[[[["}`, 1, ""},
		{"escaped backslash ends", `{"a":"\\"}`, 1, ""},
		{"valid pair", `{"a":"\ud83d\ude00"}`, 1, ""},
		{"plain escape", `{"a":"\u00e9\u005b"}`, 1, ""},
		{"lone high", `{"a":"\ud83d"}`, 1, "invalid_json"},
		{"high then non-low", `{"a":"\ud83d\u0041"}`, 1, "invalid_json"},
		{"lone low", `{"a":"\ude00"}`, 1, "invalid_json"},
		{"high at the end", `"\ud83d`, 1, "invalid_json"},
		{"unterminated string", `["abc`, 1, ""},
		{"malformed escape left to the parser", `["\u12"]`, 1, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := scanDepth([]byte(c.in), c.max)
			switch {
			case c.code == "" && err != nil:
				t.Fatalf("scanDepth(%s): %v, want nil", c.in, err)
			case c.code != "" && (err == nil || !strings.HasPrefix(err.Error(), c.code+": ")):
				t.Fatalf("scanDepth(%s): %v, want %s", c.in, err, c.code)
			}
			if err != nil && strings.Contains(err.Error(), c.in) {
				t.Fatalf("the error repeats the text: %v", err)
			}
		})
	}
}

// What the scan accepts at the answer limit, encoding/json parses.
func TestScanDepthAgreesWithParser(t *testing.T) {
	in := strings.Repeat(`{"a":`, MaxAnswerDepth) + "1" + strings.Repeat("}", MaxAnswerDepth)
	if err := scanDepth([]byte(in), MaxAnswerDepth); err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal([]byte(in), &v); err != nil {
		t.Fatal(err)
	}
	if err := scanDepth([]byte("["+in+"]"), MaxAnswerDepth); err == nil {
		t.Fatal("one level past MaxAnswerDepth was accepted")
	}
}
