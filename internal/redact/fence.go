package redact

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Fence finds the tags a prompt block is fenced with (the notes block's <agent_notes>, the
// knowledge context's <knowledge_context> and <evidence>) inside text, as a model reads
// them, and escapes them (MS-7: text inside a fence can neither close nor open one). It
// reads a normalised copy: format characters removed (a zero-width space inside the tag),
// NFKC (full-width "＜", "／" and letters), every space separator read as a space (an
// ideographic space), accents removed and case folded (a dotted capital "İ", a dotless
// "ı"), Cyrillic and Greek look-alikes folded, a backslash dropped ("<\/evidence>", as
// JSON escapes it), and look-alike angle brackets and slashes ("‹", "〈", "∕") read as "<"
// and "/". A tag is "<", optional spaces, an optional "/", optional spaces and one of the
// names as a whole word, whatever follows.
type Fence struct {
	re *regexp.Regexp
}

// NewFence returns the Fence of the tag names (lower case ASCII, e.g. "evidence").
func NewFence(names ...string) *Fence {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = regexp.QuoteMeta(n)
	}
	return &Fence{re: regexp.MustCompile(`<[ \t\r\n]*/?[ \t\r\n]*(?:` + strings.Join(q, "|") + `)\b`)}
}

// Has reports whether s holds something that reads as one of the fence's tags.
func (f *Fence) Has(s string) bool {
	sk, _ := fenceSkeleton(s)
	return f.re.MatchString(sk)
}

// Escape returns s with the "<" of every fence tag (whatever character wrote it) replaced
// by "&lt;"; everything else stays byte for byte.
func (f *Fence) Escape(s string) string {
	sk, at := fenceSkeleton(s)
	ms := f.re.FindAllStringIndex(sk, -1)
	if len(ms) == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 3*len(ms))
	last := 0
	for _, m := range ms {
		start, end := at[m[0]][0], at[m[0]][1]
		if start < last {
			continue
		}
		b.WriteString(s[last:start])
		b.WriteString("&lt;")
		last = end
	}
	b.WriteString(s[last:])
	return b.String()
}

// fenceLookAlikes are the characters read as "<" or "/" in a tag beyond what NFKC maps.
var fenceLookAlikes = map[rune]rune{
	'\u2039': '<', '\u3008': '<', '\u2329': '<', '\u276e': '<', '\u27e8': '<', '\u02c2': '<', '\u1438': '<',
	'\u2215': '/', '\u2044': '/', '\u29f8': '/', '\u2571': '/',
}

// fenceSkeleton returns the normalised copy of s the fence reads and, for each of its
// bytes, the span of the original rune it came from.
func fenceSkeleton(s string) (string, [][2]int) {
	var b strings.Builder
	b.Grow(len(s))
	at := make([][2]int, 0, len(s))
	for i, r := range s {
		n := utf8.RuneLen(r)
		if r == utf8.RuneError {
			n = 1
		}
		for _, c := range foldFenceRune(r) {
			var buf [utf8.UTFMax]byte
			k := utf8.EncodeRune(buf[:], c)
			b.Write(buf[:k])
			for j := 0; j < k; j++ {
				at = append(at, [2]int{i, i + n})
			}
		}
	}
	return b.String(), at
}

// foldFenceRune is what one rune of text reads as in a tag (nothing for a format
// character or a backslash).
func foldFenceRune(r rune) []rune {
	switch {
	case r == '\\' || isIgnorable(r):
		return nil
	case r < 0x80:
		return []rune{unicode.ToLower(r)}
	case unicode.Is(unicode.Zs, r):
		return []rune{' '}
	}
	if c, ok := fenceLookAlikes[r]; ok {
		return []rune{c}
	}
	var out []rune
	for _, c := range norm.NFD.String(norm.NFKC.String(string(r))) {
		if unicode.Is(unicode.Mn, c) || isIgnorable(c) {
			continue
		}
		if f, ok := confusables[c]; ok {
			c = f
		}
		if unicode.Is(unicode.Zs, c) {
			c = ' '
		}
		out = append(out, unicode.ToLower(c))
	}
	return out
}
