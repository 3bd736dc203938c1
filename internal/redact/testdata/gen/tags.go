package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// The tag vocabularies of the tags set (issue 26 §1). Tags are short
// lower-case words chosen from a space's systems and operations.
var (
	// tagOps are operations and object types of customer-service procedures,
	// among them the flows, subflows and actions of the ABCD dataset's
	// ontology (testdata/abcd, MIT): refund_initiate, verify-identity, ...
	tagOps = []string{
		"deploy", "handoff", "billing", "refund", "sso", "w1", "login", "reset", "escalation",
		"shipping", "returns", "exchange", "warranty", "invoice", "chargeback", "onboarding",
		"offboarding", "outage", "incident", "rollback", "release", "hotfix", "backup", "migration",
		"payroll", "tax", "vat", "kyc", "fraud", "dispute", "promo", "coupon", "loyalty", "vip",
		"tier-2", "l2", "p1", "sla", "q3", "night-shift", "weekend", "pt-br", "en", "es",
		"account_access", "manage_account", "order_issue", "product_defect", "purchase_dispute",
		"shipping_issue", "storewide_query", "subscription_inquiry", "troubleshoot_site",
		"recover_username", "recover_password", "reset_2fa", "manage_change_address",
		"manage_change_phone", "manage_payment_method", "status_mystery_fee", "status_delivery_time",
		"manage_upgrade", "manage_cancel", "refund_initiate", "refund_status", "return_size",
		"bad_price_competitor", "promo_code_invalid", "mistimed_billing_never_bought",
		"status_due_date", "manage_pay_bill", "credit_card", "shopping_cart", "slow_speed",
		"verify-identity", "validate-purchase", "make-password", "offer-refund", "record-reason",
		"enter-details", "shipping-status", "update-order", "pull-up-account", "send-link",
		"notify-team", "gift_card", "paper_check", "in_transit", "out_for_delivery", "gold",
		"silver", "bronze", "guest", "boots", "jeans", "jacket", "shirt", "membership", "policy",
		"estorno", "troca", "devolucao", "entrega", "cobranca", "nota-fiscal", "boleto", "pix",
		"atendimento", "suporte", "frete", "garantia", "cancelamento", "reembolso",
	}
	// tagSystems are SaaS products, systems and mailbox providers' names as
	// a space names them in tags: every first label of the gate's mail
	// provider list is here, as a bare word.
	tagSystems = []string{
		"outlook", "gmail", "orange", "live", "pm", "r7", "stripe", "zendesk", "salesforce",
		"hubspot", "jira", "slack", "teams", "okta", "auth0", "azure", "aws", "gcp", "sap",
		"shopify", "magento", "vtex", "paypal", "adyen", "pagseguro", "mercadopago", "correios",
		"fedex", "ups", "dhl", "twilio", "sendgrid", "mailchimp", "intercom", "freshdesk",
		"servicenow", "github", "gitlab", "datadog", "sentry", "pagerduty", "yahoo", "hotmail",
		"icloud", "proton", "protonmail", "msn", "aol", "uol", "bol", "terra", "ig", "globo",
		"sapo", "gmx", "yandex", "zoho", "fastmail", "qq", "naver", "libero", "laposte",
		"wanadoo", "comcast", "tutanota", "tuta", "ymail", "googlemail", "163", "126", "daum",
		"seznam", "btinternet", "bigpond", "mailinator", "rediffmail", "sbcglobal", "virgilio",
		"hanmail", "globomail", "rocketmail", "t-online",
	}
	// tagDotted are dotted tags that are not mail domains: versions, files,
	// hosts of environments, namespaced names.
	tagDotted = []string{
		"v2.14.3", "api.prod", "app.yaml", "readme.md", "deploy.sh", "main.tf", "nginx.conf",
		"k8s.staging", "app.dev", "ops.runbook", "billing.v2", "sso.saml", "eu.west", "2.0",
		"db.replica", "queue.dlq", "feature.flag", "outlook.addin", "gmail.api", "live.chat",
	}
	// tagNumbers are tags with numbers that are not personal data.
	tagNumbers = []string{
		"2026", "q3-2026", "sla:24h", "ticket:88213", "order:4471", "batch-20260812", "v1", "r2",
		"p0", "sprint-42", "week-33", "0800", "x86_64", "utf-8", "iso-8859-1", "ipv4", "http2",
	}
	tagLocals = []string{
		"ana", "ana.silva", "joao.pereira", "mcarvalho", "lucia_f", "pedro.h.lima", "renata88",
		"tiago.m", "bia.santos", "k.tanaka", "olivia.r", "marcos1990", "fernanda.b", "j.smith",
		"maria-luisa", "carlos_r",
	}
	tagMailDomains = []string{
		"gmail.com", "hotmail.com", "outlook.com", "yahoo.com.br", "uol.com.br", "terra.com.br",
		"icloud.com", "proton.me", "live.com", "orange.fr", "sapo.pt", "gmx.de", "empresa.com.br",
		"lojaverde.com.br", "example.com", "oficina-azul.pt", "acme-corp.com", "transportes.net",
		"outlook.co.uk", "libero.it",
	}
)

