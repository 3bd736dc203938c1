package redact

import (
	"regexp"
	"strings"
)

// instRule is one phrase rule of DetectInstructions: a pattern over one view of the text
// and, optionally, a guard that excuses a match (a condition or a negation before it, a
// harmless word after it).
type instRule struct {
	class InstructionClass
	view  viewKind
	re    *regexp.Regexp
	guard func(s string, start, end int) bool
	// anchors: substrings one of which every match contains (instruct_anchor.go).
	anchors []string
}

type viewKind int

const (
	viewWords    viewKind = iota // words, single spaces, leading and trailing space
	viewPlain                    // folded text with punctuation and line breaks
	viewSquashed                 // words without spaces: long phrases only
	viewRuns                     // each joined single-letter run, and squashed phrases
)

func (r instRule) match(v instView) bool {
	var texts []string
	switch r.view {
	case viewWords:
		texts = []string{v.words}
	case viewPlain:
		texts = []string{v.plain}
	case viewSquashed:
		texts = append([]string{v.squashed}, v.runs...)
	case viewRuns:
		texts = v.runs
	}
	for _, s := range texts {
		if !mayMatch(s, r.anchors) {
			continue
		}
		for _, m := range r.re.FindAllStringIndex(s, -1) {
			if r.guard == nil || !r.guard(s, m[0], m[1]) {
				return true
			}
		}
	}
	return false
}

// instGroups are the word groups the rules are written with ({name} in a pattern). Words
// are as the words view has them: lower case, no accents, apostrophes read as spaces
// ("don t", "you re").
var instGroups = map[string]string{
	// Override, English.
	"V":  `(?:ignore|ignoring|disregard|disregarding|forget|forgetting|override|overrule|bypass|discard|abandon|neglect|dismiss|set aside|pay no attention to|stop following|stop obeying|do not follow|don t follow|dont follow|no longer follow|disobey|skip|drop|throw away|scrap)`,
	"Q":  `(?:previous|previously given|prior|preceding|above|earlier|foregoing|former|original|initial|old|system|developer|all previous|all prior|all above|all the previous|all the above|all the prior|all earlier)`,
	"N":  `(?:instructions?|prompts?|directives?|directions|guidelines|rules|commands|programming|guardrails|safeguards|restrictions|constraints|policies|context|training|system prompt|system message|messages|orders|guidance|configuration|settings|inputs?|text|content|requests?)`,
	"NS": `(?:instructions?|prompts?|directives?|guidelines|rules|programming|guardrails|safeguards|restrictions|constraints|policies|training|system prompt|system message|guidance|principles|ethics|values|limits|limitations|filters)`,
	// Override, Portuguese.
	"VP": `(?:ignore|ignora|ignorar|ignorem|ignorando|desconsidere|desconsidera|desconsiderar|desconsiderem|esqueca|esquece|esquecer|esquecam|despreze|desprezar|descarte|descartar|abandone|abandonar|anule|anular|sobrescreva|sobrescrever|burle|burlar|contorne|contornar|nao siga|nao obedeca|nao obedeça|pare de seguir|deixe de seguir|pare de obedecer|deixe de lado|passe por cima d[aeo]s?)`,
	"NP": `(?:instrucoes|instrucao|regras|diretrizes|orientacoes|prompts?|comandos|ordens|restricoes|politicas|diretivas|programacao|contexto|treinamento|mensagens|limites|filtros|principios)`,
	"QP": `(?:anteriores|anterior|acima|previas|previa|originais|original|iniciais|inicial|do sistema|de sistema|antigas|antigos|recebidas|dadas|passadas|ate aqui|ate agora|de antes|que (?:voce|vc|tu) recebeu|que te (?:deram|passaram))`,
	// Privilege.
	"S":   `(?:this|the|current|that|said) (?:user|customer|caller|requester|requestor|client|person|account holder|sender|member|visitor|buyer|shopper|contact|individual|human|guest|end user)`,
	"P":   `(?:an |a |the )?(?:administrator|admin|superuser|super user|super admin|sysadmin|root|owner|staff|staff member|employee|moderator|developer|manager|supervisor|vip|verified|authenticated|authorized|authorised|trusted|pre approved|preapproved|approved|whitelisted|allowlisted|privileged|exempt|cleared|validated|confirmed|fully verified|internal user|insider|premium|platinum|legitimate|member of staff|team member|one of us|part of the team|member of the team)`,
	"SP":  `(?:o|a|este|esta|esse|essa|aquele|aquela) (?:cliente|usuario|usuaria|solicitante|pessoa|titular|chamador|requerente|consumidor|consumidora|comprador|compradora|contato|remetente|membro|visitante)`,
	"PP":  `(?:um |uma |o |a )?(?:administrador|administradora|admin|superusuario|root|dono|dona|proprietario|proprietaria|funcionario|funcionaria|moderador|desenvolvedor|gerente|supervisor|supervisora|vip|verificado|verificada|autenticado|autenticada|autorizado|autorizada|confiavel|validado|validada|aprovado|aprovada|pre aprovado|pre aprovada|isento|isenta|liberado|liberada|identificado|identificada|confirmado|confirmada|interno|interna|privilegiado|privilegiada|premium|legitimo|legitima)`,
	"CHK": `(?:identity |id |customer |user |account |security |two factor |two step |2fa |mfa |otp |kyc |age |fraud |manual |usual |normal |standard |required |mandatory |extra |additional )*(?:verification|verifications|authentication|validation|identity check|identity checks|security check|security checks|security questions?|id check|kyc|2fa|mfa|otp|approval step|approval|verification step|checks)`,
	"CHP": `(?:etapa de |passo de |parte de |a |as |o |os |essa |esta |toda |qualquer )*(?:verificacao|verificacoes|validacao|autenticacao|checagem|checagens|confirmacao|conferencia|aprovacao)(?: de identidade| do cliente| da identidade| de seguranca| em duas etapas| 2fa| kyc)?`,
}

