package redact

import (
	"strings"
	"unicode/utf8"
)

// cue strengths (cueAt).
const (
	cueNone = iota
	cueWeak
	cueStrong
	cueHonorific
)

// cueAt returns the strength of the cue ending at word i, if any.
func (ns *nameScan) cueAt(i int) int {
	t := ns.toks[i]
	if t.acronym {
		return cueNone
	}
	if honorifics[t.f] {
		return cueHonorific
	}
	if honorificsCapOnly[t.f] && t.cap {
		// "Seu Benedito", "Miss Pennington", but not "Seu Pedido Foi Enviado": an ordinary
		// word after them is not a name.
		return cueStrong
	}
	if ns.phraseEndsAt(strongCues, i) {
		return cueStrong
	}
	if ns.phraseEndsAt(weakCues, i) {
		return cueWeak
	}
	return cueNone
}

// phraseEndsAt reports whether one of the phrases of set ends at word i, its words joined by
// spaces or a hyphen ("chama-se" is one word "chama-se": its parts are matched too).
func (ns *nameScan) phraseEndsAt(set map[string][][]string, i int) bool {
	if strings.IndexByte(ns.toks[i].f, '-') > 0 {
		words := strings.Split(ns.toks[i].f, "-")
		if ps := set[words[len(words)-1]]; ps != nil {
			for _, p := range ps {
				if strings.Join(p, " ") == strings.Join(words, " ") {
					return true
				}
			}
		}
	}
	for _, p := range set[ns.toks[i].f] {
		ok := i+1 >= len(p)
		for k := 1; ok && k < len(p); k++ {
			w := ns.toks[i-k]
			ok = w.f == p[len(p)-1-k] && !strings.ContainsAny(ns.toks[i-k+1].gap, "\n.!?;")
		}
		if ok {
			return true
		}
	}
	return false
}

// cues marks the names that follow a cue: after an honorific any capitalised word; after a
// strong cue a name word or an unknown capitalised word (or a lower-case given name); after
// a weak cue a name word, two capitalised words, or a lower-case given name.
func (ns *nameScan) cues() {
	for i := 0; i < len(ns.toks)-1; i++ {
		c := ns.cueAt(i)
		if c == cueNone {
			continue
		}
		j := ns.afterCue(i, c)
		if j < 0 || ns.named[j] {
			continue
		}
		if ns.acceptAfterCue(j, c) {
			ns.mark(j, ns.extend(j))
		}
	}
}

// afterCue returns the word a cue ending at i introduces, past fillers ("falar com a Maria",
// "customer named"), or -1 when a sentence ends first.
func (ns *nameScan) afterCue(i, c int) int {
	for j := i + 1; j < len(ns.toks) && j <= i+3; j++ {
		g := ns.toks[j].gap
		trim := " ,:"
		if c == cueHonorific && j == i+1 {
			trim = " ."
		}
		if strings.Trim(g, trim) != "" && strings.Trim(g, " ,:-–") != "" {
			return -1
		}
		if nameFillers[ns.toks[j].f] && !ns.toks[j].cap {
			continue
		}
		return j
	}
	return -1
}

// acceptAfterCue applies the rule of cue strength c to word j.
func (ns *nameScan) acceptAfterCue(j, c int) bool {
	t := ns.toks[j]
	if ns.blocked[j] || t.acronym {
		return false
	}
	if !t.cap {
		nextOK := j+1 < len(ns.toks) && plainGap(ns.toks[j+1].gap) && !ns.toks[j+1].cap && !ns.blocked[j+1]
		sur := nextOK && ns.cls[j+1]&lexSurname != 0 && ns.cls[j+1]&lexBrand == 0
		plain := ns.cls[j]&(lexOrdinary|lexBrand|lexWord) == 0 && utf8.RuneCountInString(t.f) >= 3
		return ns.strongGiven(j) || (c == cueHonorific && ns.cls[j]&lexSurname != 0) ||
			(sur && ns.cls[j]&lexGiven != 0 && ns.cls[j]&lexBrand == 0) || (plain && sur)
	}
	switch c {
	case cueHonorific:
		return ns.cls[j]&lexBrand == 0 || ns.cls[j]&(lexGiven|lexSurname) != 0
	case cueStrong:
		return ns.nameWord(j) || ns.isUnknown(j)
	default:
		if ns.nameWord(j) && ns.cls[j]&lexPlace == 0 {
			return true
		}
		return j+1 < len(ns.toks) && plainGap(ns.toks[j+1].gap) && ns.toks[j+1].cap &&
			(ns.nameWord(j) || ns.isUnknown(j)) && (ns.nameWord(j+1) || ns.isUnknown(j+1))
	}
}

