package redact

import (
	"regexp"
	"strings"
)

// JoinTagsForCheck returns the extra text the gate should pass to Detect for
// a list of tags (GATE-1, AM-6): the joins of adjacent tags that really form
// an e-mail address, one per line, so an address split across tags is found.
// Tags cannot hold "@" (notes accept a-z 0-9 _ . : -), so a split address is
// a local part in one tag and its domain in the next:
//
//   - two adjacent tags are joined as "a@b" only when b is a dotted domain
//     (see tagDomain): ["ana", "gmail.com"], ["ana.silva", "example.com.br"];
//   - three adjacent tags are joined as "a@b.c" only when b is one domain
//     label and c a generic top-level domain ("com", "net", "org", "com.br",
//     ...: ["ana", "example", "com"]).
//
// Nothing else is joined: a bare word after another tag is never read as a
// domain, so a mailbox provider's name without its top-level domain
// (["deploy", "live"], ["handoff", "pm"], ["sso", "outlook"], ["billing",
// "orange"], ["refund", "gmail"], ["w1", "r7"]) is an ordinary tag, and
// ["ana", "gmail"] is not an address (issue 26 §1). The cost is a tag that is
// a bare domain name right after another tag (["billing", "stripe.com"]):
// that reads as an address; write the name without its domain. Fewer than
// two tags give "".
func JoinTagsForCheck(tags []string) string {
	if len(tags) < 2 {
		return ""
	}
	var b strings.Builder
	for i := 1; i < len(tags); i++ {
		if tagDomain(tags[i]) {
			b.WriteString(tags[i-1] + "@" + tags[i] + "\n")
		}
		if i >= 2 && genericTLDTags[tags[i]] && tagLabelRe.MatchString(tags[i-1]) {
			b.WriteString(tags[i-2] + "@" + tags[i-1] + "." + tags[i] + "\n")
		}
	}
	return b.String()
}

// genericTLDTags are the top-level domains a three-way tag split ends with:
// ["ana", "example", "com"] is read as "ana@example.com" too. Country codes
// ("br", "pt") are not among them, so ["refund", "orders", "br"] stays clean.
var genericTLDTags = map[string]bool{
	"com": true, "net": true, "org": true, "edu": true, "gov": true, "info": true, "biz": true,
	"com.br": true, "net.br": true, "org.br": true, "com.pt": true, "co.uk": true,
}

// tagLabelRe is one domain label as a tag holds it (lower case).
var tagLabelRe = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$`)

// mailTLDs are the top-level domains of more than two letters that a domain
// tag may end with to make an address with the tag before it. Two-letter
// country codes count too (see tagDomain). Newer generic names that tags use
// as words ("app", "dev", "prod", "live", "cloud") are left out on purpose:
// ["deploy", "api.prod"] and ["config", "app.yaml"] are not addresses.
var mailTLDs = map[string]bool{
	"com": true, "net": true, "org": true, "edu": true, "gov": true, "mil": true, "int": true,
	"info": true, "biz": true, "name": true, "pro": true, "mobi": true, "email": true,
	"online": true, "site": true, "tech": true, "store": true, "shop": true, "xyz": true,
}

// fileTLDs are two-letter country codes that are far more often a file
// extension in a tag ("readme.md", "deploy.sh", "main.tf") than the end of a
// mail domain.
var fileTLDs = map[string]bool{
	"md": true, "py": true, "rs": true, "sh": true, "ps": true, "so": true, "tf": true,
	"cc": true, "js": true, "ts": true, "go": true, "rb": true, "cs": true,
}

// tagDomain reports whether a tag is a dotted domain that, after a local
// part in the tag before it, makes an address: two or more labels, the last
// a two-letter country code (not one of fileTLDs) or one of mailTLDs, and a
// name before the suffix ("gmail.com", "empresa.com.br", "empresa.pt"; not
// "com.br" alone, "v1.2", "app.yaml", "readme.md" or "api.prod").
func tagDomain(tag string) bool {
	labels := strings.Split(tag, ".")
	n := len(labels)
	if n < 2 {
		return false
	}
	for _, l := range labels {
		if !tagLabelRe.MatchString(l) {
			return false
		}
	}
	tld := labels[n-1]
	if !(len(tld) == 2 && isLetters(tld) && !fileTLDs[tld]) && !mailTLDs[tld] {
		return false
	}
	// "com.br", "co.uk": a suffix alone has no name to receive mail.
	return !(n == 2 && len(tld) == 2 && secondLevels[labels[0]])
}

// isLetters reports whether s is made of a-z only.
func isLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return s != ""
}

// NoteText is the text the gate passes to Detect for a note's title, body and
// tags (AM-6, GATE-1): each part on its own line and all of them concatenated
// without separator (JoinForCheck, tags joined by spaces), so a value split
// across parts is found, then the joins of adjacent tags that form an address
// (JoinTagsForCheck). Every write path of notes checks this text
// (notes.GateText), and so does the labelled corpus of the gate.
func NoteText(title, body string, tags []string) string {
	s := JoinForCheck(title, body, strings.Join(tags, " "))
	if t := JoinTagsForCheck(tags); t != "" {
		s += "\n" + t
	}
	return s
}
