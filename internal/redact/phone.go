package redact

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/nyaruka/phonenumbers"
)

// fallbackRegions are tried after Options.DefaultRegion.
var fallbackRegions = []string{"BR", "US", "GB", "FR", "DE", "PT", "ES", "IN", "IT", "MX", "AR"}

// bareRegions are used for bare digit runs when DefaultRegion is empty.
var bareRegions = []string{"BR", "US"}

const (
	minNationalDigits = 8
	maxPhoneDigits    = 15
	maxChunks         = 7
)

var (
	dateRe     = regexp.MustCompile(`^(?:\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{2,4})$`)
	dottedRe   = regexp.MustCompile(`^\d{1,3}(?:\.\d{1,3}){2,}$`)
	cepRe      = regexp.MustCompile(`^\d{5}-\d{3}$`)
	cpfShapeRe = regexp.MustCompile(`^\d{3}\.\d{3}\.\d{3}-\d{2}$`)
	// decimalRe is an amount with decimals: "1234567.89".
	decimalRe = regexp.MustCompile(`^\d+\.\d{1,2}$`)
	// yearRangeRe is a range of years: "2019-2023".
	yearRangeRe = regexp.MustCompile(`^(?:19|20)\d{2}-(?:19|20)\d{2}$`)
)

// idWords, when they precede a digit run, make it an id, not a phone.
var idWords = map[string]bool{
	"order": true, "orders": true, "pedido": true, "pedidos": true, "ticket": true,
	"tickets": true, "form": true, "build": true, "invoice": true, "invoices": true,
	"id": true, "ids": true, "ref": true, "reference": true, "referencia": true,
	"protocolo": true, "protocol": true, "sku": true, "serial": true, "version": true,
	"versao": true, "release": true, "case": true, "chamado": true,
	"nota": true, "nf": true, "nfe": true, "tracking": true, "rastreio": true,
	"rastreamento": true, "codigo": true, "code": true, "cod": true, "transaction": true,
	"transacao": true, "boleto": true, "fatura": true, "receipt": true, "recibo": true,
	"lote": true, "batch": true, "po": true, "job": true, "issue": true, "pr": true,
	"commit": true, "cep": true, "zip": true, "zipcode": true, "postcode": true,
	"item": true, "v": true, "rev": true, "revision": true,
	"range": true, "ranges": true, "port": true, "ports": true, "faixa": true,
	"intervalo": true, "epoch": true, "timestamp": true, "unix": true, "ts": true,
}

// idFillers may sit between an id word and the number ("order number 123").
var idFillers = map[string]bool{
	"number": true, "numero": true, "no": true, "nr": true, "num": true, "n": true,
	"do": true, "da": true, "de": true, "of": true, "the": true, "is": true, "nro": true,
}

type chunk struct {
	a, b   int // byte span in the working text
	digits int
	bad    bool // date, version, IP or postal code: never part of a phone
}

// regionsFor returns the regions tried for formatted numbers.
func regionsFor(def string) []string {
	def = strings.ToUpper(strings.TrimSpace(def))
	if def == "" {
		return fallbackRegions
	}
	out := make([]string, 0, len(fallbackRegions)+1)
	out = append(out, def)
	for _, r := range fallbackRegions {
		if r != def {
			out = append(out, r)
		}
	}
	return out
}

func lastRune(s string) rune {
	r, _ := utf8.DecodeLastRuneInString(s)
	return r
}

