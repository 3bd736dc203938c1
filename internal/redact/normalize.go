package redact

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// normText is the NFKC-normalised text with invisible characters removed, and
// for each of its bytes the span of the original text it came from.
type normText struct {
	s     string
	start []int // start[i]: original offset of the segment that produced byte i
	end   []int // end[i]: original end offset of that segment
	orig  string
}

// isInvisible reports the zero-width characters and the soft hyphen removed
// before detection.
func isInvisible(r rune) bool {
	switch r {
	case '\u200B', '\u200C', '\u200D', '\u2060', '\uFEFF', '\u00AD':
		return true
	}
	return false
}

func isASCIIPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// normalize returns the normalised form of text with the offset map.
func normalize(text string) *normText {
	nt := &normText{orig: text}
	if isASCIIPlain(text) {
		// ASCII is NFKC-stable and holds no invisible characters.
		nt.s = text
		return nt
	}
	var b strings.Builder
	b.Grow(len(text))
	nt.start = make([]int, 0, len(text)+1)
	nt.end = make([]int, 0, len(text)+1)
	var it norm.Iter
	it.InitString(norm.NFKC, text)
	for !it.Done() {
		from := it.Pos()
		seg := it.Next()
		to := it.Pos()
		for len(seg) > 0 {
			r, n := utf8.DecodeRune(seg)
			if !isInvisible(r) {
				b.Write(seg[:n])
				for k := 0; k < n; k++ {
					nt.start = append(nt.start, from)
					nt.end = append(nt.end, to)
				}
			}
			seg = seg[n:]
		}
	}
	nt.s = b.String()
	return nt
}

// origSpan maps the normalised span [a, b) back to the original text.
func (nt *normText) origSpan(a, b int) (int, int) {
	if nt.start == nil {
		return a, b
	}
	if a >= b {
		return nt.start[a], nt.start[a]
	}
	return nt.start[a], nt.end[b-1]
}

// foldToken lower-cases s and removes accents (combining marks after NFD).
func foldToken(s string) string {
	if isASCIIPlain(s) {
		return strings.ToLower(s)
	}
	d := norm.NFD.String(s)
	var b strings.Builder
	b.Grow(len(d))
	for _, r := range d {
		if unicode.Is(unicode.Mn, r) {
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}
