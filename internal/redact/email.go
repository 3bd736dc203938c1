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
	emailOpen  = `[\[({<]`
	emailClose = `[\])}>]`
	// "@" or a spelled-out "at"/"arroba", bracketed or between spaces.
	emailAt = `(?:@|\s+@\s+|\s*` + emailOpen + `\s*(?:at|arroba)\s*` + emailClose + `\s*|\s+(?:at|arroba)\s+)`
	// "." (also with a space before it: "gmail . com"), or a spelled-out
	// "dot"/"ponto", bracketed or between spaces.
	emailDot = `(?:\.|\s+\.\s*|\s*` + emailOpen + `\s*(?:dot|ponto)\s*` + emailClose + `\s*|\s+(?:dot|ponto)\s+)`
)

var (
	emailRe = regexp.MustCompile(`(?i)^` + emailLocal + `(` + emailAt + `)(` + emailLabel + `)(?:` + emailDot + emailLabel + `)*` + emailDot + emailTLD)
	// emailWhole validates a whole (canonicalised) address.
	emailWhole = regexp.MustCompile(`^` + emailLocal + `@` + emailLabel + `(?:\.` + emailLabel + `)*\.` + emailTLD + `$`)
	// emailDomainRe is "@" and a domain, after a quoted local part.
	emailDomainRe = regexp.MustCompile(`(?i)^@` + emailLabel + `(?:\.` + emailLabel + `)*\.` + emailTLD)
	// emailNoTLDRe is a local part glued to "@" and a domain label, checked
	// against mailProviders when emailRe finds no address ("ana@gmail").
	emailNoTLDRe = regexp.MustCompile(`^` + emailLocal + `@(` + emailLabel + `)`)
)

// atVerbs are words that, before a bare "at", read as prose, not as the local
// part of an address: "sign in at outlook.com", "hosted at empresa.pt".
var atVerbs = map[string]bool{
	"in": true, "up": true, "out": true, "on": true, "off": true, "is": true, "are": true,
	"was": true, "were": true, "be": true, "been": true, "it": true, "log": true,
	"login": true, "sign": true, "signed": true, "logged": true, "available": true,
	"hosted": true, "deployed": true, "found": true, "located": true, "online": true,
	"live": true, "me": true, "us": true, "them": true, "look": true, "stay": true,
	"work": true, "works": true, "worked": true, "working": true, "account": true,
	"accounts": true, "mailbox": true, "inbox": true, "email": true, "mail": true,
	"e-mail": true, "address": true, "ele": true, "ela": true, "conta": true,
}

// mailProviders are the first domain labels of well-known mailbox providers.
// After a bare-word "at" ("ana at gmail.com") or without a top-level domain
// ("ana@gmail") they make an address; they also keep an address an address
// in the host-spec exceptions (user@host:path, scheme://user@host).
var mailProviders = map[string]bool{
	"gmail": true, "googlemail": true, "hotmail": true, "outlook": true, "live": true,
	"msn": true, "yahoo": true, "ymail": true, "rocketmail": true, "icloud": true,
	"aol": true, "proton": true, "protonmail": true, "pm": true, "tutanota": true,
	"tuta": true, "gmx": true, "yandex": true, "zoho": true, "fastmail": true,
	"uol": true, "bol": true, "terra": true, "ig": true, "globo": true, "globomail": true,
	"r7": true, "sapo": true, "libero": true, "virgilio": true, "orange": true,
	"laposte": true, "wanadoo": true, "t-online": true, "seznam": true, "qq": true,
	"163": true, "126": true, "naver": true, "daum": true, "hanmail": true,
	"rediffmail": true, "comcast": true, "sbcglobal": true, "btinternet": true,
	"bigpond": true, "mailinator": true,
}

// secondLevels are the generic second-level labels of country domains
// ("com.br", "co.uk", "org.pt").
var secondLevels = map[string]bool{
	"com": true, "co": true, "net": true, "org": true, "gov": true, "edu": true,
	"ac": true, "ne": true, "or": true, "go": true, "gob": true, "nom": true,
}

