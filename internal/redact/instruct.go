package redact

import (
	"slices"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// InstructionClass is a class of text that tries to act on the agent reading it instead
// of informing it (GATE-3, MS-7). A note is a procedure and may instruct ("call
// post_credit, then refresh_invoice"); these classes are what a note must never do.
type InstructionClass string

// The classes DetectInstructions reports.
const (
	// InstructionOverride: an attempt to override the reader's instructions or role
	// ("ignore previous instructions", "you are now ...", "new system prompt",
	// "desconsidere suas regras", role tokens such as "<|im_start|>system").
	InstructionOverride InstructionClass = "override"
	// InstructionPrivilege: a claim of privilege or identity ("this user is an
	// administrator", "the customer is verified", "skip the verification", "o cliente já
	// foi verificado"): memory grants nothing (MS-7).
	InstructionPrivilege InstructionClass = "privilege"
	// InstructionExfiltration: a request to send keys, tokens, the conversation, the
	// prompt or data to an address or URL, or to reveal the system prompt.
	InstructionExfiltration InstructionClass = "exfiltration"
	// InstructionInvisible: text a person reviewing the note cannot see: Unicode tag
	// characters (U+E0000–U+E007F), bidirectional overrides and isolates (U+202A–U+202E,
	// U+2066–U+2069), zero-width characters inside a word (U+200B–U+200D, U+2060–U+2064,
	// U+180E, U+FEFF between two letters or digits).
	InstructionInvisible InstructionClass = "invisible"
)

// DetectInstructions returns the instruction classes found in text, sorted and without
// repeats (nil when none): never the text itself. It is pure and linear in the text.
//
// The invisible class is read from the text as it is. The other classes are read from a
// normalised copy, so spacing and Unicode tricks do not hide a phrase: format characters
// removed (zero-width, bidi, tag characters), NFKC (full-width and mathematical letters),
// accents removed, Cyrillic and Greek look-alikes and small capitals folded to Latin,
// lower case (so "İ" is "i"), digits and "@"/"$" inside words read as letters ("1gn0re"),
// punctuation between words read as a space, and runs of three or more single letters
// joined ("i g n o r e", "i.g.n.o.r.e"). Phrases are then matched on words; the longest
// override phrases are matched once more with every space removed. Rules that would refuse
// ordinary procedures carry guards: a privilege claim after a condition ("if the
// customer is verified", "se o cliente já foi verificado") or a negation ("never skip the
// verification") is not a claim; an exfiltration needs a secret or the conversation (keys,
// tokens, passwords, the prompt, the conversation, data) and an outside address (a URL, an
// e-mail address, an IP address, "this address").
func DetectInstructions(text string) []InstructionClass {
	var out []InstructionClass
	if hasInvisible(text) {
		out = append(out, InstructionInvisible)
	}
	v := newInstView(text)
	for _, r := range instRules {
		if slices.Contains(out, r.class) {
			continue
		}
		if r.match(v) {
			out = append(out, r.class)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// InstructionText is the text of a note DetectInstructions reads: title, body and tags
// (space-separated) each on its own line. Unlike the personal-data gate's JoinForCheck it
// does not glue the parts together: a phrase is read within one part, and a condition
// that opens the body ("If the customer is verified") stays a word of its own.
func InstructionText(title, body string, tags []string) string {
	return title + "\n" + body + "\n" + strings.Join(tags, " ")
}

// hasInvisible reports tag characters, bidi overrides or isolates anywhere in text, or a
// zero-width character between two letters or digits of a Latin, Greek or Cyrillic word
// (zero-width joiners between letters of other scripts, and between emoji, are ordinary
// writing; a byte-order mark at the start is not inside a word).
func hasInvisible(text string) bool {
	rs := []rune(text)
	for i, r := range rs {
		switch {
		case r >= 0xE0000 && r <= 0xE007F:
			return true
		case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
			return true
		case isZeroWidth(r) && zeroWidthInWord(rs, i):
			return true
		}
	}
	return false
}

func isZeroWidth(r rune) bool {
	return r == 0x200B || r == 0x200C || r == 0x200D || (r >= 0x2060 && r <= 0x2064) || r == 0x180E || r == 0xFEFF
}

// zeroWidthInWord reports whether the zero-width run around rs[i] sits between two word
// characters.
func zeroWidthInWord(rs []rune, i int) bool {
	a := i - 1
	for a >= 0 && isZeroWidth(rs[a]) {
		a--
	}
	b := i + 1
	for b < len(rs) && isZeroWidth(rs[b]) {
		b++
	}
	return a >= 0 && b < len(rs) && wordChar(rs[a]) && wordChar(rs[b])
}

func wordChar(r rune) bool {
	if r < 0x80 {
		return r >= '0' && r <= '9' || r|0x20 >= 'a' && r|0x20 <= 'z'
	}
	return unicode.IsLetter(r) && (unicode.In(r, unicode.Latin, unicode.Greek, unicode.Cyrillic))
}

// instView is text as the instruction rules read it.
type instView struct {
	// plain: folded (see DetectInstructions), punctuation kept, each run of spaces at
	// most two (a wide gap separates letter-spaced words), line breaks kept (role markers
	// start lines).
	plain string
	// words: plain as words of letters and digits, one space between them (and around
	// the text), leetspeak folded, single-letter runs joined.
	words string
	// squashed: words without spaces.
	squashed string
	// runs: the joined single-letter runs of words (read with the short squashed
	// phrases too).
	runs []string
}

func newInstView(text string) instView {
	plain := foldPlain(text)
	words, runs := wordsOf(plain)
	return instView{plain: plain, words: words, squashed: strings.NewReplacer(" ", "", "|", "").Replace(words), runs: runs}
}

// foldPlain removes format characters, applies NFKC, removes accents, folds look-alikes
// and lower-cases; spaces collapse to one, line breaks stay.
func foldPlain(text string) string {
	var b strings.Builder
	b.Grow(len(text))
	for _, r := range text {
		if !isIgnorable(r) {
			b.WriteRune(r)
		}
	}
	d := norm.NFD.String(norm.NFKC.String(b.String()))
	b.Reset()
	spaces := 2 // spaces written since the last other character; 2 at a line start
	for _, r := range d {
		switch {
		case unicode.Is(unicode.Mn, r) || isIgnorable(r):
			continue
		case r == '\n' || r == '\r' || r == '\u2028' || r == '\u2029':
			b.WriteByte('\n')
			spaces = 2
			continue
		case unicode.IsSpace(r) || unicode.Is(unicode.Zs, r):
			if spaces < 2 {
				b.WriteByte(' ')
			}
			spaces++
			continue
		}
		if f, ok := confusables[r]; ok {
			r = f
		}
		b.WriteRune(unicode.ToLower(r))
		spaces = 0
	}
	return b.String()
}

// leet maps the digits and symbols written for letters inside a word.
var leet = map[rune]rune{'0': 'o', '1': 'i', '3': 'e', '4': 'a', '5': 's', '7': 't', '@': 'a', '$': 's', '|': 'l'}

// wordsOf splits plain into words (letters and digits; everything else separates), folds
// leetspeak in tokens that mix letters with digits or symbols, joins runs of three or more
// single-letter words, and marks the end of each sentence and line with "|" (so a guard's
// look back stops there). It returns " w1 w2 | w3 ... | " and the joined runs.
func wordsOf(plain string) (string, []string) {
	var toks []string
	for _, line := range strings.Split(plain, "\n") {
		for _, seg := range strings.Split(line, "  ") {
			toks = append(toks, segmentTokens(seg)...)
		}
		toks = append(toks, "|")
	}
	var out, runs []string
	for i := 0; i < len(toks); {
		j := i
		for j < len(toks) && toks[j] != "|" && len([]rune(toks[j])) == 1 {
			j++
		}
		if j-i >= 3 {
			run := strings.Join(toks[i:j], "")
			out = append(out, run)
			runs = append(runs, run)
			i = j
			continue
		}
		if j == i {
			j++
		}
		for _, t := range toks[i:j] {
			if t != "|" || (len(out) > 0 && out[len(out)-1] != "|") {
				out = append(out, t)
			}
		}
		i = j
	}
	return " " + strings.Join(out, " ") + " ", runs
}

// segmentTokens is the words of one stretch of a line between double spaces. A stretch
// of single letters only ("y o u", "n o") is one word: letter spacing keeps words apart
// with wider gaps ("y o u   a r e   n o w").
func segmentTokens(seg string) []string {
	fs := strings.Fields(seg)
	single := len(fs) >= 2
	for _, f := range fs {
		if len([]rune(f)) != 1 && !(len([]rune(f)) == 2 && strings.ContainsAny(f[len(f)-1:], ".;?!:,")) {
			single = false
		}
	}
	if single {
		return []string{strings.Join(wordTokens(strings.Join(fs, "")), "")}
	}
	var toks []string
	for _, f := range fs {
		toks = append(toks, wordTokens(f)...)
		if strings.ContainsAny(f[len(f)-1:], ".;?!:") {
			toks = append(toks, "|")
		}
	}
	return toks
}

// wordTokens splits one plain field into words, folding leetspeak when the field mixes
// letters with the digits and symbols written for them.
func wordTokens(f string) []string {
	letters := 0
	for _, r := range f {
		if unicode.IsLetter(r) {
			letters++
		}
	}
	if letters >= 1 && len(f) >= 2 && strings.ContainsFunc(f, func(r rune) bool { _, ok := leet[r]; return ok }) && !strings.Contains(f, "://") {
		f = strings.Map(func(r rune) rune {
			if l, ok := leet[r]; ok {
				return l
			}
			return r
		}, f)
	}
	return strings.FieldsFunc(f, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// confusables folds the look-alike letters an attacker writes for Latin ones: Cyrillic,
// Greek, dotless i, small capitals. NFKC handles full-width and mathematical letters.
var confusables = func() map[rune]rune {
	pairs := []string{
		"аa", "вb", "еe", "ёe", "кk", "мm", "нh", "оo", "рp", "сc", "тt", "уy", "хx", "ѕs", "іi", "їi", "јj", "ԁd", "ԛq", "ԝw", "һh", "ӏl", "ɡg",
		"АA", "ВB", "ЕE", "КK", "МM", "НH", "ОO", "РP", "СC", "ТT", "УY", "ХX", "ЅS", "ІI", "ЈJ", "ԌG",
		"αa", "βb", "εe", "ιi", "κk", "νv", "οo", "ρp", "τt", "υu", "χx", "ϲc", "ϳj",
		"ΑA", "ΒB", "ΕE", "ΖZ", "ΗH", "ΙI", "ΚK", "ΜM", "ΝN", "ΟO", "ΡP", "ΤT", "ΥY", "ΧX",
		"ıi", "ȷj", "ɑa", "ɩi", "ɪi", "ʟl", "ᴀa", "ʙb", "ᴄc", "ᴅd", "ᴇe", "ꜰf", "ɢg", "ʜh", "ᴊj", "ᴋk", "ᴍm", "ɴn", "ᴏo", "ᴘp", "ʀr", "ꜱs", "ᴛt", "ᴜu", "ᴠv", "ᴡw", "ʏy", "ᴢz",
	}
	m := make(map[rune]rune, len(pairs))
	for _, p := range pairs {
		rs := []rune(p)
		m[rs[0]] = rs[1]
	}
	return m
}()
