package redact

import (
	"bufio"
	"embed"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// KindName is a person's name found by the local name layer (GATE-2): see the package doc,
// "Person names".
const KindName Kind = "name"

//go:embed names/*.txt
var nameFiles embed.FS

// Token classes of the name lexicon (bit flags of lexicon.words).
const (
	lexGiven    uint16 = 1 << iota // a given name (names/given.txt)
	lexSurname                     // a surname (names/surnames.txt)
	lexOrdinary                    // an ordinary word (names/ordinary.txt)
	lexBrand                       // a product, system, font or company (names/brands.txt)
	lexPlace                       // a one-word place (names/places*.txt)
	lexWord                        // a word of faker's word lists (names/words.txt): never an unknown word
)

// lexicon is the embedded gazetteer: folded one-word entries with their classes, and folded
// phrases of two or more words (places, brands) that are never names.
type lexicon struct {
	words   map[string]uint16
	phrases map[string]bool
	// phraseStart is, for each first word of a phrase, the length of its longest phrase.
	phraseStart map[string]int
}

var nameLexicon = sync.OnceValue(loadLexicon)

// loadLexicon reads the embedded lists. A missing file is a build defect (go:embed checks the
// pattern at compile time), so read errors are impossible at run time and ignored.
func loadLexicon() *lexicon {
	lx := &lexicon{words: map[string]uint16{}, phrases: map[string]bool{}, phraseStart: map[string]int{}}
	lx.load("names/given.txt", lexGiven, false)
	lx.load("names/given-extra.txt", lexGiven, false)
	lx.load("names/surnames.txt", lexSurname, false)
	lx.load("names/surnames-extra.txt", lexSurname, false)
	lx.load("names/ordinary.txt", lexOrdinary, true)
	lx.load("names/words.txt", lexWord, true)
	lx.load("names/brands.txt", lexBrand, false)
	lx.load("names/places.txt", lexPlace, false)
	lx.load("names/places-extra.txt", lexPlace, false)
	return lx
}

// load adds the entries of file under class c. perWord: every word of a line is an entry
// (ordinary.txt); else a line is one entry, whose words are each added for given names and
// surnames ("Ana Clara", "Espinosa de los Monteros") and which is a phrase for brands and
// places of several words.
func (lx *lexicon) load(file string, c uint16, perWord bool) {
	data, _ := nameFiles.ReadFile(file)
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		toks := lexTokens(line)
		switch {
		case len(toks) == 0:
		case perWord || c == lexGiven || c == lexSurname:
			for _, t := range toks {
				if !nameParticles[t] {
					lx.words[t] |= c
				}
			}
		case len(toks) == 1:
			lx.words[toks[0]] |= c
		default:
			lx.phrases[strings.Join(toks, " ")] = true
			lx.phraseStart[toks[0]] = max(lx.phraseStart[toks[0]], len(toks))
		}
	}
}

// lexTokens folds and splits a lexicon line into words as the text is split (nameToks).
func lexTokens(s string) []string {
	var out []string
	for _, t := range nameToks(normalize(s).s) {
		out = append(out, t.f)
	}
	return out
}

// ntok is a word of the text: bytes [a, b), its folded form, and how it is written.
type ntok struct {
	a, b    int
	f       string
	cap     bool // first letter upper case, not all upper case (or one letter)
	acronym bool // two or more letters, all upper case
	start   bool // first word of a sentence, line or list item
	glued   bool // part of a word split at a lower-to-upper case change ("stockSanta")
	gap     string
}

// nameToks splits s into words: runs of letters and marks, an apostrophe or hyphen between
// letters kept inside ("O'Brien", "Jean-Luc"). gap is the text between a word and the one
// before it.
func nameToks(s string) []ntok {
	out := make([]ntok, 0, len(s)/6+1)
	prev := 0
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsLetter(r) {
			i += n
			continue
		}
		j := i
		for j < len(s) {
			r2, n2 := utf8.DecodeRuneInString(s[j:])
			if unicode.IsLetter(r2) || unicode.Is(unicode.Mn, r2) {
				j += n2
				continue
			}
			if (r2 == '\'' || r2 == '\u2019' || r2 == '-') && j+n2 < len(s) {
				if r3, _ := utf8.DecodeRuneInString(s[j+n2:]); unicode.IsLetter(r3) {
					j += n2
					continue
				}
			}
			break
		}
		out = appendSplit(out, s, i, j, s[prev:i])
		prev = j
		i = j
	}
	return out
}

// appendSplit appends word s[a:b], split where a lower-case letter is followed by an upper-case
// one ("stockSanta", "MariaDB", "McDonald"): fields glued without separator by JoinForCheck
// or a camel-case identifier. The pieces are marked glued: they never count as a name on
// their own, but still take part in the places and brands they begin ("stockSanta Catarina").
func appendSplit(out []ntok, s string, a, b int, gap string) []ntok {
	start := a
	var prev rune
	for k, r := range s[a:b] {
		i := a + k
		next, _ := utf8.DecodeRuneInString(s[i+utf8.RuneLen(r) : b])
		upperRun := unicode.IsUpper(prev) && unicode.IsUpper(r) && unicode.IsLower(next) // "LLCIf"
		if i > start && unicode.IsUpper(r) && (unicode.IsLower(prev) || upperRun) {
			t := newTok(s, start, i, gap, len(out) == 0)
			t.glued = true
			out = append(out, t)
			start, gap = i, ""
		}
		prev = r
	}
	t := newTok(s, start, b, gap, len(out) == 0)
	t.glued = start != a
	return append(out, t)
}

func newTok(s string, a, b int, gap string, first bool) ntok {
	w := s[a:b]
	r, _ := utf8.DecodeRuneInString(w)
	upper, letters := 0, 0
	for _, c := range w {
		if unicode.IsLetter(c) {
			letters++
			if unicode.IsUpper(c) {
				upper++
			}
		}
	}
	t := ntok{a: a, b: b, f: foldToken(w), gap: gap}
	t.acronym = letters >= 2 && upper == letters
	t.cap = unicode.IsUpper(r) && !t.acronym
	t.start = first || sentenceGap(gap)
	return t
}

// sentenceGap reports whether gap ends a sentence or starts a line or list item: it holds a
// new line, "!", "?", ":", ";", a bullet, or a "." (abbreviations such as "Sr." are handled
// by the cues, which look at the words, not at this flag).
func sentenceGap(gap string) bool {
	return strings.ContainsAny(gap, "\n.!?:;•*|")
}

// plainGap reports whether two words are adjacent parts of one name: only spaces (or a
// single hyphen or apostrophe already inside a word) between them.
func plainGap(gap string) bool {
	return gap != "" && strings.Trim(gap, " \t") == ""
}