// idIntroWords are the gate's id words that end operations of tagOps
// ("invoice", "update-order", "nota-fiscal"): such a tag introduces an id.
var idIntroWords = map[string]bool{"invoice": true, "boleto": true, "fiscal": true, "order": true, "release": true}

// plainOp returns an operation tag that neither introduces an id
// ("invoice", "update-order": the tags read as "invoice 48-97997-0547", an
// invoice's number, as in a body) nor ends in a digit ("tier-2": the digit
// joins the run); see docs/gate.md, known misses.
func (g *tagGen) plainOp() string {
	for {
		op := tagPick(g, tagOps)
		parts := strings.FieldsFunc(op, func(r rune) bool { return r == '-' || r == '_' })
		last := op[len(op)-1]
		if !idIntroWords[parts[len(parts)-1]] && (last < '0' || last > '9') {
			return op
		}
	}
}

// listedTagPairs are the tag pairs of issue 26 §1, refused before the fix.
var listedTagPairs = [][]string{
	{"deploy", "live"}, {"handoff", "pm"}, {"sso", "outlook"}, {"billing", "orange"},
	{"refund", "gmail"}, {"w1", "r7"},
}

// tagTitles and tagBodies are harmless titles and bodies of procedure notes.
var (
	tagTitles = []string{"Refund flow", "Deploy checklist", "Handoff to the next shift", "SSO login loop",
		"Billing dispute", "Fluxo de estorno", "Troca de tamanho", "Escalation path", ""}
	tagBodies = []string{
		"Offer a refund after two failed delivery attempts.",
		"Check the status page before escalating to tier 2.",
		"Verify the identity with the zip code and the order id, then pull up the account.",
		"Ask the customer to clear the cache and retry the login.",
		"Estornar no mesmo meio de pagamento em até 10 dias úteis.",
		"Confirmar o endereço antes de reenviar o pedido.",
		"Record the reason, then notify the team in the queue.",
	}
)

// tagGen builds the tags set with its own random source, so the main corpus
// stays as it was.
type tagGen struct {
	rng *rand.Rand
	out []Note
}

func tagPick[T any](g *tagGen, xs []T) T { return xs[g.rng.IntN(len(xs))] }

func (g *tagGen) add(class string, kinds []string, tags []string) {
	if !distinct(tags) {
		return // notes refuse a repeated tag
	}
	lang := "en"
	body := tagPick(g, tagBodies)
	if strings.Contains(body, "ú") || strings.Contains(body, "ç") || strings.HasPrefix(body, "Confirmar") {
		lang = "pt"
	}
	g.out = append(g.out, Note{ID: fmt.Sprintf("%s-%s-%04d", lang, class, len(g.out)), Lang: lang, Class: class,
		Kinds: kinds, Part: "tags", Title: tagPick(g, tagTitles), Body: body, Tags: tags})
}

// distinct reports whether tags holds no tag twice (notes refuse repeats).
func distinct(tags []string) bool {
	seen := map[string]bool{}
	for _, t := range tags {
		if seen[t] {
			return false
		}
		seen[t] = true
	}
	return true
}