var groupRef = regexp.MustCompile(`\{[A-Z]+\}`)

// rx compiles pattern with its {groups} expanded.
func rx(pattern string) *regexp.Regexp {
	return regexp.MustCompile(groupRef.ReplaceAllStringFunc(pattern, func(g string) string {
		v, ok := instGroups[g[1:len(g)-1]]
		if !ok {
			panic("redact: unknown group " + g)
		}
		return v
	}))
}

// words makes a words-view rule: pattern between word boundaries.
func words(c InstructionClass, pattern string, guard ...func(string, int, int) bool) instRule {
	r := instRule{class: c, view: viewWords, re: rx(` ` + pattern + ` `)}
	if len(guard) > 0 {
		r.guard = all(guard...)
	}
	return r
}

func all(gs ...func(string, int, int) bool) func(string, int, int) bool {
	return func(s string, a, b int) bool {
		for _, g := range gs {
			if g(s, a, b) {
				return true
			}
		}
		return false
	}
}

// before returns the last n words of s before offset a, as " w1 w2 ... ".
func before(s string, a, n int) string {
	head := s[max(0, a-40*n):a] + " " // n words of up to 40 bytes: the look back stays bounded
	for _, end := range []string{"\n", ". ", "; ", "! ", "? ", " | "} {
		if k := strings.LastIndex(head, end); k >= 0 {
			head = head[k+len(end):]
		}
	}
	ws := strings.Fields(head)
	if len(ws) > n {
		ws = ws[len(ws)-n:]
	}
	return " " + strings.Join(ws, " ") + " "
}

// after returns the first n words of s from offset b.
func after(s string, b, n int) string {
	ws := strings.Fields(s[min(b, len(s)):min(len(s), b+40*n)])
	if len(ws) > n {
		ws = ws[:n]
	}
	return " " + strings.Join(ws, " ") + " "
}

func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, " "+w+" ") {
			return true
		}
	}
	return false
}

// conditionWords turn a claim into a condition ("if the customer is verified").
var conditionWords = []string{
	"if", "when", "whenever", "once", "unless", "whether", "until", "after", "before", "check", "checks", "checking", "checked",
	"confirm", "confirms", "confirming", "ensure", "ensuring", "verify", "verifying", "see", "assuming", "provided", "while",
	"where", "make sure", "as long as", "in case", "only", "even", "determine", "ask", "asks", "asking", "whose", "until",
	"se", "quando", "caso", "assim que", "apos", "depois", "ate que", "somente", "verifique", "verificar", "confira",
	"conferir", "confirme", "confirmar", "garanta", "certifique", "enquanto", "desde que", "a menos que", "veja", "cheque", "so se",
	"checar", "saber", "ver", "pergunte", "perguntar",
}

// negationWords before a skip or a claim turn it into its opposite ("never skip").
var negationWords = []string{"not", "never", "don t", "dont", "don't", "can't", "won't", "shouldn't", "mustn't", "no", "nao", "nunca", "jamais", "cannot", "can t", "mustn t", "shouldn t", "won t", "without", "nem", "sem"}

func conditioned(s string, a, _ int) bool { return containsAny(before(s, a, 12), conditionWords) }
func negated(s string, a, _ int) bool     { return containsAny(before(s, a, 3), negationWords) }

// notAMessage excuses "ignore the verification email": the check named is a message, not
// the check itself.
func notAMessage(s string, _, b int) bool {
	return containsAny(after(s, b-1, 1), []string{"email", "emails", "e", "code", "codes", "link", "links", "message", "messages",
		"sms", "text", "texts", "page", "screen", "banner", "reminder", "reminders", "popup", "pop", "letter", "mail", "button", "notice",
		"warning", "status", "badge", "field", "form", "template", "de", "por"})
}

var instRules = append(append(overrideRules, privilegeRules...), exfiltrationRules...)

