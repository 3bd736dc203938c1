package redact

// Documents are groups of digits with an optional separator between groups:
// any of ". - /" or a space, whatever the position.
var (
	cnpjGroups = []int{2, 3, 3, 4, 2}
	cpfGroups  = []int{3, 3, 3, 2}
)

func isDocSep(c byte) bool { return c == '.' || c == '-' || c == '/' || c == ' ' }

// matchDoc returns the end of the document shaped as groups starting at p
// (digits, at most one separator between groups), or -1.
func matchDoc(s string, p int, groups []int) int {
	i := p
	for k, g := range groups {
		if k > 0 && i < len(s) && isDocSep(s[i]) && i+1 < len(s) && isDigit(s[i+1]) {
			i++
		}
		for n := 0; n < g; n++ {
			if i >= len(s) || !isDigit(s[i]) {
				return -1
			}
			i++
		}
	}
	return i
}

func digitsOf(s string) []byte {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			out = append(out, s[i]-'0')
		}
	}
	return out
}

func allSame(d []byte) bool {
	for _, x := range d[1:] {
		if x != d[0] {
			return false
		}
	}
	return true
}

// validCPF checks the 11 digits d (values 0..9) for CPF check digits.
func validCPF(d []byte) bool {
	if len(d) != 11 || allSame(d) {
		return false
	}
	for k := 9; k <= 10; k++ {
		sum := 0
		for i := 0; i < k; i++ {
			sum += int(d[i]) * (k + 1 - i)
		}
		r := (sum * 10) % 11
		if r == 10 {
			r = 0
		}
		if r != int(d[k]) {
			return false
		}
	}
	return true
}

// validCNPJ checks the 14 digits d (values 0..9) for CNPJ check digits.
func validCNPJ(d []byte) bool {
	if len(d) != 14 || allSame(d) {
		return false
	}
	w1 := []int{5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2}
	w2 := []int{6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2}
	for k, w := range [][]int{w1, w2} {
		sum := 0
		for i, x := range w {
			sum += int(d[i]) * x
		}
		r := sum % 11
		if r < 2 {
			r = 0
		} else {
			r = 11 - r
		}
		if r != int(d[12+k]) {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// digitBounded reports whether s[a:b] is not glued to further digits.
func digitBounded(s string, a, b int) bool {
	if a > 0 && isDigit(s[a-1]) {
		return false
	}
	if b < len(s) && isDigit(s[b]) {
		return false
	}
	return true
}

// findDocuments adds CNPJ and CPF spans found in s to sp.
func findDocuments(s string, sp *spans, known *KnownSubjects) {
	for _, kind := range []Kind{KindCNPJ, KindCPF} {
		groups, valid := cnpjGroups, validCNPJ
		if kind == KindCPF {
			groups, valid = cpfGroups, validCPF
		}
		for _, m := range docClusters(s, groups) {
			a, b := m[0], m[1]
			if !digitBounded(s, a, b) || sp.overlaps(a, b) {
				continue
			}
			d := digitsOf(s[a:b])
			if !valid(d) {
				continue
			}
			if len(d) == b-a && introducedBy(s, a, procWords, 0) {
				// A bare run introduced right after an order, ticket,
				// invoice, protocol, tracking or batch word: an id whose
				// digits happen to pass the check (about 1 in 100 do).
				continue
			}
			kinds := []Kind{kind}
			if known.hasHandle("document:" + digitString(d)) {
				kinds = append(kinds, KindSubject)
			}
			sp.add(a, b, kinds...)
		}
	}
}

func digitString(d []byte) string {
	b := make([]byte, len(d))
	for i, x := range d {
		b[i] = x + '0'
	}
	return string(b)
}

// docClusters tries the document shape groups at the start of every group
// of digits in the clusters of digits and "./-" or spaces holding at least 11
// digits, and returns the matches as offsets in s. Trying every group start
// (not only the leftmost match) keeps a document found after a prefix of
// digits ("555 529 982 247 25"); each try reads at most 18 bytes, so the
// cost stays linear.
func docClusters(s string, groups []int) [][2]int {
	var out [][2]int
	i := 0
	for i < len(s) {
		if !isDigit(s[i]) {
			i++
			continue
		}
		a, nd := i, 0
		for i < len(s) && (isDigit(s[i]) || isDocSep(s[i])) {
			if isDigit(s[i]) {
				nd++
			}
			i++
		}
		if nd < 11 {
			continue
		}
		for p := a; p < i; p++ {
			if !isDigit(s[p]) || (p > a && isDigit(s[p-1])) {
				continue
			}
			if e := matchDoc(s[:i], p, groups); e > 0 {
				out = append(out, [2]int{p, e})
			}
		}
	}
	return out
}
