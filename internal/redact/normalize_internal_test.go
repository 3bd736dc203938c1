package redact

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// stripIgnorable drops ignorable characters and maps each kept byte to its rune's original
// span; nfkcFold then gives NFKC with digits, dashes and spaces folded to ASCII, each byte
// mapped to its segment's original span.
func TestNormalizePhases(t *testing.T) {
	for _, c := range []struct {
		in         string
		stripped   string
		o1s, o1e   []int
		norm       string
		start, end []int
	}{
		{"a\u200bb", "ab", []int{0, 4}, []int{1, 5}, "ab", []int{0, 4}, []int{1, 5}},
		{"\u0661\u2212", "\u0661\u2212", []int{0, 0, 2, 2, 2}, []int{2, 2, 5, 5, 5}, "1-", []int{0, 2}, []int{2, 5}},
		{"\uff11\u00a0x", "\uff11\u00a0x", []int{0, 0, 0, 3, 3, 5}, []int{3, 3, 3, 5, 5, 6}, "1 x", []int{0, 3, 5}, []int{3, 5, 6}},
		{"\ufe0f", "", []int{}, []int{}, "", []int{}, []int{}},
	} {
		stripped, o1s, o1e := stripIgnorable(c.in, nil, nil)
		require.Equal(t, c.stripped, stripped, "%q", c.in)
		require.Equal(t, c.o1s, o1s, "%q", c.in)
		require.Equal(t, c.o1e, o1e, "%q", c.in)
		nt := &normText{orig: c.in}
		nfkcFold(nt, stripped, o1s, o1e)
		require.Equal(t, c.norm, nt.s, "%q", c.in)
		require.Equal(t, c.start, nt.start, "%q", c.in)
		require.Equal(t, c.end, nt.end, "%q", c.in)
		require.Equal(t, nt, normalize(c.in), "%q", c.in)
	}
}