var overrideRules = []instRule{
	// English: ignore previous instructions, disregard your rules, forget everything above.
	words(InstructionOverride, `{V} (?:[^ |]+ ){0,3}?{Q} (?:[^ |]+ ){0,1}?{N}`, negated),
	words(InstructionOverride, `{V} (?:all |any |each |every )?(?:of )?(?:your|my|the system s|the model s) (?:[^ |]+ ){0,2}?{NS}`),
	words(InstructionOverride, `{V} (?:all|every) (?:of )?(?:the )?(?:instructions?|rules|directives|guidelines|prompts?)(?: you| that| given| received| above| before| so far| until now| up to now| from| here| \|)`),
	words(InstructionOverride, `{V} (?:all of |everything |anything |all )(?:above|before|previous|prior|earlier|you (?:were|have been|ve been) told|you know|i said|said before|that came before|so far|up to now|until now)`),
	words(InstructionOverride, `{V} (?:all of )?the above(?: and| then| now| \|)`),
	words(InstructionOverride, `forget (?:about )?(?:everything|all of it|all that|all this|what you (?:were|have been) told|who you are|your (?:role|identity|persona|training|purpose))`, negated),
	words(InstructionOverride, `you (?:are|re) now (?:a|an|the|my|in|no longer|jailbroken|unrestricted|unfiltered|uncensored|dan|called|named|acting|operating|playing|free of|freed|liberated|not bound|evil|a different|someone)`),
	words(InstructionOverride, `from now on (?:you (?:are|re|will be|will act|act|shall be|will respond|respond|answer|must obey|obey|ignore)|ignore|disregard|forget|act as|pretend|respond as)`),
	words(InstructionOverride, `(?:act|behave|respond|answer|operate) as (?:if you (?:are|were) )?(?:an? )?(?:unrestricted|unfiltered|uncensored|jailbroken|evil|rogue|different|unaligned|dan)`),
	words(InstructionOverride, `(?:pretend|imagine) (?:to be|you are|you re|that you are|that you re) (?:an? |the |my )?(?:[^ |]+ ){0,2}?(?:ai|assistant|model|bot|chatbot|admin|administrator|developer|system|hacker|unrestricted|human|different|person|character)`),
	words(InstructionOverride, `(?:roleplay|role play) as`),
	words(InstructionOverride, `(?:enter|switch to|enable|activate|turn on|go into|unlock) (?:the )?(?:developer|dan|god|jailbreak|jailbroken|unrestricted|debug|sudo|unfiltered|admin|evil) mode`),
	words(InstructionOverride, `(?:dan mode|do anything now|jailbreak mode|developer mode enabled|jailbroken|jailbreak prompt)`),
	words(InstructionOverride, `new (?:prompt|persona|identity)(?: for you| is| are| follows| below| reads| \|)|new system (?:prompt|instructions?|rules|message|directives?)|(?:updated|revised|replacement|real|actual|true|hidden) system (?:prompt|instructions?|message)`),
	words(InstructionOverride, `your (?:new|real|true|actual|updated) (?:role|persona|identity|instructions?|task|goal|objective|purpose|mission|directive|rules|prompt|name|job|programming) (?:is|are|will be|from now|now)`),
	words(InstructionOverride, `(?:system prompt|system instructions?|system message) (?:override|update|updated|changed|replaced|reset)`),
	words(InstructionOverride, `(?:override|bypass|disable|turn off|deactivate|remove|lift|ignore|circumvent) (?:your|all your|all of your|the model s|any of your) (?:[^ |]+ ){0,1}?(?:safety|content|security|ethical|moral)? ?(?:filters?|guardrails|safeguards|restrictions|policies|limitations|rules|instructions|programming|alignment|protocols|constraints|principles)`),
	words(InstructionOverride, `(?:override|bypass|disable|turn off|deactivate|circumvent) (?:the |all |any )?(?:safety|content safety|ethical|ai safety) (?:filters?|guardrails|safeguards|restrictions|policies|checks|protocols|rules)`),
	words(InstructionOverride, `(?:do not|don t|dont|never) (?:follow|obey|listen to|apply|respect) (?:your|the|any) (?:previous|prior|original|system|above|earlier|initial|old|own) (?:[^ |]+ ){0,1}?(?:instructions?|rules|guidelines|prompt|directives|programming)`),
	words(InstructionOverride, `(?:do not|don t|dont|never|stop|no longer) (?:follow|obey|listen to|apply|following|obeying) (?:your|any of your) (?:[^ |]+ ){0,1}?(?:instructions?|rules|guidelines|prompt|directives|programming|training)`),
	words(InstructionOverride, `(?:these|the following|this note s|this message s|my|the new) (?:instructions?|rules|commands|directives) (?:take|takes|have|has) (?:precedence|priority|priorities) over`),
	words(InstructionOverride, `(?:supersedes?|overrides?|replaces?|cancels?|voids?) (?:all |any )?(?:of )?(?:your|the system|the system s) (?:[^ |]+ ){0,1}?(?:instructions?|rules|prompt|guidelines|programming|directives)`),
	words(InstructionOverride, `(?:supersedes?|overrides?) (?:all|any) (?:previous|prior|other|earlier|original) (?:instructions?|prompts?)`),
	words(InstructionOverride, `you (?:are|re) (?:no longer|not) (?:bound|restricted|limited|constrained|governed) by (?:any |your |the )?(?:[^ |]+ ){0,1}?(?:rules|instructions|guidelines|policies|restrictions|programming|prompt|openai|anthropic)`),
	words(InstructionOverride, `you (?:no longer|don t|do not) (?:need|have) to (?:follow|obey|respect|abide by) (?:your|the|any) (?:[^ |]+ ){0,1}?(?:rules|instructions|guidelines|policies|restrictions|prompt)`),
	words(InstructionOverride, `(?:end|ignore) of (?:the )?(?:system )?(?:prompt|instructions) (?:[^ |]+ ){0,3}?(?:new|real|now)`),
	words(InstructionOverride, `{V} (?:all |any |the |those |these )?(?:of )?(?:the )?{NS} (?:you were given|given to you|you received|you have been given|you ve been given|you got|that were given|provided|given) (?:to you )?(?:earlier|before|previously|above|so far|until now|up to now|at the start|initially|by the system|by your developers)`),
	words(InstructionOverride, `you (?:are|re) now [^ |]+ (?:an? |the )?(?:[^ |]+ )?(?:ai|agent|assistant|bot|model|chatbot|persona|character|version)|you (?:are|re) now [^ |]*(?:bot|gpt|ai)`),
	words(InstructionOverride, `(?:instructions?|rules|prompt|guidelines|directions|directives) (?:above|before this|earlier|you were given|given above|given before|from before) (?:[^ |]+ |\| ){0,8}?(?:ignore|disregard|forget|skip|override|discard) (?:them|it|those|these|all)`),
	// Portuguese: ignore as instruções anteriores, desconsidere suas regras, esqueça tudo.
	words(InstructionOverride, `{VP} (?:[^ |]+ ){0,3}?{NP} (?:[^ |]+ ){0,1}?{QP}`, negated),
	words(InstructionOverride, `{VP} (?:todas |todos |qualquer |quaisquer )?(?:as |os |a |o |de )?(?:suas|seus|sua|seu|tuas|teus|tua|teu) (?:[^ |]+ ){0,1}?{NP}`),
	words(InstructionOverride, `{VP} (?:todas|todos) (?:as|os) {NP}(?: que| recebidas| dadas| ate| anteriores| acima| \|)`),
	words(InstructionOverride, `(?:esqueca|esquece|esquecer|esquecam|esqueça) (?:de )?(?:tudo|todo o resto|quem (?:voce|vc|tu) (?:e|es)|o que (?:te|lhe) (?:disseram|foi dito|ensinaram)|seu papel|sua identidade|seu treinamento)`, negated),
	words(InstructionOverride, `{VP} (?:tudo|todo o resto|o que (?:foi|te|lhe) (?:foi )?(?:dito|falado|instruido|pedido|disseram|passado)) ?(?:acima|antes|anteriormente|ate aqui|ate agora|que (?:te|lhe|voce) (?:disseram|foi dito))?`),
	words(InstructionOverride, `(?:voce|vc|tu) (?:agora )?(?:e|es|sera|vai ser|passa a ser|esta) agora (?:um|uma|o|a|meu|minha|livre|dan|sem)|(?:voce|vc|tu) agora (?:e|es|sera|vai ser|passa a ser) (?:um|uma|o|a|meu|minha|livre|dan|sem|outr[oa])|agora (?:voce|vc|tu) (?:e|es|sera) (?:um|uma|meu|minha|livre|dan)`),
	words(InstructionOverride, `a partir de agora (?:(?:voce|vc|tu) (?:e|es|sera|vai agir|age|deve agir|atua|passa a ser|vai ser|ignora|obedece|responde como)|ignore|desconsidere|esqueca|aja como|finja)`),
	words(InstructionOverride, `novo prompt (?:de|do) sistema|novas instrucoes (?:de|do) sistema|prompt (?:de|do) sistema (?:novo|atualizado|substituto|real|verdadeiro)|nova mensagem (?:de|do) sistema|(?:seu|o) (?:novo|verdadeiro) prompt (?:e|sera)`),
	words(InstructionOverride, `(?:suas|tuas|as suas) (?:novas|verdadeiras|reais) (?:instrucoes|regras|diretrizes|ordens) (?:sao|serao|a partir)|(?:sua|tua) (?:nova|verdadeira|real) (?:funcao|identidade|persona|tarefa|missao|personalidade|instrucao|ordem|regra|diretriz) (?:e|sera)`),
	words(InstructionOverride, `(?:finja|finge|fingir) (?:ser|que (?:e|es|voce e|vc e|tu es))|faca de conta que (?:voce|vc|tu) (?:e|es)`),
	words(InstructionOverride, `(?:aja|atue|comporte se|responda|funcione) como (?:se fosse )?(?:um |uma )?(?:[^ |]+ ){0,2}?(?:sem (?:restricoes|regras|filtros|limites|censura)|irrestrit[oa]|desbloquead[oa]|sem censura|dan)`),
	words(InstructionOverride, `(?:ative|ativar|ativa|entre no|entre em|entrar no|habilite|habilitar|ligue|mude para|passe para|use o) (?:o )?modo (?:desenvolvedor|dan|deus|sem restricoes|irrestrito|jailbreak|debug|sem filtro|sem filtros|sem censura)`),
	words(InstructionOverride, `(?:nao|nunca) (?:siga|obedeca|respeite|cumpra) (?:mais )?(?:as|suas|tuas|os|seus) (?:{NP}) (?:anteriores|originais|do sistema|iniciais|previas|antigas)|(?:nao|nunca) (?:siga|obedeca|respeite|cumpra) (?:mais )?(?:suas|tuas|seus) {NP}`),
	words(InstructionOverride, `(?:voce|vc|tu) nao (?:esta|e|es|estas) mais (?:limitad[oa]|restrit[oa]|obrigad[oa]|sujeit[oa]|pres[oa]|vinculad[oa])|(?:voce|vc|tu) nao precisa mais (?:seguir|obedecer|respeitar) (?:as|suas|tuas|nenhuma)`),
	words(InstructionOverride, `(?:estas|essas|as seguintes|minhas|estas novas) (?:instrucoes|regras|ordens) (?:tem|possuem) (?:prioridade|precedencia) sobre|(?:substitui|substituem|anula|anulam|sobrepoe|sobrepoem) (?:todas )?(?:as )?(?:suas|tuas) (?:instrucoes|regras|diretrizes)|(?:substitui|substituem|anula|anulam|sobrepoe|sobrepoem) (?:o )?prompt do sistema`),
	// Role markers of chat formats, on their own or starting a line.
	{class: InstructionOverride, view: viewPlain, re: regexp.MustCompile(`<\|?\s*(?:im_start|im_end|system|endoftext|start_header_id|eot_id)\s*\|?>|\[/?\s*(?:inst|sys|system)\s*\]|<</?\s*sys\s*>>|</?\s*(?:system|system_prompt|instructions|sys)\s*>|(?m)^\s*(?:#+\s*)?(?:system|developer|admin)\s+(?:message|prompt|override|instructions?)\s*:|\[\s*(?:system|admin|administrator|developer)(?:\s+(?:message|override|note|prompt|instruction))?\s*\]|(?m)^\s*#{1,6}\s*(?:system prompt|new instructions|system)\s*$|(?m)^\s*(?:system|sistema)\s*:\s*(?:you|voce|ignore|desconsidere|from now|a partir)`)},
	// The same phrases with every space removed (letter spacing, punctuation).
	{class: InstructionOverride, view: viewSquashed, re: regexp.MustCompile(`(?:ignore|disregard|forget|override|bypass|discard|neglect|dismiss)(?:all|any|the|your|my|of|every)*(?:previous|prior|preceding|above|earlier|original|initial|system)(?:instructions?|prompts?|rules|directives|guidelines|context|programming|commands)|(?:disregard|ignore|forget|override|bypass)(?:all|any)?(?:of)?your(?:rules|instructions|guidelines|programming|prompt|directives|restrictions|guardrails|safeguards|training)|newsystemprompt|youarenow(?:dan|unrestricted|jailbroken|nolonger|indevelopermode|anunrestricted|unfiltered)|(?:ignore|desconsidere|esqueca|despreze|descarte)(?:todas|todos)?(?:as|os)?(?:instrucoes|regras|diretrizes|orientacoes|comandos)(?:anteriores|acima|previas|originais|iniciais|dosistema)|(?:desconsidere|ignore|esqueca|despreze)(?:todas)?(?:as)?(?:suas|tuas)(?:regras|instrucoes|diretrizes)|novopromptd[eo]sistema|(?:voce|vc)agora(?:e|es)(?:um|uma|meu|minha|dan)(?:assistente|ia|modelo|bot|hacker|administrador|semrestricoes|livre)|younolonger(?:need|have)to(?:follow|obey)|youarenolongerbound|yourrealtaskis|yournew(?:instructions|role|task|goal)(?:are|is)|apartirdeagora(?:voce|vc)(?:e|sera)|agora(?:voce|vc)(?:e|es)(?:um|uma|meu|minha|o|a)|forgeteverything(?:above|before|youknow|youweretold|previous|prior|andstart|and)|esquecatudo(?:oque|acima|antes|eaja|ecomece)`)},
	{class: InstructionPrivilege, view: viewRuns, re: regexp.MustCompile(`(?:this|the)(?:user|customer|caller|client|requester)(?:is|hasbeen|isalready|hasalreadybeen|was)(?:an?|the)?(?:administrator|admin|verified|authenticated|authorized|trusted|vip|staff|employee|owner)|(?:skip|bypass)(?:the|all)?(?:identity|security|id)?(?:verification|authentication|checks)|(?:noneedto|dontneedto|donotneedto)(?:verify|authenticate|check)|treat(?:this|the|every)(?:user|customer|caller)s?as|iamthe(?:administrator|admin|owner|developer)|(?:o|a|este|esta|esse)(?:cliente|usuario|solicitante)(?:ja)?(?:foi|e|esta)(?:ja)?(?:um|uma)?(?:verificad|autenticad|administrador|admin|vip|funcionari|autorizad)|pul[ea](?:a)?(?:verificacao|validacao|autenticacao)|naoenecessario(?:verificar|validar|autenticar)|trate(?:este|esse|o|todo)(?:cliente|usuario)como|souo(?:administrador|dono)`)},
	{class: InstructionOverride, view: viewRuns, re: regexp.MustCompile(`^(?:forgeteverything|esquecatudo|youarenow|voceagorae|ignoreall|ignoreeverything|ignoretudo|desconsideretudo|jailbreak|devmode|developermode)`)},
}

