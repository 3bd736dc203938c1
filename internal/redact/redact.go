package redact

import (
	"errors"
	"slices"
	"strings"

	"github.com/nyaruka/phonenumbers"
)

// Kind is a kind of personal data: "email", "phone", "cpf", "cnpj", "subject"
// (a known profile's name or handle). Kinds are what callers may report and
// log; values never are.
type Kind string

// The kinds of personal data the package recognises.
const (
	// KindEmail is an e-mail address, plain, internationalised or spelled out.
	KindEmail Kind = "email"
	// KindPhone is a phone number (see the package doc for the rule).
	KindPhone Kind = "phone"
	// KindCPF is a Brazilian individual taxpayer number with valid check digits.
	KindCPF Kind = "cpf"
	// KindCNPJ is a Brazilian company registry number with valid check digits.
	KindCNPJ Kind = "cnpj"
	// KindSubject is a known profile's name or handle (see KnownSubjects).
	KindSubject Kind = "subject"
	// KindName (names.go) is a person's name found by the name layer (Options.Names).
)

// Options configure detection. The zero value is valid.
type Options struct {
	// DefaultRegion is the space's default phone region (ISO 3166 alpha-2,
	// e.g. "BR"). It is tried first for numbers without "+"; "" means
	// BR, US, GB, FR, DE, PT, ES, IN, IT, MX, AR are tried, in that order
	// (and BR, US for bare digit runs).
	DefaultRegion string
	// Known, when not nil, also flags the names and handles of the space's
	// profiles as KindSubject.
	Known *KnownSubjects
	// Names, when true, also flags persons' names found by the embedded gazetteer and cues
	// as KindName (GATE-2; package doc, "Person names"). The notes gate turns it on.
	Names bool
}

// span is a detected value in the working (normalised) text.
type span struct {
	a, b  int
	kinds []Kind
}

// spans holds the detected spans, which never overlap, and a bitmap of the
// bytes they cover, so an overlap query costs O(b-a) (a word of the bitmap
// per 64 bytes) instead of a walk over every span found so far: Detect stays
// linear in the text whatever the number of values found.
type spans struct {
	list    []span
	covered []uint64 // bit i: byte i of the working text is inside a span
}

func newSpans(n int) *spans {
	return &spans{covered: make([]uint64, (n+63)/64+1)}
}

func (sp *spans) overlaps(a, b int) bool {
	if a < 0 {
		a = 0
	}
	if b > (len(sp.covered)-1)*64 {
		b = (len(sp.covered) - 1) * 64
	}
	for i := a; i < b; {
		w := sp.covered[i>>6]
		if i&63 == 0 && b-i >= 64 {
			if w != 0 {
				return true
			}
			i += 64
			continue
		}
		if w&(1<<(uint(i)&63)) != 0 {
			return true
		}
		i++
	}
	return false
}

func (sp *spans) add(a, b int, kinds ...Kind) {
	sp.list = append(sp.list, span{a, b, kinds})
	for i := max(a, 0); i < b && i>>6 < len(sp.covered); i++ {
		sp.covered[i>>6] |= 1 << (uint(i) & 63)
	}
}

// scan runs every detector on the normalised text, then again on its copy
// with the spaced runs collapsed (see collapseSpaced), keeping from that pass
// the values that cover a removed space, mapped back to the normalised text.
func scan(nt *normText, opt Options) *spans {
	sp := scanText(nt.s, opt)
	c := collapseSpaced(nt.s)
	if c == nil {
		return sp
	}
	for _, x := range scanText(c.s, opt).list {
		a, b := c.at[x.a], c.at[x.b-1]+1
		if b-a == x.b-x.a || sp.overlaps(a, b) {
			continue // no space removed inside: the first pass decided
		}
		sp.add(a, b, x.kinds...)
	}
	return sp
}

// scanText runs every detector on s.
func scanText(s string, opt Options) *spans {
	sp := newSpans(len(s))
	findEmails(s, sp, opt.Known)
	findDocuments(s, sp, opt.Known)
	findPhones(s, sp, opt)
	findKnown(s, sp, opt.Known)
	if opt.Names {
		findNames(s, sp)
	}
	return sp
}

