package redact

import (
	"regexp"
	"regexp/syntax"
	"strings"
)

// Go's regular expressions cost time in proportion to the text times the size of the
// expression; sixty of them over a megabyte take seconds. Each rule therefore carries its
// anchors: literal substrings one of which every match must contain (derived from the
// expression). A text holding none of them cannot match and is not scanned.

func init() {
	for i := range instRules {
		instRules[i].anchors = anchorsOf(instRules[i].re)
	}
}

// anchorsOf returns the anchors of re (nil: none known, always scan).
func anchorsOf(re *regexp.Regexp) []string {
	t, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return nil
	}
	a := required(t.Simplify())
	if minLen(a) < 3 {
		return nil
	}
	return a
}

// required returns substrings one of which every match of t contains, or nil.
func required(t *syntax.Regexp) []string {
	switch t.Op {
	case syntax.OpLiteral:
		if t.Flags&syntax.FoldCase != 0 {
			return nil
		}
		return []string{string(t.Rune)}
	case syntax.OpCapture, syntax.OpPlus:
		return required(t.Sub[0])
	case syntax.OpRepeat:
		if t.Min >= 1 {
			return required(t.Sub[0])
		}
	case syntax.OpConcat:
		var best []string
		for _, s := range t.Sub {
			if r := required(s); r != nil && (best == nil || minLen(r) > minLen(best) || minLen(r) == minLen(best) && len(r) < len(best)) {
				best = r
			}
		}
		return best
	case syntax.OpAlternate:
		var out []string
		for _, s := range t.Sub {
			r := required(s)
			if r == nil {
				return nil
			}
			out = append(out, r...)
		}
		return out
	}
	return nil
}

func minLen(a []string) int {
	if a == nil {
		return 0
	}
	m := -1
	for _, s := range a {
		if m < 0 || len(s) < m {
			m = len(s)
		}
	}
	return m
}

// mayMatch reports whether s holds one of the anchors (always, when there are none).
func mayMatch(s string, anchors []string) bool {
	if anchors == nil {
		return true
	}
	for _, a := range anchors {
		if strings.Contains(s, a) {
			return true
		}
	}
	return false
}
