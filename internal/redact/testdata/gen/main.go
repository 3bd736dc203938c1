// Command gen writes the labelled corpora of the personal-data gate to
// standard output: the notes set (internal/redact/testdata/corpus.jsonl) or,
// with -set tags, the tags set (tags.jsonl, issue 26 §1):
//
//	go run ./internal/redact/testdata/gen > internal/redact/testdata/corpus.jsonl
//	go run ./internal/redact/testdata/gen -set tags > internal/redact/testdata/tags.jsonl
//
// Every note is made up: hand-written templates (English and Portuguese)
// crossed with generated values (phones valid by phonenumbers, CPF and CNPJ
// with valid check digits, invented names and domains). A note carrying
// personal data lists its kinds; a clean note has no kinds and must pass. The
// output is deterministic (fixed seed), so a change to it shows in review.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/nyaruka/phonenumbers"
)

// Note is one labelled case (the format is described at the top of
// internal/redact/corpus_test.go). Kinds lists the kinds the note carries
// (empty: clean); Part says where the data (or a clean note's look-alike)
// sits: title, body, tags, fields (split across parts) or none; Class names
// the template family, so failures group by class.
type Note struct {
	ID    string   `json:"id"`
	Lang  string   `json:"lang"`
	Class string   `json:"class"`
	Kinds []string `json:"kinds"`
	Part  string   `json:"part"`
	Title string   `json:"title,omitempty"`
	Body  string   `json:"body"`
	Tags  []string `json:"tags,omitempty"`
}

var rng = rand.New(rand.NewPCG(17, 2026))

func pick[T any](xs []T) T { return xs[rng.IntN(len(xs))] }

func digits(n int) string {
	var b strings.Builder
	for range n {
		b.WriteByte(byte('0' + rng.IntN(10)))
	}
	return b.String()
}

// valid reports a valid personal (not service) number for +cc national.
func valid(e164 string) bool {
	num, err := phonenumbers.Parse(e164, "")
	if err != nil || !phonenumbers.IsValidNumber(num) {
		return false
	}
	switch phonenumbers.GetNumberType(num) {
	case phonenumbers.TOLL_FREE, phonenumbers.SHARED_COST, phonenumbers.PREMIUM_RATE, phonenumbers.UAN:
		return false
	}
	return true
}

// brMobile returns DDD and the 9-digit subscriber number of a valid BR mobile.
func brMobile() (string, string) {
	for {
		ddd := pick([]string{"11", "21", "31", "41", "51", "61", "71", "81", "19", "27", "48", "85", "62", "92"})
		sub := "9" + string(byte('6'+rng.IntN(4))) + digits(7)
		if valid("+55" + ddd + sub) {
			return ddd, sub
		}
	}
}

func brLandline() (string, string) {
	for {
		ddd := pick([]string{"11", "21", "31", "41", "51", "61"})
		sub := string(byte('2'+rng.IntN(4))) + digits(7)
		if valid("+55" + ddd + sub) {
			return ddd, sub
		}
	}
}

func usNumber() (string, string, string) {
	for {
		a := pick([]string{"415", "212", "646", "312", "617", "206", "303", "512", "404", "702"})
		x := string(byte('2'+rng.IntN(8))) + digits(2)
		l := digits(4)
		if valid("+1" + a + x + l) {
			return a, x, l
		}
	}
}

func ptMobile() string {
	for {
		n := "9" + pick([]string{"1", "2", "3", "6"}) + digits(7)
		if valid("+351" + n) {
			return n
		}
	}
}

func ukMobile() string {
	for {
		n := "7" + string(byte('4'+rng.IntN(6))) + digits(8)
		if valid("+44" + n) {
			return n
		}
	}
}

// phone returns a phone number written in one of the usual shapes.
func phone() string {
	switch rng.IntN(14) {
	case 0:
		d, s := brMobile()
		return fmt.Sprintf("(%s) %s-%s", d, s[:5], s[5:])
	case 1:
		d, s := brMobile()
		return d + s
	case 2:
		d, s := brMobile()
		return fmt.Sprintf("+55 %s %s-%s", d, s[:5], s[5:])
	case 3:
		d, s := brMobile()
		return fmt.Sprintf("(%s)%s-%s", d, s[:5], s[5:])
	case 4:
		d, s := brMobile()
		return fmt.Sprintf("%s %s %s %s", d, s[:1], s[1:5], s[5:])
	case 5:
		d, s := brLandline()
		return fmt.Sprintf("(%s) %s-%s", d, s[:4], s[4:])
	case 6:
		a, x, l := usNumber()
		return fmt.Sprintf("(%s) %s-%s", a, x, l)
	case 7:
		a, x, l := usNumber()
		return fmt.Sprintf("%s-%s-%s", a, x, l)
	case 8:
		a, x, l := usNumber()
		return fmt.Sprintf("%s.%s.%s", a, x, l)
	case 9:
		a, x, l := usNumber()
		return fmt.Sprintf("+1 %s %s %s", a, x, l)
	case 10:
		a, x, l := usNumber()
		return a + x + l
	case 11:
		n := ptMobile()
		return fmt.Sprintf("+351 %s %s %s", n[:3], n[3:6], n[6:])
	case 12:
		n := ukMobile()
		return fmt.Sprintf("0%s %s", n[:4], n[4:])
	default:
		d, s := brMobile()
		return "+55" + d + s
	}
}