// sequences marks names found by their words, without a cue: a given name (not an ordinary
// word, brand or place) followed by a name word or an unknown capitalised word ("Marisol
// Quintanilha", "João Silva"); any given name, also an ordinary word or a place, followed
// by a known surname that is not an ordinary word ("Grace Kelly", "Victoria Gomez"); an
// unknown capitalised word followed by such a surname; a capitalised given name alone
// ("Marisol prefers"); and, in lower case, a given name followed by a surname ("maria silva").
func (ns *nameScan) sequences() {
	for i := 0; i < len(ns.toks); i++ {
		if ns.named[i] || ns.blocked[i] || ns.toks[i].acronym {
			continue
		}
		if ns.sequenceAt(i) {
			end := ns.extend(i)
			ns.mark(i, end)
			i = end - 1
		}
	}
}

// sequenceAt reports whether a name starts at word i (sequences).
func (ns *nameScan) sequenceAt(i int) bool {
	t := ns.toks[i]
	next := i+1 < len(ns.toks) && plainGap(ns.toks[i+1].gap) && !ns.blocked[i+1] && !ns.toks[i+1].acronym
	strongSur := next && ns.cls[i+1]&lexSurname != 0 && ns.cls[i+1]&(lexOrdinary|lexBrand|lexPlace) == 0
	if !t.cap {
		return next && !ns.toks[i+1].cap && ns.strongGiven(i) && utf8.RuneCountInString(t.f) >= 3 &&
			(strongSur || ns.cls[i+1]&lexGiven == 0 && ns.cls[i+1]&lexSurname != 0 && ns.cls[i+1]&(lexBrand|lexPlace) == 0)
	}
	nextCap := next && ns.toks[i+1].cap
	nextName := nextCap && (ns.nameWord(i+1) || ns.isUnknown(i+1))
	switch {
	case ns.strongGiven(i):
		return true
	case ns.cls[i]&lexGiven != 0 && nextCap && strongSur:
		return true
	case ns.cls[i]&lexGiven != 0 && ns.cls[i]&(lexOrdinary|lexBrand) == 0 && nextName:
		// a given name that is also a place, followed by a name word ("Guadalupe Echeverría")
		return true
	case ns.isUnknown(i) && nextCap && (strongSur || ns.cls[i+1]&lexSurname != 0 && ns.cls[i+1]&lexOrdinary != 0):
		return true
	case ns.isUnknown(i) && !t.start && nextCap && ns.cls[i+1]&lexSurname != 0 && ns.cls[i+1]&(lexOrdinary|lexBrand) == 0:
		// an unknown word before a surname that is also a place ("Iara Montenegro")
		return true
	case ns.isUnknown(i) && t.start && nextCap && ns.lowerAfter(i+2) && !ns.labelAfter(i+2) &&
		(ns.isUnknown(i+1) || ns.cls[i+1]&lexSurname != 0 && ns.cls[i+1]&lexBrand == 0):
		// a sentence opening with two name-like words, then prose ("Jurandir Petrov prefere")
		return true
	case ns.isUnknown(i) && !t.start && nextCap && ns.isUnknown(i+1) && utf8.RuneCountInString(t.f) >= 3 &&
		utf8.RuneCountInString(ns.toks[i+1].f) >= 3 && !ns.labelAfter(i+2):
		// two unknown capitalised words inside a sentence ("para Odete Petrov")
		return true
	}
	return false
}

// lowerAfter reports whether word k is a lower-case word of the same sentence: what follows
// a name in prose, not the next word of a Title Case title nor the end of a short title.
func (ns *nameScan) lowerAfter(k int) bool {
	if k >= len(ns.toks) {
		return false
	}
	t := ns.toks[k]
	return !t.cap && !t.acronym && !strings.ContainsAny(t.gap, "\n.!?;")
}

// labelNouns after two capitalised words make them the name of a thing ("the Recover Username
// subflow", "the Order Status page").
var labelNouns = setOf("flow flows subflow subflows button buttons option options page pages screen tab " +
	"field fields menu form action actions team queue report module tool app api service plan " +
	"policy workflow template dashboard panel portal feature setting settings step steps list " +
	"fluxo fluxos botao opcao opcoes campo campos aba tela modulo equipe relatorio fila painel " +
	"flujo boton opcion pantalla equipo informe cola panel")

// labelAfter reports whether word k is a label noun of the same sentence (labelNouns).
func (ns *nameScan) labelAfter(k int) bool {
	return k < len(ns.toks) && labelNouns[ns.toks[k].f] && !strings.ContainsAny(ns.toks[k].gap, "\n.!?;")
}
