package knowledge

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// wordEnd stops at the first white space (any Unicode space, by rune) or the body's end.
func TestWordEnd(t *testing.T) {
	for _, c := range []struct {
		body string
		i    int
		want int
	}{
		{"", 0, 0},
		{"abc", 0, 3},
		{"ab cd", 0, 2},
		{"ab cd", 3, 5},
		{"é\u00a0x", 0, 2},
		{"日本\u3000語", 0, 6},
		{"a\tb", 0, 1},
	} {
		require.Equal(t, c.want, wordEnd(c.body, c.i), "%q at %d", c.body, c.i)
	}
}

// chunkWords gives each word's byte range, skips white space, and cuts a word longer than
// size tokens into pieces of at most size bytes without splitting a UTF-8 sequence.
func TestChunkWords(t *testing.T) {
	words, err := chunkWords("  one two\n\tthree ", 60)
	require.NoError(t, err)
	var ranges [][2]int
	for _, w := range words {
		require.Positive(t, w.tokens)
		ranges = append(ranges, [2]int{w.start, w.end})
	}
	require.Equal(t, [][2]int{{2, 5}, {6, 9}, {11, 16}}, ranges)

	long := strings.Repeat("é", 40) // 80 bytes without white space
	words, err = chunkWords(long, 5)
	require.NoError(t, err)
	require.Greater(t, len(words), 1)
	prev := 0
	for _, w := range words {
		require.Equal(t, prev, w.start)
		require.LessOrEqual(t, w.end-w.start, 5)
		require.Zero(t, (w.end-w.start)%2, "cut inside a UTF-8 sequence")
		prev = w.end
	}
	require.Equal(t, len(long), prev)

	words, err = chunkWords(" \n\t", 60)
	require.NoError(t, err)
	require.Empty(t, words)
}