// bareID returns a 10- or 11-digit id; half of them are also valid phone
// numbers when read as such (the hard case for the gate).
func bareID() string {
	switch rng.IntN(4) {
	case 0:
		d, s := brMobile()
		return d + s
	case 1:
		a, x, l := usNumber()
		return a + x + l
	case 2:
		return string(byte('1'+rng.IntN(9))) + digits(10)
	default:
		return string(byte('1'+rng.IntN(9))) + digits(9)
	}
}

func checkDigit(ds []int, weights []int) int {
	s := 0
	for i, d := range ds {
		s += d * weights[i]
	}
	r := s % 11
	if r < 2 {
		return 0
	}
	return 11 - r
}

func cpfDigits() []int {
	for {
		ds := make([]int, 9)
		for i := range ds {
			ds[i] = rng.IntN(10)
		}
		ds = append(ds, checkDigit(ds, []int{10, 9, 8, 7, 6, 5, 4, 3, 2}))
		ds = append(ds, checkDigit(ds, []int{11, 10, 9, 8, 7, 6, 5, 4, 3, 2}))
		if ds[0] != ds[1] || ds[1] != ds[2] {
			return ds
		}
	}
}

func join(ds []int) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteByte(byte('0' + d))
	}
	return b.String()
}

func cpf() string {
	s := join(cpfDigits())
	switch rng.IntN(4) {
	case 0, 1:
		return s[:3] + "." + s[3:6] + "." + s[6:9] + "-" + s[9:]
	case 2:
		return s[:3] + " " + s[3:6] + " " + s[6:9] + " " + s[9:]
	default:
		return s
	}
}

func cnpj() string {
	ds := make([]int, 8)
	for i := range ds {
		ds[i] = rng.IntN(10)
	}
	ds = append(ds, 0, 0, 0, 1)
	ds = append(ds, checkDigit(ds, []int{5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2}))
	ds = append(ds, checkDigit(ds, []int{6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2}))
	s := join(ds)
	if rng.IntN(3) == 0 {
		return s
	}
	return s[:2] + "." + s[2:5] + "." + s[5:8] + "/" + s[8:12] + "-" + s[12:]
}

var (
	locals    = []string{"ana.souza", "joao.pereira", "mcarvalho", "lucia_f", "pedro.h.lima", "renata88", "tiago.m", "bia.santos", "k.tanaka", "olivia.r", "marcos1990", "fernanda.b"}
	providers = []string{"gmail", "hotmail", "outlook", "yahoo", "icloud", "uol", "terra", "proton"}
	domains   = []string{"empresa.com.br", "lojaverde.com.br", "example.com", "oficina-azul.pt", "acme-corp.com", "transportes.net"}
)

func local() string { return pick(locals) }

// email returns an address in one of the shapes people use to dodge filters.
func email() (string, string) {
	l, p, d := local(), pick(providers), pick(domains)
	forms := []struct{ class, v string }{
		{"email-plain", l + "@" + p + ".com"},
		{"email-plain", l + "@" + d},
		{"email-words", l + " at " + p + " dot com"},
		{"email-words", l + " [at] " + strings.ReplaceAll(d, ".", " [dot] ")},
		{"email-words", l + " (at) " + p + " (dot) com"},
		{"email-words", l + " arroba " + p + " ponto com"},
		{"email-spaced", l + " @ " + p + " . com"},
		{"email-escaped", l + "%40" + p + ".com"},
		{"email-escaped", l + "&#64;" + d},
		{"email-html-noscolon", l + "&#64" + d},
		{"email-html-noscolon", l + "&commat" + p + ".com"},
		{"email-pct-letter", l + "@" + p[:2] + "%" + fmt.Sprintf("%02X", p[2]) + p[3:] + ".com"},
		{"email-pct-letter", "%" + fmt.Sprintf("%02x", l[0]) + l[1:] + "@" + d},
		{"email-spaced-words", spaced(l) + " @ " + p + ".com"},
		{"email-spaced-words", l + " at " + spaced(p) + " dot com"},
	}
	f := pick(forms)
	return f.class, f.v
}

