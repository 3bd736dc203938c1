package redact

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	emailLocal = `[\p{L}\p{N}\p{M}._%+\-]*[\p{L}\p{N}\p{M}_%+\-]`
	emailLabel = `[\p{L}\p{N}\p{M}](?:[\p{L}\p{N}\p{M}\-]*[\p{L}\p{N}\p{M}])?`
	emailTLD   = `(?:\p{L}[\p{L}\p{M}]+|xn--[a-z0-9\-]+)`
	// "@" or a spelled-out "at"/"arroba", bracketed or between spaces.
	emailAt = `(?:@|\s+@\s+|\s*[\[(]\s*(?:at|arroba)\s*[\])]\s*|\s+(?:at|arroba)\s+)`
	// "." or a spelled-out "dot"/"ponto", bracketed or between spaces.
	emailDot = `(?:\.|\s*[\[(]\s*(?:dot|ponto)\s*[\])]\s*|\s+(?:dot|ponto)\s+)`
)

var (
	emailRe = regexp.MustCompile(`(?i)^` + emailLocal + `(` + emailAt + `)(` + emailLabel + `)(?:` + emailDot + emailLabel + `)*` + emailDot + emailTLD)
	// emailWhole validates a whole (canonicalised) address.
	emailWhole = regexp.MustCompile(`^` + emailLocal + `@` + emailLabel + `(?:\.` + emailLabel + `)*\.` + emailTLD + `$`)
)

var emailArticles = map[string]bool{
	"the": true, "a": true, "an": true, "o": true, "os": true, "as": true,
	"um": true, "uma": true, "my": true, "your": true, "this": true, "that": true,
}

// emailAnchors returns the offsets where an address could start: the start
// of the word before each "@" and before each word "at" or "arroba" (bare
// or bracketed). Running the anchored regexp only there keeps Detect
// linear in practice.
func emailAnchors(s string) []int {
	var out []int
	add := func(p int) {
		// back over spaces and an opening bracket, then over the local part
		for p > 0 {
			r, n := utf8.DecodeLastRuneInString(s[:p])
			if !(unicode.IsSpace(r) || r == '[' || r == '(') {
				break
			}
			p -= n
		}
		for p > 0 {
			r, n := utf8.DecodeLastRuneInString(s[:p])
			if !(isWordRune(r) || strings.ContainsRune("._%+-", r)) {
				break
			}
			p -= n
		}
		if len(out) == 0 || out[len(out)-1] != p {
			out = append(out, p)
		}
	}
	wstart := -1
	for i, r := range s {
		if r == '@' {
			add(i)
		}
		if unicode.IsLetter(r) {
			if wstart < 0 {
				wstart = i
			}
			continue
		}
		if wstart >= 0 {
			if w := s[wstart:i]; strings.EqualFold(w, "at") || strings.EqualFold(w, "arroba") {
				add(wstart)
			}
			wstart = -1
		}
	}
	if wstart >= 0 {
		if w := s[wstart:]; strings.EqualFold(w, "at") || strings.EqualFold(w, "arroba") {
			add(wstart)
		}
	}
	return out
}

// maxEmailLen bounds the text examined after an anchor.
const maxEmailLen = 512

// findEmails adds e-mail spans found in s to sp.
func findEmails(s string, sp *spans, known *KnownSubjects) {
	for _, p := range emailAnchors(s) {
		if sp.overlaps(p, p+1) {
			continue
		}
		win := s[p:min(len(s), p+maxEmailLen)]
		m := emailRe.FindStringSubmatchIndex(win)
		if m == nil {
			continue
		}
		for i := range m {
			if m[i] >= 0 {
				m[i] += p
			}
		}
		a, b := m[0], m[1]
		if a > 0 {
			// The local part must not continue a word on the left.
			r, _ := utf8.DecodeLastRuneInString(s[:a])
			if isWordRune(r) {
				continue
			}
		}
		at := s[m[2]:m[3]]
		spelled := !strings.Contains(at, "@")
		if spelled && !strings.ContainsAny(at, "[(") {
			// Bare word "at"/"arroba": the domain must be spelled out too
			// ("x at y dot com"), so "deployed at api.example.com" is a
			// host, not an address; and it must not start with an article.
			first := strings.ToLower(s[m[4]:m[5]])
			if emailArticles[first] || !spelledWordDotRe.MatchString(s[m[5]:b]) {
				continue
			}
		}
		if sp.overlaps(a, b) {
			continue
		}
		kinds := []Kind{KindEmail}
		if known != nil {
			if c, err := canonicalEmail(spelledToPlain(s[a:b])); err == nil && known.hasHandle(c) {
				kinds = append(kinds, KindSubject)
			}
		}
		sp.add(a, b, kinds...)
	}
}

var (
	spelledAtRe  = regexp.MustCompile(`(?i)` + emailAt)
	spelledDotRe = regexp.MustCompile(`(?i)` + emailDot)
	// spelledWordDotRe matches only a spelled-out dot.
	spelledWordDotRe = regexp.MustCompile(`(?i)\s*[\[(]\s*(?:dot|ponto)\s*[\])]\s*|\s+(?:dot|ponto)\s+`)
)

// spelledToPlain turns a spelled-out address into its plain form.
func spelledToPlain(s string) string {
	s = spelledAtRe.ReplaceAllString(s, "@")
	return spelledDotRe.ReplaceAllString(s, ".")
}