func isAlnum(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// contactWords, when they introduce a digit run, make it a contact: a phone
// even when an id word comes earlier in the clause ("Ticket 88213: customer
// phone 2125550143"), and glued to the number ("tel.11987654321",
// "fone-2125550143", "whats.(85)99914-5187").
var contactWords = map[string]bool{
	"phone": true, "phones": true, "telephone": true, "tel": true, "tels": true, "telefone": true,
	"telefones": true, "fone": true, "fones": true, "cel": true, "cell": true, "celular": true,
	"mobile": true, "mob": true, "movel": true, "whats": true, "whatsapp": true, "wpp": true,
	"zap": true, "wa": true, "ph": true, "call": true, "callback": true, "ligar": true, "ligue": true,
	"liga": true, "retornar": true, "contact": true, "contacts": true, "contato": true,
	"contatos": true, "sms": true, "text": true, "fax": true, "customer": true, "customers": true,
	"client": true, "cliente": true, "clientes": true, "buyer": true, "comprador": true,
	"compradora": true, "his": true, "her": true, "him": true, "dele": true, "dela": true,
}

// procWords are the id words of everyday procedures (order, ticket, invoice,
// protocol, tracking, batch and their Portuguese forms): a bare run of digits
// they introduce is an id even when its digits happen to be a valid CPF or
// CNPJ. "id", "code", "ref" are not among them: a customer id may well be a
// document.
var procWords = map[string]bool{
	"order": true, "orders": true, "pedido": true, "pedidos": true, "ticket": true, "tickets": true,
	"invoice": true, "invoices": true, "protocolo": true, "protocol": true, "chamado": true,
	"nota": true, "nf": true, "nfe": true, "fatura": true, "boleto": true, "tracking": true,
	"rastreio": true, "rastreamento": true, "lote": true, "batch": true, "po": true,
	"transaction": true, "transacao": true, "receipt": true, "recibo": true,
}

// idConnectors join the items of a list of ids ("orders 1234567890 and
// 2234567890", "pedidos 1234567890 e 2234567890").
var idConnectors = map[string]bool{"and": true, "e": true, "or": true, "ou": true, "y": true, "is": true, "was": true, "foi": true}

// inWords reports whether w, or w without a plural ending ("chamados",
// "batches", "notas"), is in words.
func inWords(words map[string]bool, w string) bool {
	if words[w] {
		return true
	}
	if t, ok := strings.CutSuffix(w, "s"); ok && len(t) > 1 && words[t] {
		return true
	}
	if t, ok := strings.CutSuffix(w, "es"); ok && len(t) > 1 && words[t] {
		return true
	}
	return false
}

// lettersBefore returns the letters (folded) ending exactly at s[:p].
func lettersBefore(s string, p int) string {
	e := p
	for p > 0 {
		r, n := utf8.DecodeLastRuneInString(s[:p])
		if !unicode.IsLetter(r) && !unicode.Is(unicode.Mn, r) {
			break
		}
		p -= n
	}
	return foldToken(s[p:e])
}

// idContext reports whether the run starting at p is an id by its context.
func idContext(s string, p int) bool {
	if p == 0 {
		return false
	}
	r, n := utf8.DecodeLastRuneInString(s[:p])
	if strings.ContainsRune("-_/\\.=", r) && p-n > 0 && isAlnum(lastRune(s[:p-n])) {
		// Glued by punctuation: a contact abbreviation ("tel.", "fone-",
		// "ph/") introduces a phone; a filler ("number=") leaves it to the
		// words before it; anything else makes an identifier
		// (eu-20260812-09, a/b/123).
		w := lettersBefore(s, p-n)
		if contactWords[w] {
			return false
		}
		if !idFillers[w] || inWords(idWords, w) {
			return true
		}
	}
	if unicode.IsLetter(r) {
		w := lettersBefore(s, p)
		if contactWords[w] {
			return false // "tel11987654321"
		}
		if utf8.RuneCountInString(w) == 1 || inWords(idWords, w) {
			return true // v1.2.3, SKU12345678
		}
	}
	return introducedBy(s, p, idWords, 1) || exampleOfID(s, p)
}

// introducedBy reports whether the digit run starting at p is introduced, in
// its clause, as an id by one of words: walking back word by word from p, an
// id word (or "#") is met before any contact word, with at most maxOthers
// other words on the way besides fillers ("number", "do", "of", "is", ...), list
// connectors ("and", "e", ","), and other runs of digits (a list of ids).
// The walk stops at the end of the previous sentence (";", "!", "?", a new
// line, or "." after a word that is not an abbreviation such as "no.").
// So "Protocolo de atendimento 4159977512", "the tracking number is
// 2123460821" and "Orders 4154327323 and 6355444157" are ids, while "Ticket
// 88213: customer phone 2125550143" and "Order 4471 delayed; call
// 2125550143" are not.
func introducedBy(s string, p int, words map[string]bool, maxOthers int) bool {
	others := 0
	for step := 0; step < 12 && p > 0; step++ {
		for p > 0 {
			r, n := utf8.DecodeLastRuneInString(s[:p])
			switch {
			case r == '#':
				return true
			case r == ';' || r == '!' || r == '?' || r == '\n':
				return false
			case r == '.':
				// "no." and "tel." are abbreviations; any other word ends a sentence.
				if w := lettersBefore(s, p-n); !(idFillers[w] || inWords(words, w) || inWords(idWords, w) || contactWords[w]) {
					return false
				}
			case unicode.IsSpace(r) || strings.ContainsRune(":,=-()[]°º/&*", r):
			default:
				goto token
			}
			p -= n
		}
		return false
	token:
		if isDigit(s[p-1]) {
			for p > 0 && (isAlnum(lastRune(s[:p]))) {
				_, n := utf8.DecodeLastRuneInString(s[:p])
				p -= n
			}
			continue
		}
		w := lettersBefore(s, p)
		if w == "" {
			return false
		}
		switch {
		case contactWords[w]:
			return false
		case inWords(words, w):
			return true
		case idFillers[w] || idConnectors[w]:
		default:
			others++
			if others > maxOthers {
				return false
			}
		}
		for p > 0 {
			r, n := utf8.DecodeLastRuneInString(s[:p])
			if !unicode.IsLetter(r) && !unicode.Is(unicode.Mn, r) {
				break
			}
			p -= n
		}
	}
	return false
}

// trailingIdent reports whether the run ending at e continues as an identifier.
func trailingIdent(s string, e int) bool {
	if e >= len(s) {
		return false
	}
	if !strings.ContainsRune("-_/\\.", rune(s[e])) {
		return false
	}
	if e+1 >= len(s) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(s[e+1:])
	return isAlnum(r)
}

// splitChunks splits the run s[a:b] into space-separated chunks.
func splitChunks(s string, a, b int) []chunk {
	var out []chunk
	i := a
	for i < b {
		for i < b && (s[i] == ' ' || s[i] == '\t') || strings.HasPrefix(s[i:b], "\u00a0") {
			if strings.HasPrefix(s[i:b], "\u00a0") {
				i += 2
			} else {
				i++
			}
		}
		j := i
		for j < b && s[j] != ' ' && s[j] != '\t' && !strings.HasPrefix(s[j:b], "\u00a0") {
			j++
		}
		if j > i {
			ca, cb := i, j
			for ca < cb && strings.IndexByte("-.)", s[ca]) >= 0 {
				ca++
			}
			for cb > ca && strings.IndexByte("-.(", s[cb-1]) >= 0 {
				cb--
			}
			c := chunk{a: ca, b: cb, digits: len(digitsOf(s[ca:cb]))}
			txt := s[ca:cb]
			c.bad = strings.ContainsAny(txt, ".-/") && (dateRe.MatchString(txt) || dottedRe.MatchString(txt) || cepRe.MatchString(txt) ||
				cpfShapeRe.MatchString(txt) || decimalRe.MatchString(txt) || yearRangeRe.MatchString(txt))
			out = append(out, c)
		}
		i = j
	}
	return out
}

func digitGroups(s string) []int {
	var out []int
	n := 0
	for i := 0; i < len(s); i++ {
		if isDigit(s[i]) {
			n++
		} else if n > 0 {
			out = append(out, n)
			n = 0
		}
	}
	if n > 0 {
		out = append(out, n)
	}
	return out
}

// orderShaped reports groups of exactly four digits, three or more of them.
func orderShaped(groups []int) bool {
	if len(groups) < 3 {
		return false
	}
	for _, g := range groups {
		if g != 4 {
			return false
		}
	}
	return true
}

// smallGroups reports a list of one- and two-digit numbers ("36 38 40 42
// 44") that does not start with a trunk "0" as in "06 12 34 56 78".
func smallGroups(groups []int, d string) bool {
	for _, g := range groups {
		if g > 2 {
			return false
		}
	}
	return d[0] != '0'
}

// verdict is what phoneVerdict says of a candidate.
type verdict uint8

const (
	notPhone verdict = iota
	// isPhone: a phone number by the package rule.
	isPhone
	// isService: a valid company service number (toll-free, shared-cost,
	// premium-rate, universal access): not personal data, and its digits are
	// not tried again as shorter candidates.
	isService
)

// serviceNumber reports a valid number of a type that belongs to a company
// line, not a person: toll-free (0800, 800, 888, ...), shared-cost (0300,
// 0845, ...), premium-rate and universal access numbers.
func serviceNumber(num *phonenumbers.PhoneNumber) bool {
	switch phonenumbers.GetNumberType(num) {
	case phonenumbers.TOLL_FREE, phonenumbers.SHARED_COST, phonenumbers.PREMIUM_RATE, phonenumbers.UAN:
		return true
	}
	return false
}

// classify returns isService or isPhone for a parsed number judged a phone.
func classify(num *phonenumbers.PhoneNumber) verdict {
	if serviceNumber(num) {
		return isService
	}
	return isPhone
}

// phoneChecker classifies candidates and remembers its answers for the
// duration of one scan: the answer depends only on the candidate's digits and
// grouping, and phonenumbers' parsing is by far the most expensive step, so a
// text repeating the same number costs one parse per distinct shape.
type phoneChecker struct {
	opt     Options
	regions []string
	memo    map[string]phoneAnswer
}

type phoneAnswer struct {
	v       verdict
	subject bool
}

// maxMemo bounds the memo of one scan.
const maxMemo = 1 << 14

func newPhoneChecker(opt Options) *phoneChecker {
	return &phoneChecker{opt: opt, regions: regionsFor(opt.DefaultRegion), memo: make(map[string]phoneAnswer)}
}

// verdict classifies one candidate (see the package doc for the rule) and
// reports whether its digits are a known subject's phone.
func (pc *phoneChecker) verdict(cand string) (verdict, bool) {
	d := digitString(digitsOf(cand))
	if len(d) > maxPhoneDigits {
		return notPhone, false
	}
	groups := digitGroups(cand)
	plus := strings.HasPrefix(cand, "+")
	bare := len(groups) == 1 && len(cand) == len(d)
	var key strings.Builder
	key.Grow(len(d) + 2*len(groups) + 2)
	switch {
	case plus:
		key.WriteByte('+')
	case bare:
		key.WriteByte('b')
	default:
		key.WriteByte('f')
	}
	key.WriteString(d)
	for _, g := range groups {
		key.WriteByte(' ')
		key.WriteByte(byte('0' + g))
	}
	k := key.String()
	if a, ok := pc.memo[k]; ok {
		return a.v, a.subject
	}
	var a phoneAnswer
	a.v, a.subject = phoneVerdict(d, groups, plus, bare, pc.opt, pc.regions)
	if len(pc.memo) < maxMemo {
		pc.memo[k] = a
	}
	return a.v, a.subject
}

// phoneVerdict classifies the candidate of digits d (grouped as groups, with
// a leading "+" when plus, a bare digit run when bare). It returns the
// verdict by the package rule and whether d is a known subject's phone.
func phoneVerdict(d string, groups []int, plus, bare bool, opt Options, regions []string) (verdict, bool) {
	nd := len(d)
	subject := false
	if opt.Known.hasPhones() && (plus || nd >= minNationalDigits) {
		subject = opt.Known.knownPhoneDigits(d)
	}
	if plus {
		num, err := phonenumbers.Parse("+"+d, "")
		if err != nil || !phonenumbers.IsPossibleNumber(num) {
			return notPhone, subject
		}
		if phonenumbers.IsValidNumber(num) {
			return classify(num), subject
		}
		return isPhone, subject
	}
	if nd < minNationalDigits {
		return notPhone, subject
	}
	if orderShaped(groups) || len(groups) > maxChunks || smallGroups(groups, d) {
		return notPhone, subject
	}
	check := regions
	if bare {
		if nd < 10 || nd > 11 {
			check = nil
		} else if def := strings.ToUpper(strings.TrimSpace(opt.DefaultRegion)); def != "" {
			check = []string{def}
		} else {
			check = bareRegions
		}
	}
	for _, r := range check {
		num, err := phonenumbers.Parse(d, r)
		if err == nil && phonenumbers.IsPossibleNumber(num) && phonenumbers.IsValidNumber(num) {
			if serviceNumber(num) && d[0] != '0' && phonenumbers.GetNddPrefixForRegion(r, true) == "0" {
				// Where service lines are dialled with a trunk "0" (BR
				// "0303 ...", GB "03..."), digits written without it are
				// not that service line: "(303) 630-6430" is a US phone.
				continue
			}
			return classify(num), subject
		}
	}
	// A country code written without "+": a bare run of 12 or 13 digits, or
	// a formatted one of 11 or more, that is a valid international number
	// when read with a leading "+" ("5511912345678", "55 11 91234 5678").
	if d[0] != '0' && ((bare && nd >= 12 && nd <= 13) || (!bare && nd >= 11)) {
		num, err := phonenumbers.Parse("+"+d, "")
		if err == nil && phonenumbers.IsValidNumber(num) {
			return classify(num), subject
		}
	}
	return notPhone, subject
}

// phoneRuns returns the spans of phone-shaped runs: an optional "+" or "(",
// a digit, then digits, spaces, tabs, no-break spaces, "-", ".", "(", ")".
func phoneRuns(s string) [][2]int {
	var out [][2]int
	i := 0
	for i < len(s) {
		a := i
		if (s[i] == '+' || s[i] == '(') && i+1 < len(s) && isDigit(s[i+1]) {
			i++
		} else if s[i] == '+' && i+2 < len(s) && s[i+1] == '(' && isDigit(s[i+2]) {
			i += 2
		} else if !isDigit(s[i]) {
			i++
			continue
		}
		for i < len(s) {
			c := s[i]
			if isDigit(c) || c == ' ' || c == '\t' || c == '-' || c == '.' || c == '(' || c == ')' {
				i++
			} else if c == 0xc2 && i+1 < len(s) && s[i+1] == 0xa0 {
				i += 2
			} else {
				break
			}
		}
		out = append(out, [2]int{a, i})
	}
	return out
}

// findPhones adds phone spans (and known subjects' phones) found in s to sp.
func findPhones(s string, sp *spans, opt Options) {
	pc := newPhoneChecker(opt)
	for _, m := range phoneRuns(s) {
		a, b, ok := trimPhoneRun(s, m[0], m[1])
		if !ok {
			continue
		}
		// An id by context is never a phone, but may still hold a known
		// subject's phone.
		isID := idContext(s, a) || trailingIdent(s, b)
		if isID && !opt.Known.hasPhones() {
			continue
		}
		chunks := splitChunks(s, a, b)
		for i := 0; i < len(chunks); {
			if chunks[i].bad || chunks[i].digits == 0 {
				i++
				continue
			}
			if next, found := pc.longestAt(s, a, chunks, i, isID, sp); found {
				i = next
			} else {
				i++
			}
		}
	}
}

// trimPhoneRun drops the trailing non-digits of the run s[a:b] (a closing parenthesis is kept
// when the run opens one) and reports whether what is left is a digit-bounded candidate.
func trimPhoneRun(s string, a, b int) (int, int, bool) {
	open := strings.IndexByte(s[a:b], '(') >= 0
	for b > a && !isDigit(s[b-1]) {
		if s[b-1] == ')' && open {
			break
		}
		b--
	}
	return a, b, b > a && digitBounded(s, a, b)
}

// longestAt tries the chunks from i on, longest first (up to maxChunks chunks and
// maxPhoneDigits digits), within the run starting at runStart, and adds a span for the first
// that is a phone (not when isID) or a known subject's phone. A company line is accepted
// without a span. It returns the index of the chunk after the match and whether one matched.
func (pc *phoneChecker) longestAt(s string, runStart int, chunks []chunk, i int, isID bool, sp *spans) (int, bool) {
	for j := min(len(chunks)-1, i+maxChunks-1); j >= i; j-- {
		if !chunksUsable(chunks[i : j+1]) {
			continue
		}
		ca, cb := chunks[i].a, chunks[j].b
		if i == 0 && s[runStart] == '+' {
			ca = runStart
		}
		if sp.overlaps(ca, cb) {
			continue
		}
		v, subject := pc.verdict(s[ca:cb])
		phone := v == isPhone && !isID
		if v == isService && !subject {
			// A company line: accepted, and its digits are not
			// tried again as a shorter number.
			return j + 1, true
		}
		if !phone && !subject {
			continue
		}
		var kinds []Kind
		if phone {
			kinds = append(kinds, KindPhone)
		}
		if subject {
			kinds = append(kinds, KindSubject)
		}
		sp.add(ca, cb, kinds...)
		return j + 1, true
	}
	return 0, false
}

// chunksUsable reports whether every chunk is good and has digits, and together they hold at
// most maxPhoneDigits digits.
func chunksUsable(cs []chunk) bool {
	nd := 0
	for _, c := range cs {
		if c.bad || c.digits == 0 {
			return false
		}
		nd += c.digits
	}
	return nd <= maxPhoneDigits
}
