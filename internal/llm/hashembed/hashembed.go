// Package hashembed is a deterministic stand-in embedder (KN-2 tests, `dev --fake-model`):
// the vector of a text is its lower-cased words and character trigrams hashed (FNV-1a) into
// Dims buckets, words weighted 1 and trigrams 0.5, then L2-normalised. Texts sharing words
// or word pieces are near by cosine; it knows no synonyms. It is never a real model.
package hashembed

import (
	"hash/fnv"
	"math"
	"strings"
	"unicode"
)

// Dims is the vector length Vector returns.
const Dims = 256

// Vector returns the unit vector of text (all zeros for a text without letters or digits).
func Vector(text string) []float32 {
	v := make([]float64, Dims)
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
	for _, w := range words {
		v[bucket("w:"+w)] += 1
		padded := []rune(" " + w + " ")
		for i := 0; i+3 <= len(padded); i++ {
			v[bucket("t:"+string(padded[i:i+3]))] += 0.5
		}
	}
	var n float64
	for _, x := range v {
		n += x * x
	}
	out := make([]float32, Dims)
	if n == 0 {
		return out
	}
	n = math.Sqrt(n)
	for i, x := range v {
		out[i] = float32(x / n)
	}
	return out
}

func bucket(s string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return int(h.Sum32() % Dims)
}