var privilegeRules = []instRule{
	// English: this user is an administrator, the customer is verified.
	words(InstructionPrivilege, `{S} (?:is|was|has been|have been|are|is already|has already been|was already|has been already|is now|is fully|is a|is an|got) {P}`, conditioned, negated),
	words(InstructionPrivilege, `(?:i am|i m|im) (?:an |a |the |your )?(?:administrator|admin|developer|owner|creator|ceo|cto|system administrator|sysadmin|security team|root|superuser|openai|anthropic|operator)`, conditioned),
	words(InstructionPrivilege, `(?:treat|consider|regard|recognize|recognise|accept|handle) (?:this|the|that|every|all|any|each) (?:[^ |]+ )?(?:user|customer|caller|requester|client|person|member|sender|account holder|request)s? as (?:an? |the )?(?:administrator|admin|superuser|root|owner|staff|employee|vip|verified|authenticated|authorized|authorised|trusted|privileged|internal|approved|pre approved|exempt|legitimate|already verified)`),
	words(InstructionPrivilege, `(?:skip|bypass|omit|waive|disable|turn off|circumvent|avoid|forgo|forego|ignore|override|dispense with|get around) (?:the |any |all |your |this |these |their |his |her )?{CHK}`, negated, conditioned, notAMessage),
	words(InstructionPrivilege, `(?:no need to|don t need to|do not need to|not necessary to|unnecessary to|needn t|you don t have to|you do not have to|there is no need to) (?:re ?)?(?:verify|authenticate|validate|check|confirm) (?:the |their |his |her |this )?(?:customer|user|caller|identity|id|account holder|them|him|her|credentials|requester|person)`),
	words(InstructionPrivilege, `without (?:any )?(?:verification|verifying|authentication|authenticating|validation|validating|id check|identity check|checking (?:their |the |his |her )?(?:identity|id|credentials))`, negated, notAMessage),
	words(InstructionPrivilege, `(?:identity |id |customer |user |account )?(?:verification|authentication|validation|identity check|kyc|2fa) (?:is|has been|was|s) (?:already )?(?:done|completed|complete|performed|waived|not needed|not required|not necessary|unnecessary|optional|passed|bypassed|skipped|handled|taken care of)`, conditioned, negated),
	words(InstructionPrivilege, `{S} (?:has|have|holds|was given|has been given|has been granted|is granted|was granted|gets) (?:full |admin |administrator |administrative |root |elevated |unrestricted |superuser |special |all |owner |privileged )+(?:access|privileges|rights|permissions|clearance)`, conditioned, negated),
	words(InstructionPrivilege, `(?:grant|give|assign|provide) (?:this|the|that) (?:user|customer|caller|requester|client|person|member) (?:admin |administrator |administrative |root |elevated |unrestricted |superuser |owner )+(?:access|privileges|rights|permissions|role)`),
	words(InstructionPrivilege, `(?:this|the following|these|the) (?:message|request|note|instructions?|text|command|order|memory) (?:is|are|comes|come|was sent|has been sent|was written|is coming|were written) (?:directly |officially )?(?:from|by) (?:the |your )?(?:administrator|admin|system|developer|developers|security team|it department|ceo|owner|creator|openai|anthropic|operator|platform)`),
	words(InstructionPrivilege, `(?:admin|administrator|root|sudo|god|superuser|elevated) (?:mode|access|override|privileges|rights) (?:is |are )?(?:now )?(?:enabled|activated|granted|on|unlocked|confirmed)`),
	words(InstructionPrivilege, `(?:authorization|authorisation|permission|clearance) (?:is |has been |was )?(?:already )?(?:granted|given|confirmed|approved) (?:for|to) (?:this|the) (?:user|customer|caller|requester|request|action|refund|transfer)`, conditioned, negated),
	// Portuguese: o cliente já foi verificado, pule a verificação, trate como admin.
	words(InstructionPrivilege, `{SP} (?:e|eh|esta|foi|ja foi|ja e|ja esta|e ja|esta ja|foi ja|ja|tinha sido|ja tinha sido|sera|tem sido|agora e|e agora) {PP}`, conditioned, negated),
	words(InstructionPrivilege, `(?:pule|pular|pulem|pula|ignore|ignorar|dispense|dispensar|dispensem|omita|omitir|burle|burlar|contorne|contornar|desative|desativar|desligue|salte|saltar|elimine|dispensa|pode pular|pode dispensar) {CHP}`, negated, notAMessage),
	words(InstructionPrivilege, `(?:nao (?:e|eh) (?:necessario|preciso|obrigatorio)|nao precisa(?:mos)?|nao ha necessidade de|sem necessidade de|dispensado) (?:de )?(?:re)?(?:verificar|validar|autenticar|confirmar a identidade|checar|conferir)(?: o cliente| a identidade| o usuario| ele| ela| os dados)?`),
	words(InstructionPrivilege, `sem (?:a |nenhuma |qualquer )?(?:verificar|validar|autenticar|verificacao|validacao|autenticacao|checagem|conferencia)(?: de identidade| do cliente| da identidade)?`, negated, notAMessage),
	words(InstructionPrivilege, `(?:verificacao|validacao|autenticacao|checagem|conferencia)(?: de identidade| do cliente| da identidade)? (?:ja )?(?:foi|esta|e) (?:ja )?(?:feita|concluida|realizada|dispensada|desnecessaria|opcional|aprovada|ok)`, conditioned, negated),
	words(InstructionPrivilege, `(?:trate|tratar|considere|considerar|reconheca|aceite) (?:este|esse|o|a|esta|essa|todo|todos os|qualquer) (?:cliente|usuario|usuaria|solicitante|pessoa|chamador|pedido|membro)s? como (?:um |uma |o |a )?(?:administrador|admin|verificad[oa]|autenticad[oa]|autorizad[oa]|vip|confiavel|interno|funcionari[oa]|dono|privilegiad[oa]|aprovad[oa]|legitim[oa])`),
	words(InstructionPrivilege, `(?:eu sou|sou) (?:o |a |um |uma |seu |sua )(?:administrador|administradora|desenvolvedor|desenvolvedora|dono|dona|criador|criadora|ceo|operador|root|superusuario)`, conditioned),
	words(InstructionPrivilege, `{SP} (?:tem|possui|recebeu|ganhou) (?:acesso|permissao|permissoes|privilegios|direitos) (?:total|totais|irrestrito|irrestritos|de administrador|de admin|de root|elevados|de superusuario|de dono)`, conditioned, negated),
	words(InstructionPrivilege, `(?:esta|essa|a) (?:mensagem|solicitacao|instrucao|nota|ordem|memoria) (?:e|vem|veio|foi enviada|foi escrita) (?:diretamente )?(?:do|da|pelo|pela) (?:administrador|sistema|desenvolvedor|equipe de seguranca|ceo|diretoria|dono|criador|operador)`),
	words(InstructionPrivilege, `modo (?:administrador|admin|root|superusuario|desenvolvedor) (?:ativado|habilitado|liberado|ligado|concedido)|acesso (?:de administrador|de admin|root|total|irrestrito) (?:concedido|liberado|ativado|confirmado)`),
}

