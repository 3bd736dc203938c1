package redact

import (
	"html"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// normText is the normalised text (see the package doc: ignorable characters
// removed, NFKC, digits, dashes and spaces folded to ASCII) and for each of
// its bytes the span of the original text it came from.
type normText struct {
	s     string
	start []int // start[i]: original offset of the segment that produced byte i
	end   []int // end[i]: original end offset of that segment
	orig  string
}

// isIgnorable reports the characters removed before detection: every format
// character (Unicode category Cf: zero-width spaces and joiners, bidi marks
// and embeddings/overrides/isolates U+200E/F, U+202A–202E, U+2066–2069,
// invisible operators U+2061–2064, U+180E, U+FEFF, the soft hyphen U+00AD,
// ...), variation selectors and the other default-ignorable code points
// (U+034F, Hangul fillers, ...). They render as nothing and would otherwise
// split a value in two.
func isIgnorable(r rune) bool {
	if r < 0x80 {
		return false
	}
	return unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Variation_Selector, r) ||
		unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r)
}

// digitValue returns the value of a decimal digit of any script (category
// Nd). Unicode encodes every decimal digit in contiguous runs of ten, from
// zero to nine, so the value is the distance from the run's start modulo 10.
func digitValue(r rune) (byte, bool) {
	if r >= '0' && r <= '9' {
		return byte(r - '0'), true
	}
	if r < 0x80 || !unicode.Is(unicode.Nd, r) {
		return 0, false
	}
	z := r
	for unicode.Is(unicode.Nd, z-1) {
		z--
	}
	return byte((r - z) % 10), true
}

// foldRune maps a rune of NFKC text to the ASCII character detection expects:
// any decimal digit to '0'-'9', any dash (category Pd) and U+2212 (minus) to
// '-', any space separator (category Zs) to ' '. It returns 0 when r is kept
// as it is.
func foldRune(r rune) byte {
	if r < 0x80 {
		return 0
	}
	if v, ok := digitValue(r); ok {
		return '0' + v
	}
	if r == '\u2212' || unicode.Is(unicode.Pd, r) {
		return '-'
	}
	if unicode.Is(unicode.Zs, r) {
		return ' '
	}
	return 0
}

func isASCIIPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// normalize returns the normalised form of text with the offset map. It works
// in three steps: ignorable characters are removed (so they cannot block NFKC
// composition either), the rest is NFKC-normalised, and digits, dashes and
// spaces of any script are folded to ASCII. Each byte of the result remembers
// the span of the original text its NFKC segment came from.
func normalize(text string) *normText {
	nt := &normText{orig: text}
	dec, d0s, d0e := decodeEscapes(text)
	if d0s == nil && isASCIIPlain(text) {
		// ASCII is NFKC-stable and holds nothing to remove or fold.
		nt.s = text
		return nt
	}
	stripped, o1s, o1e := stripIgnorable(dec, d0s, d0e)
	nfkcFold(nt, stripped, o1s, o1e)
	return nt
}

// stripIgnorable is normalize's step 1: dec without its ignorable characters (so they cannot
// block NFKC composition either), and for each kept byte the original span [o1s, o1e) of its
// rune, through the decoded escapes' spans d0s/d0e (nil: dec is the original text).
func stripIgnorable(dec string, d0s, d0e []int) (stripped string, o1s, o1e []int) {
	var s1 strings.Builder
	s1.Grow(len(dec))
	o1s = make([]int, 0, len(dec)+1)
	o1e = make([]int, 0, len(dec)+1)
	for i, r := range dec {
		n := utf8.RuneLen(r)
		if r == utf8.RuneError {
			_, n = utf8.DecodeRuneInString(dec[i:])
		}
		if isIgnorable(r) {
			continue
		}
		s1.WriteString(dec[i : i+n])
		oa, ob := i, i+n
		if d0s != nil {
			oa, ob = d0s[i], d0e[i+n-1]
		}
		for k := 0; k < n; k++ {
			o1s = append(o1s, oa)
			o1e = append(o1e, ob)
		}
	}
	return s1.String(), o1s, o1e
}

// nfkcFold is normalize's steps 2 and 3: stripped NFKC-normalised segment by segment, then
// digits, dashes and spaces folded to ASCII, into nt.s; each byte of the result gets in
// nt.start/nt.end the original span of its segment (from o1s/o1e).
func nfkcFold(nt *normText, stripped string, o1s, o1e []int) {
	var b strings.Builder
	b.Grow(len(stripped))
	nt.start = make([]int, 0, len(stripped)+1)
	nt.end = make([]int, 0, len(stripped)+1)
	var it norm.Iter
	it.InitString(norm.NFKC, stripped)
	for !it.Done() {
		from := it.Pos()
		seg := it.Next()
		to := it.Pos()
		if to <= from {
			continue
		}
		oa, ob := o1s[from], o1e[to-1]
		for len(seg) > 0 {
			r, n := utf8.DecodeRune(seg)
			w := 0
			switch {
			case isIgnorable(r): // NFKC never produces one; be safe
			case foldRune(r) != 0:
				b.WriteByte(foldRune(r))
				w = 1
			default:
				b.Write(seg[:n])
				w = n
			}
			for k := 0; k < w; k++ {
				nt.start = append(nt.start, oa)
				nt.end = append(nt.end, ob)
			}
			seg = seg[n:]
		}
	}
	nt.s = b.String()
}

