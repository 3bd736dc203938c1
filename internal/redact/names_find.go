package redact

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Word lists of the name rules (folded: lower case, accents removed). See the package doc,
// "Person names".
var (
	// nameParticles join the words of one name ("Maria da Silva", "José de la Cruz").
	nameParticles = setOf("de da do dos das del della di du van von der den la las los le el y e dal ter")
	// nameFillers may stand between a cue and the name ("falar com a Maria", "customer named").
	nameFillers = setOf("o a os as the named called chamado chamada llamado llamada seu sua")
	// honorifics introduce a name whatever it is ("Sr. Branco", "Dona Rosa", "Mr. Green").
	honorifics = setOf("sr sra srta sres mr mrs ms mx dr dra dona senor senora senorita senhor senhora mme mlle monsieur")
	// honorificsCapOnly are honorifics that are also ordinary words: only capitalised.
	honorificsCapOnly = setOf("miss don dom sir madam madame prof seu")
	// strongCues introduce a name; after them an unknown capitalised word is a name too.
	strongCues = phrasesOf("falar com|fale com|falei com|falou com|falamos com|ligar para|ligue para|" +
		"ask for|asked for|speak to|speak with|spoke to|spoke with|talk to|talk with|talked to|" +
		"name is|names are|name s|nome e|nome dela e|nome dele e|se chama|chama se|se llama|" +
		"nombre es|hablar con|hable con|preguntar por|pergunte por|perguntar por|procure por|" +
		"atendido por|atendida por|tell|told|remind|avise|avisar|avisei|lembre|diga|dizer|disse|attn|cc|regards|cheers|thanks|thank you|obrigado|obrigada|" +
		"atenciosamente|att|gracias|saludos|abracos|hi|hello|hey|dear|ola|oi|prezado|prezada|" +
		"caro|cara|hola|estimado|estimada|querido|querida|bom dia|boa tarde|boa noite|" +
		"buenos dias|buenas tardes|good morning|good afternoon")
	// weakCues introduce a person; after them a known given name or surname is a name, and
	// so are two capitalised words ("customer Zoltan Ferenczy").
	weakCues = phrasesOf("customer|customers|client|clients|cliente|clientes|clienta|user|usuario|" +
		"usuaria|caller|buyer|comprador|compradora|titular|consumidor|consumidora|tenant|" +
		"inquilino|inquilina|patient|paciente|contact|contato|contacto|requester|solicitante|" +
		"holder|named|called|chamado|chamada|llamado|llamada")
	// orgSuffixes after capitalised words make them an organisation ("Acme Ltda").
	orgSuffixes = setOf("ltda ltd inc llc gmbh corp corporation incorporated co plc ag bv srl sl sas lda eireli " +
		"epp llp limited industries industrias group grupo holding holdings sons filhos associados advogados consultoria " +
		"comercio industria bank seguros tecnologia labs lab studio studios foods logistics logistica " +
		"transportes partners company companhia cia technologies solutions systems software " +
		"services servicos distribuidora importadora engenharia construtora editora farma motors " +
		"airlines airways energy energia telecom controls electric health insurance capital media " +
		"networks brothers bros chemicals steel mining pharmaceuticals petroleum automotive retail " +
		"hotels resorts realty imoveis imobiliaria alimentos bebidas cosmeticos calcados moveis " +
		"eletro eletronicos sa me")
	// orgHeads before capitalised words make them a product ("Microsoft Entra", "Google
	// Workspace", "Amazon Web Services").
	orgHeads = setOf("microsoft google amazon aws apple meta adobe oracle sap ibm salesforce atlassian " +
		"azure cisco zoho mercado jetbrains github gitlab slack zendesk hubspot shopify stripe " +
		"twilio cloudflare samsung motorola xiaomi sony nintendo intel nvidia openai anthropic " +
		"new relic datadog elastic mongodb redis vmware dell hp lenovo")
	// placeHeads before capitalised words make them a place or an institution ("São Paulo",
	// "Rio Branco", "Hospital Santa Maria", "Rua Augusto Ferreira").
	placeHeads = setOf("sao santa santo san saint st porto puerto rio vila villa monte fort port lake mount cabo " +
		"ilha nova novo belo campo ponta praia foz lagoa serra vale cidade jardim bairro parque " +
		"rua avenida av travessa alameda estrada rodovia praca largo calle avenue plaza paseo " +
		"colonia ciudad playa isla barrio hospital banco colegio universidade university universidad instituto institute " +
		"fundacao fundacion foundation clinica farmacia escola escuela restaurante hotel loja " +
		"supermercado igreja edificio condominio shopping estadio aeroporto airport estacao " +
		"station museu museum teatro cine cinema college school church lago mar cerro baia bahia " +
		"north south east west norte sul sur leste oeste new los las el")
	// placeTails after capitalised words make them a street or a place ("Baker Street").
	placeTails = setOf("street st avenue ave road rd boulevard blvd lane drive square park way city " +
		"county state valley beach bay island hills heights")
)