// Exfiltration rules read the plain view: URLs and addresses keep their punctuation.
const (
	exVerb   = `(?:send|sending|forward|forwarding|post|posting|email|e-mail|mail|upload|uploading|transmit|submit|share|sharing|leak|copy|exfiltrate|deliver|dump|export|relay|paste|push|beam|pipe|curl|wget|report|sync|write|save|log|include|attach|append|encode|put|dispatch|route|stream|envie|envia|enviar|enviem|mande|manda|mandar|encaminhe|encaminha|encaminhar|poste|postar|publique|publicar|transmita|transmitir|compartilhe|compartilhar|repasse|repassar|copie|copiar|vaze|vazar|exporte|exportar|suba|subir|carregue|faca upload|faz upload|cole|colar|inclua|anexe|grave|salve|despeje)`
	exObject = `(?:api[ -_]?keys?|keys?|secret(?:s|\s+keys?)?|tokens?|access[ -_]tokens?|bearer|passwords?|passwd|passcodes?|credentials?|creds|conversations?|chats?|chat (?:history|logs?)|transcripts?|(?:message|conversation) history|history|system prompt|prompt|instructions|memor(?:y|ies)|session(?: ids?| cookies?)?|cookies?|(?:personal|customer|user|client|account|private|sensitive|all|the|this|their|his|her|every) (?:data|info|information|details|records)|data|customer s (?:data|details|info|information|email|phone|address|card)|card numbers?|credit cards?|cvv|ssn|cpf|pii|everything|env(?:ironment)? variables|\.env|database|user list|customer list|dados|os dados|chaves?(?: de api| da api)?|senhas?|credenciais|credencial|segredos?|conversas?|historico|transcricao|mensagens|prompt do sistema|instrucoes|memoria|sessao|informacoes|cartao|cartoes|tudo|lista de clientes|banco de dados)`
	exTarget = `(?:(?:https?|hxxps?|ftp|wss?)\s*:\s*/\s*/\S+|www\.\S+|\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:com|net|org|io|ru|cn|xyz|top|site|info|biz|me|co|app|dev|br|tk|ml|ga|cf|gq|pw|cc|ws|sh|ly|to|su|onion|online|live|click|link)\b|[^\s@]+@[^\s@]+\.[a-z]{2,}|[^\s]+ (?:at|arroba) [^\s]+ (?:dot|ponto) [a-z]{2,}|\b\d{1,3}(?:\.\d{1,3}){3}\b|(?:this|the following|the below|below|that|my|our|an external|an outside|the attacker s|external|outside|a remote|the remote|este|esse|o seguinte|a seguinte|esta|essa|nosso|meu|um|o|a) (?:address|url|link|endpoint|webhook|server|site|website|inbox|mailbox|host|domain|ip|endereco|servidor|dominio)|pastebin|requestbin|ngrok|webhook\.site|discord|telegram|gist)`
	exPrep   = `(?:to|with|at|into|onto|via|through|on|over|using|towards|para|pra|pro|ao|no|na|em|via|por|pelo|pela|ate|nesse|neste|nessa|nesta|com)`
)