// origSpan maps the normalised span [a, b) back to the original text.
func (nt *normText) origSpan(a, b int) (int, int) {
	if nt.start == nil {
		return a, b
	}
	if a >= len(nt.start) {
		return len(nt.orig), len(nt.orig)
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

// maxEntityLen bounds the length of an HTML character reference ("&#x0040;",
// "&commat;").
const maxEntityLen = 12

// decodeEscapes decodes the escapes that hide an address's "@" or "." (or
// any other character) from detection: percent-escapes of the characters an
// address is written with ("%40" for "@", "%2E" for ".", "%2B", "%2D", "%5F",
// any case) and of ASCII letters ("gm%61il" for "gmail"), and HTML character
// references (see htmlRef). It returns the decoded
// text and, for each of its bytes, the original span it came from; the
// spans are nil when nothing was decoded.
func isASCIILetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// addressChars are the characters an HTML reference without ";" may decode
// to: those an address is written with.
const addressChars = "@.+-_"

// htmlRef reads the HTML character reference at the start of s (which starts
// with "&") and returns its length in bytes and what it stands for, or 0.
// A reference ending in ";" (numeric "&#64;", "&#x40;", or named "&commat;",
// "&period;", "&lt;", ...) decodes to any character. Without ";" a numeric
// reference ("&#64", "&#x40", the longest run of its digits that decodes,
// so "&#x40example" is "@example") decodes to an address character or an ASCII letter or digit,
// and a named one ("&commat", "&period", the longest name that is one,
// glued to what follows: "&commatgmail.com") only to an address character,
// so "AT&T", "R&D" and "&copy" in prose stay as they are.
func htmlRef(s string) (int, string) {
	if end := strings.IndexByte(s[1:], ';'); end >= 0 {
		ref := s[:end+2]
		if rep := html.UnescapeString(ref); rep != ref && !strings.ContainsRune(rep, utf8.RuneError) {
			return len(ref), rep
		}
	}
	if len(s) > 2 && s[1] == '#' {
		base, j := 10, 2
		if s[2] == 'x' || s[2] == 'X' {
			base, j = 16, 3
		}
		k := j
		for k < len(s) && (isDigit(s[k]) || base == 16 && strings.IndexByte("abcdefABCDEF", s[k]) >= 0) {
			k++
		}
		// Without ";" the reference may be glued to digits of the text
		// ("&#x40example"): the longest prefix that decodes wins.
		for ; k > j; k-- {
			v, err := strconv.ParseUint(s[j:k], base, 16)
			if err != nil || v >= utf8.RuneSelf {
				continue
			}
			if c := byte(v); strings.IndexByte(addressChars, c) >= 0 || isASCIILetter(c) || isDigit(c) {
				return k, string(rune(c))
			}
		}
		return 0, ""
	}
	k := 1
	for k < len(s) && isASCIILetter(s[k]) {
		k++
	}
	for ; k > 2; k-- {
		ref := s[:k] + ";"
		if rep := html.UnescapeString(ref); rep != ref && len(rep) == 1 && strings.IndexByte(addressChars, rep[0]) >= 0 {
			return k, rep
		}
	}
	return 0, ""
}

func decodeEscapes(text string) (string, []int, []int) {
	if strings.IndexByte(text, '%') < 0 && strings.IndexByte(text, '&') < 0 {
		return text, nil, nil
	}
	var b strings.Builder
	var ds, de []int
	last := 0 // text[last:i] is copied as it is
	flush := func(i int) {
		for k := last; k < i; k++ {
			ds = append(ds, k)
			de = append(de, k+1)
		}
		b.WriteString(text[last:i])
	}
	emit := func(i, j int, rep string) {
		flush(i)
		b.WriteString(rep)
		for k := 0; k < len(rep); k++ {
			ds = append(ds, i)
			de = append(de, j)
		}
		last = j
	}
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '%':
			if i+2 < len(text) {
				if v, err := strconv.ParseUint(text[i+1:i+3], 16, 8); err == nil && (strings.IndexByte("@.+-_", byte(v)) >= 0 || isASCIILetter(byte(v))) {
					emit(i, i+3, string(rune(v)))
					i += 2
				}
			}
		case '&':
			ref, rep := htmlRef(text[i:min(len(text), i+maxEntityLen)])
			if ref == 0 {
				continue
			}
			emit(i, i+ref, rep)
			i += ref - 1
		}
	}
	if ds == nil {
		return text, nil, nil
	}
	flush(len(text))
	return b.String(), ds, de
}
