package api

import (
	"math/rand"
	"regexp"
	"strings"
	"testing"
)

// TestTokenShapesAreTheirPatterns: isRequestID and isAgentVersion accept exactly what their
// documented regular expressions match (for isRequestID: the token pattern, and no 7 digits
// with only separators between them), on every string of up to two bytes from an alphabet
// of allowed, boundary and forbidden bytes (non-ASCII, NUL, newline, space, '@'), on lengths
// around the limits, and on 20,000 random strings.
func TestTokenShapesAreTheirPatterns(t *testing.T) {
	requestIDToken := regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)
	longDigits := regexp.MustCompile(`[0-9](?:[._:-]*[0-9]){6}`) // 7 digits, only separators between
	requestID := func(s string) bool { return requestIDToken.MatchString(s) && !longDigits.MatchString(s) }
	agentVersion := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/+:-]{0,127}$`)
	alphabet := []string{"a", "Z", "0", "9", ".", "_", ":", "-", "/", "+", "@", " ", "\n", "\x00", "é", "\xff", "`", "[", "{"}
	var cases []string
	cases = append(cases, "")
	for _, a := range alphabet {
		cases = append(cases, a)
		for _, b := range alphabet {
			cases = append(cases, a+b)
		}
	}
	for _, n := range []int{5, 6, 7, 8} {
		cases = append(cases, strings.Repeat("1", n), "a"+strings.Repeat("1-", n), strings.Repeat("12.", n)+"x")
	}
	for _, n := range []int{63, 64, 65, 127, 128, 129} {
		cases = append(cases, strings.Repeat("a", n), "-"+strings.Repeat("a", n-1), strings.Repeat("a", n-1)+"\n")
	}
	r := rand.New(rand.NewSource(16))
	for range 20000 {
		var b strings.Builder
		for range r.Intn(140) {
			if r.Intn(50) == 0 {
				b.WriteString(alphabet[r.Intn(len(alphabet))])
			} else {
				b.WriteString(alphabet[r.Intn(10)])
			}
		}
		cases = append(cases, b.String())
	}
	accepted := 0
	for _, c := range cases {
		if got, want := isRequestID(c), requestID(c); got != want {
			t.Fatalf("isRequestID(%q) = %v, pattern %v", c, got, want)
		}
		if got, want := isAgentVersion(c), agentVersion.MatchString(c); got != want {
			t.Fatalf("isAgentVersion(%q) = %v, pattern %v", c, got, want)
		}
		if isAgentVersion(c) {
			accepted++
		}
	}
	if accepted == 0 || accepted == len(cases) {
		t.Fatalf("%d of %d accepted: the cases do not tell the shapes apart", accepted, len(cases))
	}
}

// TestIssuedRequestIDsAreAdopted: every id the server issues has its own adopted shape, so a
// caller sending one back keeps it.
func TestIssuedRequestIDsAreAdopted(t *testing.T) {
	for range 20000 {
		if id := newRequestID(); !isRequestID(id) || len(id) != 16 {
			t.Fatalf("newRequestID() = %q: not an adopted 16-digit id", id)
		}
	}
}
