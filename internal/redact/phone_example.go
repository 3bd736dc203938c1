package redact

import (
	"slices"
	"unicode"
	"unicode/utf8"
)

// backToken is a word met walking back from a position: its folded letters
// ("" for a run of digits), and whether a sentence ends right after it (".",
// ";", "!", "?" or a new line between it and the token met before it).
type backToken struct {
	word string
	end  bool
}

// backTokens returns at most max tokens before s[:p], nearest first.
func backTokens(s string, p, max int) []backToken {
	var out []backToken
	end := false
	for p > 0 && len(out) < max {
		r, n := utf8.DecodeLastRuneInString(s[:p])
		switch {
		case unicode.IsLetter(r) || unicode.Is(unicode.Mn, r):
			w := lettersBefore(s, p)
			for p > 0 {
				r, n := utf8.DecodeLastRuneInString(s[:p])
				if !unicode.IsLetter(r) && !unicode.Is(unicode.Mn, r) {
					break
				}
				p -= n
			}
			out = append(out, backToken{w, end})
			end = false
			continue
		case unicode.IsDigit(r):
			for p > 0 && isAlnum(lastRune(s[:p])) {
				_, n := utf8.DecodeLastRuneInString(s[:p])
				p -= n
			}
			out = append(out, backToken{"", end})
			end = false
			continue
		case r == '.' || r == ';' || r == '!' || r == '?' || r == '\n':
			end = true
		}
		p -= n
	}
	return out
}

// exemplifiers introduce an example, written nearest word first: "e.g."
// is {"g", "e"}, "for example" is {"example", "for"}.
var exemplifiers = [][]string{
	{"g", "e"}, {"eg"}, {"e", "i"}, {"ie"}, {"example", "for"}, {"instance", "for"},
	{"as", "such"}, {"like"}, {"example"}, {"exemplo", "por"}, {"exemplo"}, {"ex", "p"},
	{"ex"}, {"tipo"}, {"como"}, {"say"},
}

// exampleWindow bounds the walk back from an exemplifier, in words.
const exampleWindow = 24

// exampleOfID reports a digit run at p given as an example of an id (issue
// 26 §1): an exemplifier ("e.g.", "for example", "such as", "like", "i.e.",
// "por exemplo", "ex.", ...) right before the number, and before it, in the
// same sentence or the one before and within exampleWindow words, an id word
// (see idWords: "ids", "order numbers", "protocolos") and no contact word
// (see contactWords: "mobile", "customer", "her", ...). A "code" after
// "area", "country" or "dialling" is a part of a phone number, not an id
// word. So "Order ids have ten digits, e.g. 4159977512" and "Ticket ids look
// like this. E.g. 2125550143" are ids, while "Customer phone numbers look
// like e.g. 2125550143", "Mobile numbers need the area code, e.g.
// 4155550167" and "use a format like 2125550143" are not.
func exampleOfID(s string, p int) bool {
	toks := backTokens(s, p, exampleWindow+2)
	k := exemplifierLen(toks)
	if k == 0 {
		return false
	}
	toks = toks[k:]
	id, ends := false, 0
	for i, t := range toks {
		if t.end {
			if ends++; ends > 1 {
				break // back past the sentence before the example
			}
		}
		switch {
		case t.word == "":
		case contactWords[t.word]:
			return false
		case inWords(idWords, t.word):
			id = id || !phoneCode(toks, i)
		}
	}
	return id
}

// phoneCodeWords, before "code", make it a part of a phone number.
var phoneCodeWords = map[string]bool{"area": true, "country": true, "dial": true, "dialling": true, "dialing": true, "calling": true}

// phoneCode reports a toks[i] "code"/"codes" after an area, country or
// dialling word (toks are nearest first, so that word is toks[i+1]).
func phoneCode(toks []backToken, i int) bool {
	w := toks[i].word
	return (w == "code" || w == "codes") && i+1 < len(toks) && !toks[i].end && phoneCodeWords[toks[i+1].word]
}

// exemplifierLen returns how many of toks (nearest first) make an
// exemplifier, 0 when they do not start with one.
func exemplifierLen(toks []backToken) int {
	for _, e := range exemplifiers {
		if len(toks) < len(e) {
			continue
		}
		words := make([]string, len(e))
		for i := range e {
			words[i] = toks[i].word
		}
		if slices.Equal(words, e) {
			return len(e)
		}
	}
	return 0
}