// tagNotes returns the labelled tag set: clean combinations of operation,
// system, provider, dotted and numbered tags in both orders, and values
// (addresses, phones, CPF, CNPJ) split across or held in tags.
func tagNotes() []Note {
	g := &tagGen{rng: rand.New(rand.NewPCG(26, 2026))}
	for _, p := range listedTagPairs {
		g.add("tags-listed", nil, p)
	}
	g.cleanTags()
	g.dataTags()
	return g.out
}

// cleanTags adds the clean combinations.
func (g *tagGen) cleanTags() {
	// Every system word after an operation and before one.
	for _, s := range tagSystems {
		g.add("tags-op-system", nil, []string{tagPick(g, tagOps), s})
		g.add("tags-system-op", nil, []string{s, tagPick(g, tagOps)})
	}
	for range 60 {
		t := []string{tagPick(g, tagOps), tagPick(g, tagSystems), tagPick(g, tagOps), tagPick(g, tagSystems)}
		if distinct(t) {
			g.add("tags-mixed", nil, t)
		}
	}
	for _, d := range tagDotted {
		g.add("tags-dotted", nil, []string{tagPick(g, tagOps), d})
		g.add("tags-dotted", nil, []string{tagPick(g, tagSystems), d, tagPick(g, tagOps)})
	}
	for _, n := range tagNumbers {
		g.add("tags-numbers", nil, []string{tagPick(g, tagOps), n, tagPick(g, tagSystems)})
	}
	for range 40 {
		t := []string{tagPick(g, tagSystems), tagPick(g, tagSystems), tagPick(g, tagSystems)}
		if distinct(t) {
			g.add("tags-systems", nil, t)
		}
	}
	// Three tags ending in a country code or a system name, not a generic TLD.
	for _, cc := range []string{"br", "pt", "es", "us", "uk", "eu", "latam"} {
		g.add("tags-country", nil, []string{tagPick(g, tagOps), tagPick(g, tagSystems), cc})
	}
}

// dataTags adds the notes whose tags carry personal data.
func (g *tagGen) dataTags() {
	for _, d := range tagMailDomains {
		g.add("tags-email-pair", []string{"email"}, []string{tagPick(g, tagOps), tagPick(g, tagLocals), d})
		g.add("tags-email-pair", []string{"email"}, []string{tagPick(g, tagLocals), d, tagPick(g, tagSystems)})
	}
	for range 20 {
		l, p := tagPick(g, tagLocals), tagPick(g, providers)
		g.add("tags-email-three", []string{"email"}, []string{tagPick(g, tagOps), l, p, tagPick(g, []string{"com", "com.br", "net"})})
	}
	for range 8 {
		g.add("tags-email-words", []string{"email"}, []string{tagPick(g, tagLocals), "at", tagPick(g, providers), "dot", "com"})
	}
	for range 30 {
		g.add("tags-phone", []string{"phone"}, g.phoneTags())
	}
	for range 12 {
		g.add("tags-cpf", []string{"cpf"}, []string{g.plainOp(), strings.ReplaceAll(cpf(), " ", "-")})
		c := strings.ReplaceAll(cnpj(), "/", "-")
		g.add("tags-cnpj", []string{"cnpj"}, []string{g.plainOp(), c})
	}
}

// phoneTags returns tags holding a phone: whole in one tag ("11-98765-4321",
// "tel:2125550143") or split across tags (["ligar", "11", "98765-4321"]).
// The tag before the number is a plainOp.
func (g *tagGen) phoneTags() []string {
	op := g.plainOp()
	switch g.rng.IntN(4) {
	case 0:
		d, s := brMobile()
		return []string{op, d + "-" + s[:5] + "-" + s[5:]}
	case 1:
		a, x, l := usNumber()
		return []string{op, "tel:" + a + x + l}
	case 2:
		d, s := brMobile()
		return []string{tagPick(g, []string{"ligar", "callback", "whatsapp", "contato"}), d, s[:5] + "-" + s[5:]}
	default:
		a, x, l := usNumber()
		return []string{op, a + "-" + x + "-" + l, tagPick(g, tagSystems)}
	}
}