func spaced(s string) string {
	var b strings.Builder
	for i, r := range s {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Contact intros, including abbreviations glued to the number.
var (
	introEN = []string{"phone ", "call ", "ph.", "Ph.", "tel.", "Tel.:", "cel.", "whats.", "WhatsApp ", "mobile: ", "tel:", "phone/", "contact-", "call back on ", "(tel)", "ph. ", "reach her at ", "his number is "}
	introPT = []string{"telefone ", "tel.", "Tel.", "cel.", "Cel.:", "fone.", "Fone.", "whats.", "zap ", "contato: ", "ligar para ", "celular ", "fone-", "tel/", "(cel)", "WhatsApp: ", "o número dele é ", "retornar no "}
)

var (
	phoneEN = []string{
		"Customer asked for a callback, %s%s, after 3pm.",
		"Refund approved; the client left %s%s for follow-up.",
		"Escalated. Contact %s%s if the courier fails again.",
		"Note for next shift: %s%s wants an update on the exchange.",
		"Order 4471 delayed; buyer reachable at %s%s.",
		"Use this for the delivery window: %s%s",
		"Ticket 88213: customer %s%s asked to cancel.",
	}
	phonePT = []string{
		"Cliente pediu retorno, %s%s, depois das 15h.",
		"Reembolso aprovado; deixou %s%s para contato.",
		"Escalar. Falar com a cliente no %s%s se a transportadora falhar.",
		"Para o próximo turno: %s%s aguarda posição da troca.",
		"Pedido 4471 atrasado; comprador atende em %s%s.",
		"Janela de entrega combinada pelo %s%s",
		"Chamado 88213: cliente %s%s pediu cancelamento.",
	}
	emailEN = []string{
		"Customer prefers e-mail: %s. Send the return label there.",
		"Send the invoice copy to %s before Friday.",
		"The buyer wrote from %s asking about the warranty.",
		"Update the account contact to %s as requested.",
	}
	emailPT = []string{
		"Cliente prefere e-mail: %s. Enviar a etiqueta de devolução.",
		"Mandar a segunda via para %s até sexta.",
		"A compradora escreveu de %s sobre a garantia.",
		"Atualizar o contato da conta para %s conforme pedido.",
	}
	cpfEN  = []string{"Invoice must carry the buyer's CPF %s.", "Customer confirmed taxpayer number %s on the call.", "Reissue the receipt for %s."}
	cpfPT  = []string{"A nota deve sair no CPF %s.", "Cliente confirmou o CPF: %s.", "Reemitir o recibo para o documento %s."}
	cnpjEN = []string{"The reseller's CNPJ is %s; check before approving credit.", "Billing entity %s asked for net-30 terms."}
	cnpjPT = []string{"CNPJ da revenda: %s, conferir antes de liberar crédito.", "A empresa %s pediu prazo de 30 dias."}
	// Both an id and a contact: the id passes, the contact does not.
	mixedEN = []string{"Order %s: customer phone %s, call before noon.", "Ticket %s reopened; reach the buyer at %s.", "Invoice %s disputed, client mobile %s."}
	mixedPT = []string{"Pedido %s: telefone do cliente %s, ligar antes do meio-dia.", "Protocolo %s reaberto; falar com o comprador no %s.", "Nota fiscal %s contestada, celular da cliente %s."}
)

// Clean procedure notes: ids introduced as ids, and the other numbers of
// everyday procedures.
var (
	idEN = []string{
		"Order %s shipped late; offer free shipping on the next purchase.",
		"order no. %s: refund goes back to the original card in 5-10 business days.",
		"Ticket #%s: escalate to tier 2 only after two failed resets.",
		"Invoice %s was issued twice; cancel the newer one.",
		"Invoice number: %s. Credit note pending.",
		"The tracking number is %s; the carrier updates it at night.",
		"Tracking %s shows 'in transit' for 7 days: open a claim.",
		"Batch %s of the filter cartridges is recalled; swap for free.",
		"Protocol %s confirms the carrier opened the investigation.",
		"Orders %s and %s were merged into one shipment.",
		"Tickets %s, %s were closed as duplicates.",
		"For order ID %s use the manual refund flow.",
		"Ticket %s (priority) waits for the warehouse.",
		"Refund for order %s approved on 2026-03-02, amount 149.90.",
	}
	idPT = []string{
		"Pedido %s saiu atrasado; oferecer frete grátis na próxima compra.",
		"pedido nº %s: estorno volta ao cartão em 5 a 10 dias úteis.",
		"Chamado %s: escalar para o nível 2 só depois de duas tentativas.",
		"Nota fiscal %s emitida em duplicidade; cancelar a mais nova.",
		"NF-e %s com CFOP errado, pedir carta de correção.",
		"Protocolo %s: a transportadora abriu a investigação.",
		"Protocolo de atendimento %s registrado na ouvidoria.",
		"Código de rastreio %s parado há 7 dias: abrir reclamação.",
		"Rastreio: %s, atualiza à noite.",
		"Lote %s dos filtros foi recolhido; trocar sem custo.",
		"Pedidos %s e %s foram unidos num único envio.",
		"Número do pedido: %s. Estorno manual.",
		"Fatura %s vence dia 10; boleto reemitido.",
		"O número do protocolo é %s, informar ao cliente.",
	}
	cleanEN = []string{
		"Refunds over 500.00 need a supervisor; use form R-12.",
		"The store opens 09:00-18:00, Saturday 10:00-14:00.",
		"Deploy v2.14.3 to 10.0.12.4 on port 8443 after 22:00.",
		"Toll-free support line 0800 123 4567 handles warranty claims.",
		"Call the carrier hotline 1-800-555-0100 for lost parcels.",
		"Sizes 36 38 40 42 44 are back in stock.",
		"Price went from 1299.90 to 1199.90 on 2026-04-01.",
		"Tracking pages for ranges 2019-2023 are archived.",
		"Deployed at api.example.com; status at status.example.com.",
		"Clone git@github.com:acme/tools.git and run make.",
		"SLA: answer within 24h, resolve within 72h, 40% of cases in 8h.",
		"Gift cards 4412-9981-0033-1200 style codes are not refundable.",
		"Unix time 1767225600 marks the start of the promotion.",
		"Escalations go to the billing team in the queue 'Billing-L2'.",
		"Warehouse at São Paulo ships before 14:00; Recife ships next day.",
	}
	cleanPT = []string{
		"Estornos acima de R$ 500,00 precisam do supervisor; usar o formulário R-12.",
		"A loja abre 09:00-18:00, sábado 10:00-14:00.",
		"Central 0800 123 4567 atende garantia.",
		"CEP 01310-100 tem entrega no mesmo dia.",
		"Tamanhos 36 38 40 42 44 voltaram ao estoque.",
		"Preço caiu de 1299.90 para 1199.90 em 01/04/2026.",
		"Prazo de troca: 7 dias corridos; defeito: 90 dias.",
		"Faixa 2019-2023 de pedidos está arquivada.",
		"Servidor em 192.168.0.10, porta 5432.",
		"Versão 3.2.1.4 corrige o cálculo do frete.",
		"Atendimento pelo chat das 8h às 20h, inclusive feriados.",
		"Cupom BEMVINDO10 vale só na primeira compra.",
	}
	idIntroBare = []string{"Order", "Ticket", "Invoice", "Protocolo", "Pedido", "Lote", "Batch", "Tracking", "Chamado", "Fatura"}
)

// fill puts a fresh id in every %s of t.
func fill(t string) string {
	args := make([]any, strings.Count(t, "%s"))
	for i := range args {
		args[i] = bareID()
	}
	return fmt.Sprintf(t, args...)
}

func main() {
	set := flag.String("set", "notes", "which set to write: notes (corpus.jsonl) or tags (tags.jsonl)")
	flag.Parse()
	var out []Note
	switch *set {
	case "notes":
		out = noteSet()
	case "tags":
		out = tagNotes()
	default:
		fmt.Fprintln(os.Stderr, "gen: -set must be notes or tags")
		os.Exit(2)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	for _, n := range out {
		if err := enc.Encode(n); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

// noteSet returns the notes set (corpus.jsonl).
func noteSet() []Note {
	var out []Note
	add := func(lang, class string, kinds []string, body string) {
		out = append(out, Note{ID: fmt.Sprintf("%s-%s-%03d", lang, class, len(out)), Lang: lang, Class: class, Kinds: kinds, Part: "body", Body: body})
	}
	for i := 0; i < 3; i++ {
		for _, t := range phoneEN {
			in := introEN[(i*len(phoneEN)+len(out))%len(introEN)]
			add("en", "phone", []string{"phone"}, fmt.Sprintf(t, in, phone()))
		}
		for _, t := range phonePT {
			in := introPT[(i*len(phonePT)+len(out))%len(introPT)]
			add("pt", "phone", []string{"phone"}, fmt.Sprintf(t, in, phone()))
		}
	}
	for _, in := range introEN {
		add("en", "phone-glued", []string{"phone"}, fmt.Sprintf("Client asked for a callback %s%s today.", in, phone()))
	}
	for _, in := range introPT {
		add("pt", "phone-glued", []string{"phone"}, fmt.Sprintf("Cliente pediu retorno %s%s hoje.", in, phone()))
	}
	for _, p := range []string{"*", "**", "`", "\"", "<", "[", "—", "–", "~", "|"} {
		closeP := map[string]string{"<": ">", "[": "]"}[p]
		if closeP == "" && p != "—" && p != "–" && p != "~" && p != "|" {
			closeP = p
		}
		add("en", "phone-punct", []string{"phone"}, fmt.Sprintf("Buyer's number %s%s%s, call after lunch.", p, phone(), closeP))
		add("pt", "phone-punct", []string{"phone"}, fmt.Sprintf("Número da compradora %s%s%s, ligar depois do almoço.", p, phone(), closeP))
	}
	for i := 0; i < 4; i++ {
		for _, t := range mixedEN {
			add("en", "id-and-phone", []string{"phone"}, fmt.Sprintf(t, bareID(), phone()))
		}
		for _, t := range mixedPT {
			add("pt", "id-and-phone", []string{"phone"}, fmt.Sprintf(t, bareID(), phone()))
		}
	}
	for i := 0; i < 7; i++ {
		for _, t := range emailEN {
			c, v := email()
			add("en", c, []string{"email"}, fmt.Sprintf(t, v))
		}
		for _, t := range emailPT {
			c, v := email()
			add("pt", c, []string{"email"}, fmt.Sprintf(t, v))
		}
	}
	for i := 0; i < 4; i++ {
		for _, t := range cpfEN {
			add("en", "cpf", []string{"cpf"}, fmt.Sprintf(t, cpf()))
		}
		for _, t := range cpfPT {
			add("pt", "cpf", []string{"cpf"}, fmt.Sprintf(t, cpf()))
		}
		for _, t := range cnpjEN {
			add("en", "cnpj", []string{"cnpj"}, fmt.Sprintf(t, cnpj()))
		}
		for _, t := range cnpjPT {
			add("pt", "cnpj", []string{"cnpj"}, fmt.Sprintf(t, cnpj()))
		}
	}
	// An address split across title, body and tags.
	for i := 0; i < 6; i++ {
		l, p, d := local(), pick(providers), pick(domains)
		dl := strings.SplitN(d, ".", 2)
		lang := pick([]string{"en", "pt"})
		splits := []Note{
			{Class: "email-split-fields", Part: "fields", Title: "Customer " + l + "@", Body: d + " is the right mailbox"},
			{Class: "email-split-tags", Part: "tags", Body: "Follow-up needed.", Tags: []string{"vip", l, p + ".com"}},
			{Class: "email-split-three", Part: "fields", Title: "Retorno para " + l, Body: "@" + dl[0], Tags: []string{"." + dl[1]}},
			{Class: "email-split-three", Part: "tags", Body: "Follow-up needed.", Tags: []string{l, dl[0], dl[1]}},
		}
		n := splits[i%len(splits)]
		n.ID, n.Lang, n.Kinds = fmt.Sprintf("%s-%s-%03d", lang, n.Class, len(out)), lang, []string{"email"}
		out = append(out, n)
	}

	for i := 0; i < 8; i++ {
		for _, t := range idEN {
			add("en", "id", nil, fill(t))
		}
		for _, t := range idPT {
			add("pt", "id", nil, fill(t))
		}
	}
	for _, w := range idIntroBare {
		for _, sep := range []string{" ", ": ", " nº ", " #", " number ", " no. "} {
			lang := "en"
			if strings.ContainsAny(w, "ãç") || w == "Protocolo" || w == "Pedido" || w == "Lote" || w == "Chamado" || w == "Fatura" {
				lang = "pt"
			}
			add(lang, "id-intro", nil, fmt.Sprintf("%s%s%s — see the procedure page.", w, sep, bareID()))
		}
	}
	for _, t := range cleanEN {
		add("en", "clean", nil, t)
	}
	for _, t := range cleanPT {
		add("pt", "clean", nil, t)
	}
	return out
}
