package redact

import (
	"crypto/hmac"
	"crypto/sha256"
	"hash"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/nyaruka/phonenumbers"
)

const maxNameTokens = 4

// KnownSubjects matches the names and handles of a space's profiles without
// keeping them in clear. It stores HMAC-SHA256 digests, under the key given to
// NewKnownSubjects, of normalised name token sequences (1 to 4 words, case and
// accents folded) and of canonical handles (see CanonicalHandle). The key
// should be secret and per space; the digests alone do not reveal the values.
//
// A nil *KnownSubjects matches nothing. Methods are safe for concurrent use.
type KnownSubjects struct {
	key []byte

	pool sync.Pool // of hash.Hash (HMAC-SHA256 under key)

	mu         sync.RWMutex
	hashes     map[[sha256.Size]byte]struct{}
	words      map[[sha256.Size]byte]uint8 // digests of single words, see word flags
	nameLens   [maxNameTokens + 1]bool     // name sequence lengths present
	phones     bool
	anyHandles bool
}

// NewKnownSubjects returns an empty set whose digests are keyed with key
// (copied). An empty key still works but offers no protection against
// dictionary attacks on the digests.
func NewKnownSubjects(key []byte) *KnownSubjects {
	k := &KnownSubjects{
		key:    append([]byte(nil), key...),
		hashes: make(map[[sha256.Size]byte]struct{}),
		words:  make(map[[sha256.Size]byte]uint8),
	}
	k.pool.New = func() any { return hmac.New(sha256.New, k.key) }
	return k
}

// Flags of the words map: a word digest may be a name word (used only as a
// pre-filter for name sequences), a username, or a document number.
const (
	wordName uint8 = 1 << iota
	wordUsername
	wordDocument
)

func (k *KnownSubjects) digest(s string) [sha256.Size]byte {
	m := k.pool.Get().(hash.Hash)
	m.Reset()
	m.Write([]byte(s))
	var out [sha256.Size]byte
	m.Sum(out[:0])
	k.pool.Put(m)
	return out
}

func (k *KnownSubjects) has(s string) bool {
	if k == nil {
		return false
	}
	d := k.digest(s)
	k.mu.RLock()
	_, ok := k.hashes[d]
	k.mu.RUnlock()
	return ok
}

