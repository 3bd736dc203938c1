package redact

import (
	"strings"
	"unicode/utf8"
)

// Spaced values: a value written one character at a time with single spaces
// between the characters ("a n a @ e x a m p l e . c o m",
// "4 1 5 5 5 5 0 1 3 2") is read without the spaces.

const (
	// minSpacedEmail is the fewest single-character tokens of a spaced run
	// holding "@" that is read as one word ("a@b.co" has six).
	minSpacedEmail = 6
	// minSpacedDigits is the fewest single digits of a spaced run of digits
	// that is read as one number.
	minSpacedDigits = 10
	// maxSpacedDigits is the most: a longer number is no phone (E.164 has
	// at most 15 digits) and is left to the first pass, which reads it
	// spaced.
	maxSpacedDigits = 15
	// minSpacedWord is the fewest single-character tokens of a spaced run
	// next to an address word that is read as one word ("u o l").
	minSpacedWord = 3
)

// addressWords are the words that join the parts of a spelled-out address.
var addressWords = map[string]bool{
	"at": true, "[at]": true, "(at)": true, "{at}": true, "<at>": true, "arroba": true, "@": true,
	"dot": true, "[dot]": true, "(dot)": true, "{dot}": true, "<dot>": true, "ponto": true,
}

// addressChunk reports whether the spaced run s[a:b] is a part of a
// spelled-out address: made of letters, digits and ". - _" only, with an
// address word ("at", "dot", "arroba", "ponto", "@", bracketed or not) right
// before or after it ("ana at g m a i l dot com", "a n a at gmail dot com").
func addressChunk(s string, a, b int) bool {
	for i := a; i < b; i++ {
		c := s[i]
		if !(c == ' ' || c == '.' || c == '-' || c == '_' || isDigit(c) || isASCIILetter(c) || c >= utf8.RuneSelf) {
			return false
		}
	}
	before := strings.TrimRight(s[:a], " ")
	if k := strings.LastIndexAny(before, " \t\n"); k >= 0 {
		before = before[k+1:]
	}
	after := strings.TrimLeft(s[b:], " ")
	if k := strings.IndexAny(after, " \t\n"); k >= 0 {
		after = after[:k]
	}
	return addressWords[strings.ToLower(before)] || addressWords[strings.ToLower(after)]
}

// collapsed is a copy of the normalised text with the spaces of the spaced
// runs removed; at[i] is the offset in the normalised text of byte i.
type collapsed struct {
	s  string
	at []int
}

// collapseSpaced finds the spaced runs of s: maximal sequences of tokens of
// one character each (one rune, not a space) separated by exactly one " "
// (the last token may carry trailing punctuation, which is not collapsed).
// A run holding "@" with at least minSpacedEmail tokens is collapsed whole;
// in the other runs, each stretch of minSpacedDigits to maxSpacedDigits
// single digits in a row is collapsed. It returns nil when nothing is collapsed, so the
// extra detection pass is only paid for texts that have such runs.
func collapseSpaced(s string) *collapsed {
	cuts := spacedCuts(s)
	if len(cuts) == 0 {
		return nil
	}
	return applyCuts(s, cuts)
}

// spacedTok is a one-character token of a spaced run: s[a:b].
type spacedTok struct{ a, b int }

// spacedCuts returns the spans [a, b) of s whose spaces collapseSpaced removes, in order.
func spacedCuts(s string) [][2]int {
	var cuts [][2]int
	var run []spacedTok
	closeRun := func() {
		cuts = append(cuts, runCuts(s, run)...)
		run = run[:0]
	}
	i := 0
	for i < len(s) {
		if isSpaceByte(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && !isSpaceByte(s[j]) {
			j++
		}
		// One rune, or one rune and trailing punctuation that ends the
		// run ("... 3 2." or "... c o m,").
		_, n := utf8.DecodeRuneInString(s[i:j])
		trailing := i+n < j && strings.Trim(s[i+n:j], ".,;:!?)]}\"'") == ""
		if i+n != j && !trailing {
			closeRun()
		} else {
			if len(run) > 0 && !(run[len(run)-1].b+1 == i && s[i-1] == ' ') {
				closeRun()
			}
			run = append(run, spacedTok{i, i + n})
			if trailing {
				closeRun()
			}
		}
		i = j
	}
	closeRun()
	return cuts
}

// runCuts returns the cuts of one spaced run: the whole run when it holds "@" and has at
// least minSpacedEmail tokens, or is an address chunk of at least minSpacedWord; otherwise
// each stretch of minSpacedDigits to maxSpacedDigits single digits in a row.
func runCuts(s string, run []spacedTok) [][2]int {
	if len(run) < 2 {
		return nil
	}
	whole := [2]int{run[0].a, run[len(run)-1].b}
	hasAt := false
	for _, t := range run {
		if s[t.a] == '@' {
			hasAt = true
			break
		}
	}
	if hasAt && len(run) >= minSpacedEmail {
		return [][2]int{whole}
	}
	if len(run) >= minSpacedWord && addressChunk(s, whole[0], whole[1]) {
		return [][2]int{whole}
	}
	var cuts [][2]int
	for i := 0; i < len(run); {
		j := i
		for j < len(run) && isDigit(s[run[j].a]) {
			j++
		}
		if j-i >= minSpacedDigits && j-i <= maxSpacedDigits {
			cuts = append(cuts, [2]int{run[i].a, run[j-1].b})
		}
		i = max(j, i+1)
	}
	return cuts
}

// applyCuts returns s with the spaces inside each cut removed, and the index in s of every
// byte kept.
func applyCuts(s string, cuts [][2]int) *collapsed {
	c := &collapsed{at: make([]int, 0, len(s))}
	var b strings.Builder
	b.Grow(len(s))
	pos := 0
	for _, cut := range cuts {
		for k := pos; k < cut[0]; k++ {
			c.at = append(c.at, k)
		}
		b.WriteString(s[pos:cut[0]])
		for k := cut[0]; k < cut[1]; k++ {
			if s[k] != ' ' {
				b.WriteByte(s[k])
				c.at = append(c.at, k)
			}
		}
		pos = cut[1]
	}
	for k := pos; k < len(s); k++ {
		c.at = append(c.at, k)
	}
	b.WriteString(s[pos:])
	c.s = b.String()
	return c
}

func isSpaceByte(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