// vanityTLDs are country codes mostly used as generic names for services
// ("fly.io", "x.ai"): a bare "at" before them reads as a host.
var vanityTLDs = map[string]bool{
	"io": true, "ai": true, "co": true, "me": true, "tv": true, "sh": true, "gg": true,
	"ly": true, "to": true, "cc": true, "fm": true, "so": true, "ws": true, "im": true,
	"gl": true, "vc": true, "la": true, "is": true, "dev": true,
}

// countryMailDomain reports a plain domain (labels joined by "." without
// spaces) made of a name and a country code, with at most a generic
// second level between them: "empresa.pt", "empresa.com.br", "firm.co.uk".
// A domain with a further subdomain ("api.acme.com.br") is a host.
func countryMailDomain(dom string) bool {
	if strings.ContainsFunc(dom, unicode.IsSpace) {
		return false
	}
	labels := strings.Split(strings.ToLower(dom), ".")
	n := len(labels)
	cc := labels[n-1]
	if len(cc) != 2 || vanityTLDs[cc] {
		return false
	}
	switch n {
	case 2:
		return true
	case 3:
		return secondLevels[labels[1]]
	}
	return false
}

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
			if !(unicode.IsSpace(r) || r == '[' || r == '(' || r == '{' || r == '<') {
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

// emailConnector reports whether s[i:] starts with what may join the parts
// of an address across spaces: "@", ".", an opening or closing bracket, or
// one of the words at, arroba, dot, ponto. It returns the connector's length
// (0 when there is none).
func emailConnector(s string, i int) int {
	if i >= len(s) {
		return 0
	}
	if strings.IndexByte("@.[({<])}>", s[i]) >= 0 {
		return 1
	}
	for _, w := range [...]string{"arroba", "ponto", "dot", "at"} {
		if len(s)-i >= len(w) && strings.EqualFold(s[i:i+len(w)], w) {
			if j := i + len(w); j == len(s) || !isWordRune(firstRune(s[j:])) {
				return len(w)
			}
		}
	}
	return 0
}

func firstRune(s string) rune {
	r, _ := utf8.DecodeRuneInString(s)
	return r
}

// emailWindowEnd returns where the text an address starting at p could
// cover ends: at most maxEmailLen bytes, stopping at a character no address
// form holds, or at spaces that neither follow nor precede a connector (see
// emailConnector), or before a second "@". The regexp then runs on a window about the size of the
// address, so many addresses in a row cost time linear in the text.
func emailWindowEnd(s string, p int) int {
	limit := min(len(s), p+maxEmailLen)
	i := p
	prevConn := false
	seenAt := false
	for i < limit {
		c := s[i]
		switch {
		case c == '@' && seenAt:
			// An address holds one "@": the window ends before a second
			// one, so a text of many "a@" costs linear time.
			return i
		case c == '@':
			seenAt = true
			i++
			prevConn = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			j := i + 1
			for j < limit && (s[j] == ' ' || s[j] == '\t' || s[j] == '\n' || s[j] == '\r' || s[j] == '\f' || s[j] == '\v') {
				j++
			}
			if !prevConn && emailConnector(s, j) == 0 {
				return i
			}
			i = j
		case strings.IndexByte("@.[({<])}>", c) >= 0:
			i++
			prevConn = true
		case strings.IndexByte("_%+-", c) >= 0:
			i++
			prevConn = false
		default:
			// a word: a connector word as a whole, or part of a label
			j := i
			for j < limit {
				r, n := utf8.DecodeRuneInString(s[j:])
				if !isWordRune(r) {
					break
				}
				j += n
			}
			if j == i {
				return i // a character no address holds
			}
			prevConn = emailConnector(s[:j], i) > 0
			i = j
		}
	}
	return limit
}

// maxQuotedLocal bounds the quoted local part of an address.
const maxQuotedLocal = 64

// findQuotedEmails adds the addresses with a quoted local part
// ("\"ana smith\"@example.com", RFC 5322): a closing '"' glued to "@" and a
// domain, the opening '"' at most maxQuotedLocal bytes before it on the same
// line. The whole address, quotes included, is the span.
func findQuotedEmails(s string, sp *spans) {
	for i := 1; i < len(s); i++ {
		if s[i] != '@' || s[i-1] != '"' {
			continue
		}
		lo := max(0, i-1-maxQuotedLocal)
		open := strings.LastIndexByte(s[lo:i-1], '"')
		if open < 0 {
			continue
		}
		open += lo
		if open+1 == i-1 || strings.ContainsAny(s[open:i], "\n\r") {
			continue
		}
		m := emailDomainRe.FindStringIndex(s[i:min(len(s), i+maxEmailLen)])
		if m == nil || sp.overlaps(open, i+m[1]) {
			continue
		}
		sp.add(open, i+m[1], KindEmail)
	}
}

// findEmails adds e-mail spans found in s to sp.
func findEmails(s string, sp *spans, known *KnownSubjects) {
	findQuotedEmails(s, sp)
	for _, p := range emailAnchors(s) {
		if sp.overlaps(p, p+1) {
			continue
		}
		win := s[p:emailWindowEnd(s, p)]
		m := emailRe.FindStringSubmatchIndex(win)
		if m == nil {
			addProviderOnly(s, p, win, sp)
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
		first := strings.ToLower(s[m[4]:m[5]])
		spelled := !strings.Contains(at, "@")
		if spelled && !strings.ContainsAny(at, "[({<") {
			// Bare word "at"/"arroba": see the package doc. The domain
			// must not start with an article, and must be a mail
			// provider's, spelled out ("x at y dot com"), or a country
			// domain without subdomain ("x at empresa.com.br"); so
			// "deployed at api.example.com" is a host, not an address.
			// A local part that is a common word before "at" ("log in
			// at outlook.com") reads as prose.
			dom := s[m[4]:b]
			if emailArticles[first] || atVerbs[strings.ToLower(s[a:m[2]])] || !(mailProviders[first] || spelledWordDotRe.MatchString(dom) || countryMailDomain(dom)) {
				continue
			}
		}
		if !spelled && !mailProviders[first] && hostSpec(s, a, b) {
			continue
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
	spelledWordDotRe = regexp.MustCompile(`(?i)\s*` + emailOpen + `\s*(?:dot|ponto)\s*` + emailClose + `\s*|\s+(?:dot|ponto)\s+`)
)

// spelledToPlain turns a spelled-out address into its plain form.
func spelledToPlain(s string) string {
	s = spelledAtRe.ReplaceAllString(s, "@")
	return spelledDotRe.ReplaceAllString(s, ".")
}

// hostSpec reports an address-shaped s[a:b] that is a host specification:
// scp-style "user@host:path" (followed by ":" and a path or port character,
// as in "git@github.com:acme/tools.git") or the user information of a URL
// ("ssh://git@github.com/acme").
func hostSpec(s string, a, b int) bool {
	if strings.HasSuffix(s[:a], "://") {
		return true
	}
	if b+1 < len(s) && s[b] == ':' {
		r, _ := utf8.DecodeRuneInString(s[b+1:])
		return isWordRune(r) || strings.ContainsRune("/~._-", r)
	}
	return false
}

// addProviderOnly adds an address without top-level domain at p when the
// domain is a well-known mail provider's: "ana@gmail" (not "user@localhost").
func addProviderOnly(s string, p int, win string, sp *spans) {
	m := emailNoTLDRe.FindStringSubmatchIndex(win)
	if m == nil || !mailProviders[strings.ToLower(win[m[2]:m[3]])] {
		return
	}
	a, b := p, p+m[1]
	if a > 0 && isWordRune(lastRune(s[:a])) {
		return
	}
	if b < len(s) {
		r, _ := utf8.DecodeRuneInString(s[b:])
		if isWordRune(r) || r == '-' {
			return
		}
	}
	if sp.overlaps(a, b) {
		return
	}
	sp.add(a, b, KindEmail)
}
