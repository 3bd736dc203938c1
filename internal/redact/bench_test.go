package redact

import (
	"strings"
	"testing"
)

// repeatTo returns unit repeated until the result holds at least n bytes.
func repeatTo(unit string, n int) string {
	return strings.Repeat(unit, (n+len(unit)-1)/len(unit))
}

// BenchmarkLarge measures Detect and Mask on large inputs made of the shapes
// that used to be super-linear: many phone-like groups in one run, many
// addresses, and many "a@" (one address window each). Run with -bench Large -benchtime 3x.
func BenchmarkLarge(b *testing.B) {
	shapes := []struct{ name, unit string }{
		{"phones", "9 1234 5678 "},
		{"emails", "ana@example.com "},
		{"at-signs", "a@"},
		{"spaced-digits", "1 2 3 4 5 6 7 8 9 0 "},
		{"spaced-letters", "a n a @ e x a m p l e . c o m "},
	}
	sizes := []struct {
		name string
		n    int
	}{{"64KB", 64 << 10}, {"1MB", 1 << 20}}
	for _, sh := range shapes {
		for _, sz := range sizes {
			text := repeatTo(sh.unit, sz.n)
			b.Run("Detect/"+sh.name+"/"+sz.name, func(b *testing.B) {
				b.SetBytes(int64(len(text)))
				for b.Loop() {
					Detect(text, Options{})
				}
			})
			b.Run("Mask/"+sh.name+"/"+sz.name, func(b *testing.B) {
				b.SetBytes(int64(len(text)))
				for b.Loop() {
					Mask(text, Options{})
				}
			})
		}
	}
}