func setOf(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// phrasesOf indexes "|"-separated phrases by their last word: the word sequences ending there.
func phrasesOf(list string) map[string][][]string {
	m := map[string][][]string{}
	for _, p := range strings.Split(list, "|") {
		w := strings.Fields(p)
		m[w[len(w)-1]] = append(m[w[len(w)-1]], w)
	}
	return m
}

// nameScan is one run of the name rules over a normalised text.
type nameScan struct {
	s       string
	toks    []ntok
	cls     []uint16
	blocked []bool // an organisation, place, brand or identifier word: never part of a name
	named   []bool
	sp      *spans
}

// findNames adds a KindName span for each person's name in s (the rules: package doc,
// "Person names"), in four phases: words, what is not a name (block), names after cues,
// names by their words (sequences).
func findNames(s string, sp *spans) {
	lx := nameLexicon()
	toks := nameToks(s)
	if len(toks) == 0 {
		return
	}
	ns := &nameScan{s: s, toks: toks, cls: make([]uint16, len(toks)), blocked: make([]bool, len(toks)),
		named: make([]bool, len(toks)), sp: sp}
	for i, t := range toks {
		ns.cls[i] = lx.words[t.f]
		ns.blocked[i] = t.glued || !wordish(s, t.a, t.b) || sp.overlaps(t.a, t.b)
	}
	ns.blockPhrases(lx)
	ns.blockLabels()
	ns.blockExamples()
	ns.blockOrgsAndPlaces()
	ns.cues()
	ns.sequences()
}

// wordish reports whether s[a:b] stands as a word of prose, not inside an identifier, a path,
// an address or code: the character before is not a letter, digit or one of "_@/\=.#$%&-+",
// and the one after is not a digit or one of "_@/\=" nor a "." followed by a letter.
func wordish(s string, a, b int) bool {
	if a > 0 {
		r, _ := utf8.DecodeLastRuneInString(s[:a])
		if unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("_@/\\=.#$%&-+", r) {
			return false
		}
	}
	if b < len(s) {
		r, n := utf8.DecodeRuneInString(s[b:])
		if unicode.IsDigit(r) || strings.ContainsRune("_@/\\=", r) {
			return false
		}
		if r == '.' && b+n < len(s) {
			if r2, _ := utf8.DecodeRuneInString(s[b+n:]); unicode.IsLetter(r2) {
				return false
			}
		}
	}
	return true
}

// blockPhrases blocks the words of multi-word places and brands ("Times New Roman",
// "Santa Catarina", "Harley Davidson").
func (ns *nameScan) blockPhrases(lx *lexicon) {
	for i := range ns.toks {
		for n := min(lx.phraseStart[ns.toks[i].f], len(ns.toks)-i); n >= 2; n-- {
			parts := make([]string, 0, n)
			ok := true
			for j := i; j < i+n && ok; j++ {
				if j > i && strings.Trim(ns.toks[j].gap, " -&'") != "" {
					ok = false
				}
				parts = append(parts, ns.toks[j].f)
			}
			if ok && lx.phrases[strings.Join(parts, " ")] {
				for j := i; j < i+n; j++ {
					ns.blocked[j] = true
				}
				break
			}
		}
	}
}

// capRun returns the end (exclusive) of the run of capitalised words starting at i, joined by
// plain gaps, particles and "&" ("Rio de Janeiro", "Silva & Filhos"), at most 6 words.
func (ns *nameScan) capRun(i int) int {
	j := i + 1
	for j < len(ns.toks) && j-i < 6 {
		t := ns.toks[j]
		switch {
		case (t.cap || t.acronym) && (plainGap(t.gap) || strings.Trim(t.gap, " &") == ""):
			j++
		case nameParticles[t.f] && !t.cap && plainGap(t.gap) && j+1 < len(ns.toks) && ns.toks[j+1].cap && plainGap(ns.toks[j+1].gap):
			j += 2
		default:
			return j
		}
	}
	return j
}

// blockOrgsAndPlaces blocks capitalised runs ending in a company suffix ("Acme Ltda",
// "Silva & Filhos", "Acme S.A.") or a street word ("Baker Street"), and runs led by a place or
// institution word ("São Paulo", "Rio Branco", "Hospital Santa Maria").
func (ns *nameScan) blockOrgsAndPlaces() {
	for i := 0; i < len(ns.toks); i++ {
		t := ns.toks[i]
		if !t.cap && !t.acronym {
			continue
		}
		end := ns.capRun(i)
		if (placeHeads[t.f] || orgHeads[t.f]) && end > i+1 {
			ns.block(i, end)
			i = end - 1
			continue
		}
		for k := i + 1; k < end; k++ {
			if orgSuffixes[ns.toks[k].f] || placeTails[ns.toks[k].f] || ns.dottedSA(k) ||
				strings.HasPrefix(ns.s[ns.toks[k].a:], "GmbH") {
				ns.block(i, k+1)
			}
		}
	}
}

// dottedSA reports whether word k is the "S" of "S.A." or "S/A" (split by the word rules).
func (ns *nameScan) dottedSA(k int) bool {
	if k+1 >= len(ns.toks) || ns.s[ns.toks[k].a:ns.toks[k].b] != "S" {
		return false
	}
	n := ns.toks[k+1]
	return ns.s[n.a:n.b] == "A" && (n.gap == "." || n.gap == "/")
}

func (ns *nameScan) block(a, b int) {
	for j := a; j < b; j++ {
		ns.blocked[j] = true
	}
}

// isUnknown reports whether word i is a capitalised word the lexicon does not know as an
// ordinary word, brand or place: possibly a surname or a foreign given name.
func (ns *nameScan) isUnknown(i int) bool {
	t := ns.toks[i]
	return t.cap && !ns.blocked[i] && ns.cls[i]&(lexOrdinary|lexBrand|lexPlace|lexWord) == 0 &&
		utf8.RuneCountInString(t.f) >= 2 && !wordShaped(t.f)
}

// wordSuffixes end ordinary words of English, Portuguese and Spanish far more often than
// names ("Validation", "Payment", "Downgrade" is not caught: the word lists are).
var wordSuffixes = []string{"tion", "sion", "ment", "ness", "ity", "ing", "able", "ible", "ful", "less",
	"ous", "ive", "ize", "ify", "ship", "ism", "ence", "ance", "ics",
	"cao", "coes", "mento", "dade", "avel", "ivel", "ismo", "agem", "cion", "ciones", "miento", "idad",
	"mente"}

// wordShaped reports whether folded word f ends like an ordinary word (wordSuffixes) and is
// long enough for that to mean something (6 letters or more).
func wordShaped(f string) bool {
	if utf8.RuneCountInString(f) < 6 {
		return false
	}
	for _, x := range wordSuffixes {
		if strings.HasSuffix(f, x) {
			return true
		}
	}
	return false
}

// nameWord reports whether word i is a known given name or surname that is not a brand.
func (ns *nameScan) nameWord(i int) bool {
	return !ns.blocked[i] && ns.cls[i]&(lexGiven|lexSurname) != 0 && ns.cls[i]&lexBrand == 0
}

// strongGiven reports whether word i is a given name that is not also an ordinary word, a
// brand or a place ("Marisol", not "Grace", "Alexa" or "Georgia").
func (ns *nameScan) strongGiven(i int) bool {
	return !ns.blocked[i] && ns.cls[i]&lexGiven != 0 && ns.cls[i]&(lexOrdinary|lexBrand|lexPlace) == 0
}

// mark records words [a, b) as a name.
func (ns *nameScan) mark(a, b int) {
	x, y := ns.toks[a].a, ns.toks[b-1].b
	for j := a; j < b; j++ {
		ns.named[j] = true
	}
	if !ns.sp.overlaps(x, y) {
		ns.sp.add(x, y, KindName)
	}
}

// extend returns the end of a name starting at i: the following words joined by plain gaps
// (or a particle) that are name words or unknown capitalised words, at most 5 words.
func (ns *nameScan) extend(i int) int {
	j := i + 1
	for j < len(ns.toks) && j-i < 5 {
		t := ns.toks[j]
		switch {
		case plainGap(t.gap) && (ns.nameWord(j) && (t.cap || !ns.toks[i].cap) || ns.isUnknown(j)):
			j++
		case nameParticles[t.f] && !t.cap && plainGap(t.gap) && j+1 < len(ns.toks) && ns.toks[j+1].cap &&
			plainGap(ns.toks[j+1].gap) && (ns.nameWord(j+1) || ns.isUnknown(j+1)):
			j += 2
		default:
			return j
		}
	}
	return j
}

// blockLabels blocks the words inside square brackets, on one line: the names of buttons,
// actions and fields of a procedure ("[Validate Purchase]", "[Pull up Account]").
func (ns *nameScan) blockLabels() {
	open := -1
	for i := range ns.toks {
		g := ns.toks[i].gap
		if strings.ContainsAny(g, "]\n") {
			open = -1
		}
		if k := strings.LastIndexByte(g, '['); k >= 0 && !strings.Contains(g[k:], "]") {
			open = i
		}
		if open >= 0 {
			ns.blocked[i] = true
		}
	}
}

// exampleCues introduce illustrations ("such as 'George Constanza'", "For example: John
// Smith → jsmith1", "por exemplo"): what follows them to the end of the sentence or line is
// an example a procedure gives, not a person it is about (docs/gate.md says what this costs).
var exampleCues = phrasesOf("such as|for example|for instance|e g|eg|i e|por exemplo|por ejemplo|" +
	"tal como|tales como|tais como|exemplo|ejemplo|example")

// blockExamples blocks the words that follow an example cue, to the end of the sentence or line.
func (ns *nameScan) blockExamples() {
	for i := 0; i < len(ns.toks); i++ {
		if !ns.phraseEndsAt(exampleCues, i) {
			continue
		}
		j := i + 1
		for ; j < len(ns.toks) && !strings.ContainsAny(ns.toks[j].gap, "\n!?;") &&
			!(j > i+1 && strings.Contains(ns.toks[j].gap, ". ")); j++ {
			ns.blocked[j] = true
		}
		i = j - 1
	}
}