// nameTokens splits s into folded word tokens (letters, digits, marks,
// apostrophes inside words are separators).
func nameTokens(s string) []string {
	s = normalize(s).s
	f := strings.FieldsFunc(s, func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r))
	})
	out := f[:0]
	for _, t := range f {
		if t = foldToken(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// AddName adds a profile's display name. The name is NFKC-normalised, split
// into words, case-folded and stripped of accents; its word sequence is
// stored as a digest. Names of more than four words are stored as their first
// four words and as the pair (first word, last word). One-word names shorter
// than four letters are ignored (they would match ordinary words).
func (k *KnownSubjects) AddName(name string) {
	if k == nil {
		return
	}
	toks := nameTokens(name)
	if len(toks) == 0 {
		return
	}
	var seqs [][]string
	switch {
	case len(toks) == 1:
		if utf8.RuneCountInString(toks[0]) < 4 {
			return
		}
		seqs = append(seqs, toks)
	case len(toks) <= maxNameTokens:
		seqs = append(seqs, toks)
	default:
		seqs = append(seqs, toks[:maxNameTokens], []string{toks[0], toks[len(toks)-1]})
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, q := range seqs {
		k.hashes[k.digest("name:"+strings.Join(q, " "))] = struct{}{}
		k.nameLens[len(q)] = true
		for _, w := range q {
			k.words[k.digest("w:"+w)] |= wordName
		}
	}
}

// AddHandle adds a profile handle in canonical form ("email:ana@example.com",
// "phone:+5511912345678", "document:52998224725", "username:ana.s"). It is
// canonicalised again with CanonicalHandle (phones without "+" are read as in
// CanonicalHandle with no default region); handles that do not canonicalise
// are ignored.
func (k *KnownSubjects) AddHandle(canonical string) {
	if k == nil {
		return
	}
	c, err := CanonicalHandle(canonical, "")
	if err != nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.hashes[k.digest(c)] = struct{}{}
	k.anyHandles = true
	switch {
	case strings.HasPrefix(c, "username:"):
		k.words[k.digest("w:"+strings.TrimPrefix(c, "username:"))] |= wordUsername
	case strings.HasPrefix(c, "phone:"):
		k.phones = true
		if num, err := phonenumbers.Parse(strings.TrimPrefix(c, "phone:"), ""); err == nil {
			k.hashes[k.digest("nsn:"+phonenumbers.GetNationalSignificantNumber(num))] = struct{}{}
		}
	case strings.HasPrefix(c, "document:"):
		k.words[k.digest("w:"+strings.TrimPrefix(c, "document:"))] |= wordDocument
	}
}

func (k *KnownSubjects) hasHandle(c string) bool {
	if k == nil {
		return false
	}
	k.mu.RLock()
	any := k.anyHandles
	k.mu.RUnlock()
	return any && k.has(c)
}

// knownPhoneDigits reports whether the digits d of a phone-shaped candidate
// hold a known phone's national significant number: d itself, d without
// leading zeros (trunk or international prefix), or d without a 1 to 3 digit
// country code. This is deliberately loose (privacy first).
func (k *KnownSubjects) knownPhoneDigits(d string) bool {
	if k.has("nsn:" + d) {
		return true
	}
	t := strings.TrimLeft(d, "0")
	if t != d && len(t) >= 6 && k.has("nsn:"+t) {
		return true
	}
	for n := 1; n <= 3 && len(t)-n >= 6; n++ {
		if k.has("nsn:" + t[n:]) {
			return true
		}
	}
	return false
}

func (k *KnownSubjects) hasPhones() bool {
	if k == nil {
		return false
	}
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.phones
}

type token struct {
	a, b int
	w    string
}

// wordFlags returns the flags of the digest of word w (0 when unknown).
func (k *KnownSubjects) wordFlags(w string) uint8 {
	d := k.digest("w:" + w)
	k.mu.RLock()
	f := k.words[d]
	k.mu.RUnlock()
	return f
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
}

// findKnown adds spans of known names, usernames and document numbers.
// Each word of the text costs one keyed digest; name sequences are only
// digested when all their words are known name words.
func findKnown(s string, sp *spans, k *KnownSubjects) {
	if k == nil {
		return
	}
	k.mu.RLock()
	lens := k.nameLens
	nwords := len(k.words)
	k.mu.RUnlock()
	if nwords == 0 {
		return
	}
	toks, flags := k.scanWords(s, sp)
	k.matchNames(toks, flags, lens, sp)
}

// scanWords splits s into words: maximal runs of letters/digits (name tokens, returned with
// their flags), possibly joined by ._-+/ into a handle-like word. It adds a span for every
// token or handle-like word that is a known username or document number.
func (k *KnownSubjects) scanWords(s string, sp *spans) ([]token, []uint8) {
	var toks []token
	var flags []uint8
	flushTok := func(a, b int) {
		w := foldToken(s[a:b])
		f := k.wordFlags(w)
		if f&(wordUsername|wordDocument) != 0 && !sp.overlaps(a, b) {
			sp.add(a, b, KindSubject)
		}
		toks = append(toks, token{a, b, w})
		flags = append(flags, f)
	}
	hstart, tstart := -1, -1
	for i, r := range s {
		if isWordRune(r) {
			if tstart < 0 {
				tstart = i
			}
			if hstart < 0 {
				hstart = i
			}
			continue
		}
		if tstart >= 0 {
			flushTok(tstart, i)
			tstart = -1
		}
		if hstart >= 0 && !strings.ContainsRune("._-+/", r) {
			k.handleWord(s, hstart, i, sp)
			hstart = -1
		}
	}
	if tstart >= 0 {
		flushTok(tstart, len(s))
	}
	if hstart >= 0 {
		k.handleWord(s, hstart, len(s), sp)
	}
	return toks, flags
}

// handleWord adds a span for s[a:b], a handle-like word (letters and digits joined by
// ._-+/; trailing joiners dropped), when it is a known username or holds a known document
// number. A plain token was already checked by scanWords.
func (k *KnownSubjects) handleWord(s string, a, b int, sp *spans) {
	for b > a && strings.ContainsRune("._-+/", rune(s[b-1])) {
		b--
	}
	w := s[a:b]
	if !strings.ContainsAny(w, "._-+/") || sp.overlaps(a, b) {
		return
	}
	if k.wordFlags(strings.ToLower(w))&wordUsername != 0 {
		sp.add(a, b, KindSubject)
		return
	}
	if d := digitString(digitsOf(w)); len(d) >= 6 && k.wordFlags(d)&wordDocument != 0 {
		sp.add(a, b, KindSubject)
	}
}

// matchNames adds a span for each longest run of tokens (of a length some known name has,
// lens) whose words are all known name words and whose joined form is a known name.
func (k *KnownSubjects) matchNames(toks []token, flags []uint8, lens [maxNameTokens + 1]bool, sp *spans) {
	for i := 0; i < len(toks); i++ {
		for n := maxNameTokens; n >= 1; n-- {
			if !lens[n] || i+n > len(toks) || !allNameWords(flags[i:i+n]) {
				continue
			}
			a, b := toks[i].a, toks[i+n-1].b
			if sp.overlaps(a, b) {
				continue
			}
			parts := make([]string, n)
			for j := range n {
				parts[j] = toks[i+j].w
			}
			if k.has("name:" + strings.Join(parts, " ")) {
				sp.add(a, b, KindSubject)
				i += n - 1
				break
			}
		}
	}
}

// allNameWords reports whether every flag marks a known name word.
func allNameWords(flags []uint8) bool {
	for _, f := range flags {
		if f&wordName == 0 {
			return false
		}
	}
	return true
}