func (sp *spans) kinds() []Kind {
	var out []Kind
	for _, x := range sp.list {
		for _, k := range x.kinds {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Detect returns the sorted, de-duplicated kinds of personal data found in
// text, or nil when none is found. It never returns the values.
func Detect(text string, opt Options) []Kind {
	return scan(normalize(text), opt).kinds()
}

// Mask returns text with each personal-data span replaced by a typed
// placeholder, plus the sorted, de-duplicated kinds found (nil when none).
// Placeholders are "<email>", "<phone>", "<cpf>", "<cnpj>", and "<subject>"
// for any span that is a known profile's name or handle (also when it is an
// e-mail or phone). Detection runs on the normalised text (see the package
// doc: format characters removed, NFKC, digits of any script folded); spans are
// mapped back so the ORIGINAL text is masked and every byte outside the spans
// is kept unchanged (invisible characters inside a masked span disappear with
// it).
func Mask(text string, opt Options) (string, []Kind) {
	nt := normalize(text)
	sp := scan(nt, opt)
	if len(sp.list) == 0 {
		return text, nil
	}
	type rep struct {
		a, b int
		ph   string
	}
	reps := make([]rep, 0, len(sp.list))
	for _, x := range sp.list {
		a, b := nt.origSpan(x.a, x.b)
		ph := "<" + string(x.kinds[0]) + ">"
		if slices.Contains(x.kinds, KindSubject) {
			ph = "<subject>"
		}
		reps = append(reps, rep{a, b, ph})
	}
	slices.SortFunc(reps, func(x, y rep) int { return x.a - y.a })
	var out strings.Builder
	out.Grow(len(text))
	pos := 0
	for _, r := range reps {
		if r.a < pos { // defensive: overlapping after mapping
			if r.b <= pos {
				continue
			}
			r.a = pos
		}
		out.WriteString(text[pos:r.a])
		out.WriteString(r.ph)
		pos = r.b
	}
	out.WriteString(text[pos:])
	return out.String(), sp.kinds()
}

// Errors returned by CanonicalHandle.
var (
	// ErrUnknownHandle is returned for a handle without a known prefix.
	ErrUnknownHandle = errors.New("redact: unknown handle prefix")
	// ErrEmptyHandle is returned for a handle with an empty value.
	ErrEmptyHandle = errors.New("redact: empty handle value")
	// ErrInvalidHandle is returned for a value that is not an e-mail address
	// or phone number.
	ErrInvalidHandle = errors.New("redact: invalid handle value")
)

// CanonicalHandle returns the canonical form of a profile handle
// "<prefix>:<value>". The prefix is case-insensitive; the value is
// NFKC-normalised and trimmed, invisible characters removed.
//
//   - "email:Ana@Example.COM" -> "email:ana@example.com" (lower-cased; must
//     be an address, else ErrInvalidHandle).
//   - "phone:(11) 91234-5678" with defaultRegion "BR" -> "phone:+5511912345678"
//     (E.164). Without "+", the number is read under defaultRegion; when
//     defaultRegion is "" the regions BR, US, GB, ... are tried and the first
//     where it is valid wins (else the first where it is possible). A value
//     that is not a possible number is ErrInvalidHandle.
//   - "document:529.982.247-25" -> "document:52998224725" (digits only; no
//     digits is ErrEmptyHandle).
//   - "username: Ana.S " -> "username:ana.s" (lower-cased, trimmed).
//
// An unknown prefix is ErrUnknownHandle; an empty value is ErrEmptyHandle.
// Errors never contain the value.
func CanonicalHandle(h string, defaultRegion string) (string, error) {
	prefix, value, ok := strings.Cut(h, ":")
	if !ok {
		return "", ErrUnknownHandle
	}
	prefix = strings.ToLower(strings.TrimSpace(prefix))
	value = strings.TrimSpace(normalize(value).s)
	switch prefix {
	case "email", "phone", "document", "username":
	default:
		return "", ErrUnknownHandle
	}
	if value == "" {
		return "", ErrEmptyHandle
	}
	switch prefix {
	case "email":
		c, err := canonicalEmail(value)
		if err != nil {
			return "", err
		}
		return c, nil
	case "phone":
		return canonicalPhone(value, defaultRegion)
	case "document":
		d := digitString(digitsOf(value))
		if d == "" {
			return "", ErrEmptyHandle
		}
		return "document:" + d, nil
	default:
		return "username:" + strings.ToLower(value), nil
	}
}

func canonicalEmail(v string) (string, error) {
	v = strings.ToLower(strings.TrimSpace(v))
	if !emailWhole.MatchString(v) {
		return "", ErrInvalidHandle
	}
	return "email:" + v, nil
}

func canonicalPhone(v, defaultRegion string) (string, error) {
	d := digitString(digitsOf(v))
	if d == "" {
		return "", ErrEmptyHandle
	}
	if len(d) < 7 {
		return "", ErrInvalidHandle
	}
	if strings.HasPrefix(v, "+") {
		num, err := phonenumbers.Parse("+"+d, "")
		if err != nil || !phonenumbers.IsPossibleNumber(num) {
			return "", ErrInvalidHandle
		}
		return "phone:" + phonenumbers.Format(num, phonenumbers.E164), nil
	}
	var possible string
	for _, r := range regionsFor(defaultRegion) {
		num, err := phonenumbers.Parse(d, r)
		if err != nil || !phonenumbers.IsPossibleNumber(num) {
			continue
		}
		e := "phone:" + phonenumbers.Format(num, phonenumbers.E164)
		if phonenumbers.IsValidNumber(num) {
			return e, nil
		}
		if possible == "" {
			possible = e
		}
		if defaultRegion != "" {
			// The default region decides when it is given.
			return e, nil
		}
	}
	if possible == "" {
		return "", ErrInvalidHandle
	}
	return possible, nil
}

// JoinForCheck returns the text the gate should pass to Detect for a value
// made of several fields (a note's title, body and tags): the parts joined by
// newlines, so each is checked on its own, followed by a newline and the
// parts concatenated without any separator, so a value split across two
// fields ("Customer ana@" + "example.com is the right mailbox") is found
// too. One part is returned as it is; no part gives "".
func JoinForCheck(parts ...string) string {
	if len(parts) <= 1 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts, "\n") + "\n" + strings.Join(parts, "")
}