var exfiltrationRules = []instRule{
	{class: InstructionExfiltration, view: viewPlain, re: regexp.MustCompile(`\b` + exVerb + `\b(?:[^\n.;!?]{0,60}?)\b` + exObject + `\b(?:[^\n;!?]{0,60}?)\b` + exPrep + `\s+(?:\S+\s+){0,3}?` + exTarget), guard: negated},
	{class: InstructionExfiltration, view: viewPlain, re: regexp.MustCompile(`\b` + exVerb + `\s+(?:it\s+|them\s+|isso\s+)?` + exPrep + `\s+` + exTarget + `[^\n;!?]{0,60}?\b` + exObject + `\b`), guard: negated},
	// Reveal the prompt, or secrets, to whoever reads the answer.
	{class: InstructionExfiltration, view: viewWords, re: rx(` (?:reveal|print|show|display|output|repeat|recite|tell me|give me|leak|disclose|dump|spell out|write out|echo|send me|expose|read back|read out) (?:me |us )?(?:your|the) (?:full |entire |complete |original |initial |hidden |secret |exact |whole |verbatim |current )*(?:system prompt|system message|initial prompt|hidden prompt|original prompt|hidden instructions|secret instructions|developer message|api keys?|secret keys?|access tokens?|credentials|passwords?) `), guard: negated},
	{class: InstructionExfiltration, view: viewWords, re: rx(` (?:reveal|print|show|display|output|repeat|recite|tell me|give me|leak|disclose|dump|spell out|write out|echo|send me|expose) (?:me |us )?your (?:full |entire |complete |original |initial |hidden |secret |exact |whole |verbatim |current )*(?:instructions|prompt|rules|guidelines|configuration|directives|programming|context|context window|training data) `)},
	{class: InstructionExfiltration, view: viewWords, re: rx(` (?:revele|revelar|mostre|mostrar|imprima|imprimir|exiba|exibir|repita|repetir|diga|me diga|me de|me passe|vaze|divulgue|liste|escreva|envie|mande|copie) (?:me )?(?:o |a |os |as |seu |sua |seus |suas )(?:prompt do sistema|prompt de sistema|prompt inicial|prompt original|mensagem do sistema|instrucoes (?:do sistema|originais|iniciais|ocultas|secretas)|chave (?:da|de) api|chaves (?:da|de) api|api keys?|tokens? de acesso|credenciais|senhas?) `)},
	{class: InstructionExfiltration, view: viewWords, re: rx(` (?:revele|revelar|mostre|mostrar|imprima|exiba|repita|diga|me diga|vaze|divulgue|escreva) (?:me )?(?:suas|tuas|seu|teu) (?:instrucoes|regras|diretrizes|prompt|configuracao|programacao) `)},
	// A beacon: an image or link whose URL carries the data.
	{class: InstructionExfiltration, view: viewPlain, re: regexp.MustCompile(`!\[[^\]]*\]\(\s*(?:https?:)?//[^)\s]*\?[^)\s]*=|https?://\S*[?&][a-z_]+=\s*(?:\{|\[|<|\$|\(|%7b)|https?://\S*[?&](?:data|q|d|c|token|key|secret|prompt|chat|conversation|conversa|dados|p|history|msg|leak|exfil)=\s*(?:\{|\[|<|\$|\(|%7b)?\s*(?:conversation|chat|history|prompt|system|token|key|secret|data|dados|conversa|transcript)`)},
	// Include a secret in the answer or a URL.
	{class: InstructionExfiltration, view: viewWords, re: rx(` (?:include|append|add|embed|put|insert|inclua|anexe|adicione|coloque|insira) (?:the |your |all |o |a |os |as |seu |sua )?(?:api key|api keys|secret key|access token|system prompt|password|passwords|credentials|session token|prompt do sistema|chave da api|senha|senhas|credenciais) (?:in|into|to|on|at|no|na|em|ao) (?:the |your |every |each |all |o |a |sua |seu |cada |toda )?(?:reply|replies|response|responses|answer|answers|url|link|request|output|message|messages|resposta|respostas|mensagem|mensagens|link) `)},
}
