package auth

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/mtibben/confusables"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
	"golang.org/x/text/unicode/rangetable"
	"golang.org/x/text/unicode/runenames"

	"github.com/agentmemory/agentmemory/internal/fault"
)

// ConfusablesVersion is the Unicode version of the TR39 confusables data that
// SamePersonName uses (github.com/mtibben/confusables, BSD-3-Clause, generated from the
// Unicode 13.0.0 confusables.txt of 2020-02-13). A person name may hold only characters
// assigned in this version (ValidatePersonName), so that no character of a name is newer
// than the data that compares it.
const ConfusablesVersion = "13.0.0"

// assignedAtData is every code point assigned in ConfusablesVersion.
var assignedAtData = rangetable.Assigned(ConfusablesVersion)

// invisibleSymbols are graphic characters (not format, not default-ignorable) that render as
// nothing or as a blank box, so a name holding one looks like the name without it.
var invisibleSymbols = map[rune]bool{
	0x2800:  true, // BRAILLE PATTERN BLANK
	0xFFFC:  true, // OBJECT REPLACEMENT CHARACTER
	0xFFFD:  true, // REPLACEMENT CHARACTER (a decoding error, never a name)
	0x3164:  true, // HANGUL FILLER
	0xFFA0:  true, // HALFWIDTH HANGUL FILLER
	0x115F:  true, // HANGUL CHOSEONG FILLER
	0x1160:  true, // HANGUL JUNGSEONG FILLER
	0x2062:  true, // INVISIBLE TIMES (also Cf)
	0x1D159: true, // MUSICAL SYMBOL NULL NOTEHEAD
}

// ValidatePersonName checks the name of a person key at mint (the two-person rule of change
// requests compares these names, README "Change requests"): 1-120 bytes of UTF-8 holding at
// least one letter, with plain spaces (U+0020) as the only white space, and none of: control
// characters (Cc), format characters (Cf, e.g. zero-width joiners, bidi controls), private-use
// (Co) or surrogate (Cs) code points, characters unassigned in ConfusablesVersion, variation
// selectors and other default-ignorable code points, and the invisible symbols above (U+2800,
// U+FFFC, ...). Errors are fault.Invalid "invalid_member" with member "name"; the message names
// the offending code point (U+XXXX), never the name.
func ValidatePersonName(name string) error {
	if strings.TrimSpace(name) == "" || len(name) > 120 || !utf8.ValidString(name) {
		return nameError("name must be 1-120 characters of UTF-8")
	}
	letter := false
	for _, r := range name {
		if why := refusedInName(r); why != "" {
			return nameError("name must not hold %s (U+%04X)", why, r)
		}
		letter = letter || unicode.IsLetter(r)
	}
	if !letter {
		return nameError("name must hold at least one letter")
	}
	return nil
}

func nameError(format string, args ...any) error {
	return fault.New(fault.Invalid, "invalid_member", format, args...).With("member", "name")
}

// refusedInName names the class of r when a person name may not hold it, else "".
func refusedInName(r rune) string {
	switch {
	case r == ' ':
		return ""
	case unicode.Is(unicode.Cc, r):
		return "a control character"
	case unicode.Is(unicode.Cf, r):
		return "a format (invisible) character"
	case unicode.Is(unicode.Co, r):
		return "a private-use character"
	case unicode.Is(unicode.Cs, r) || !unicode.Is(assignedAtData, r):
		return "an unassigned character (or one newer than Unicode " + ConfusablesVersion + ")"
	case unicode.IsSpace(r) || unicode.In(r, unicode.Zs, unicode.Zl, unicode.Zp):
		return "white space other than a plain space"
	case unicode.In(r, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point) || invisibleSymbols[r]:
		return "an invisible character"
	}
	return ""
}

// SamePersonName reports whether two person names name the same person however spelled (the
// two-person rule, README "Change requests"): other case, white space, punctuation and symbols,
// invisible characters, combining marks (so NFD and NFC, and accents, aside), compatibility
// forms, small capitals and look-alike letters of other scripts (Unicode TR39 confusables) all
// count as the same name. It compares two forms of each name and answers true when either
// matches: the TR39 skeleton of the NFKC case-folded name (case-insensitive), and the
// case-folded skeleton of the NFKC name (which keeps "I" a look-alike of "l"). Names left with
// no letter or digit compare equal to each other (such old names cannot be told apart, so they
// never approve each other's changes). Stored names minted before ValidatePersonName existed
// are compared the same way, at approval time. Known limit: a name mixing a case change with
// a case-sensitive look-alike in the same name ("bIII" for "Bill") matches neither form.
func SamePersonName(a, b string) bool {
	fa, fb := personForms(a), personForms(b)
	if fa[0] == "" || fb[0] == "" {
		return fa[0] == fb[0]
	}
	return fa[0] == fb[0] || fa[1] == fb[1]
}

// personForms returns the two comparison forms of name (SamePersonName).
func personForms(name string) [2]string {
	fold := cases.Fold() // a Caser is not safe for concurrent use: one per call
	n := smallCapitals(norm.NFKC.String(name))
	insensitive := lettersOnly(confusables.Skeleton(fold.String(n)))
	sensitive := lettersOnly(fold.String(confusables.Skeleton(n)))
	return [2]string{fold.String(insensitive), sensitive}
}

// lettersOnly keeps the letters and digits of s (in NFD, so accents are dropped as the
// combining marks they decompose to), without the fillers that are letters but render as
// nothing (default-ignorable, e.g. U+3164 HANGUL FILLER).
func lettersOnly(s string) string {
	var b strings.Builder
	for _, r := range norm.NFD.String(s) {
		invisible := invisibleSymbols[r] || unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r)
		if (unicode.IsLetter(r) || unicode.IsDigit(r)) && !invisible {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// smallCapitals replaces every small capital letter ("LATIN LETTER SMALL CAPITAL A", U+1D00)
// by its capital ("LATIN CAPITAL LETTER A"), found by Unicode name: the confusables data maps
// only some of them (ᴄ ɪ ᴏ ᴜ), and NFKC none.
func smallCapitals(s string) string {
	m := smallCapitalMap()
	return strings.Map(func(r rune) rune {
		if c, ok := m[r]; ok {
			return c
		}
		return r
	}, s)
}

var smallCapitalMap = sync.OnceValue(buildSmallCapitals)

// buildSmallCapitals maps the small capitals of the blocks that hold them (IPA Extensions,
// Phonetic Extensions, Latin Extended-D) to the Latin, Greek or Cyrillic capital of the same
// name.
func buildSmallCapitals() map[rune]rune {
	capitals := map[string]rune{}
	for r := rune(0x41); r <= 0x52F; r++ {
		if name := runenames.Name(r); strings.Contains(name, " CAPITAL LETTER ") {
			capitals[name] = r
		}
	}
	m := map[rune]rune{}
	for _, block := range [][2]rune{{0x250, 0x2AF}, {0x1D00, 0x1DBF}, {0xA720, 0xA7FF}} {
		for r := block[0]; r <= block[1]; r++ {
			script, letter, ok := strings.Cut(runenames.Name(r), " LETTER SMALL CAPITAL ")
			if c, found := capitals[script+" CAPITAL LETTER "+letter]; ok && found {
				m[r] = c
			}
		}
	}
	return m
}
