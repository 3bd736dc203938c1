// Command namegen writes the labelled names corpus of the personal-data gate's name layer
// (internal/redact/testdata/names.jsonl, GATE-2) to standard output:
//
//	go run ./internal/redact/testdata/namegen > internal/redact/testdata/names.jsonl
//
// Every note is made up: hand-written templates (English, Portuguese, Spanish) crossed with
// names from this file's own lists, which are not the gazetteer's (about a third of the
// given names and half of the surnames are not in internal/redact/names, so the figures say
// how the cues and the surname rules do on names the layer does not know). Notes naming a
// person say where (title, body, tags); clean notes are full of places, companies, products,
// fonts, weekdays, months and capitalised procedure words. The output is deterministic (fixed
// seed), so a change shows in review.
package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Note is one labelled case (the format of names.jsonl).
type Note struct {
	Title string   `json:"title"`
	Body  string   `json:"body"`
	Tags  []string `json:"tags"`
	Kinds []string `json:"kinds"`
	Part  string   `json:"part"`
	Lang  string   `json:"lang"`
}

var rng = rand.New(rand.NewPCG(26, 2026))

func pick[T any](xs []T) T { return xs[rng.IntN(len(xs))] }

var (
	givenPT = []string{"Ana", "João", "Beatriz", "Rafael", "Luana", "Caio", "Thiago", "Fernanda", "Gustavo",
		"Patrícia", "Rodrigo", "Juliana", "Mateus", "Larissa", "Otávio", "Yara", "Kauã", "Iara", "Enzo",
		"Valentina", "Heitor", "Cecília", "Benício", "Jurandir", "Odete", "Gisele", "Wellington", "Raimunda"}
	givenEN = []string{"Emily", "Oliver", "Hannah", "Ethan", "Chloe", "Derek", "Priscilla", "Tobias", "Marjorie",
		"Kimberly", "Brandon", "Heather", "Wyatt", "Imogen", "Declan", "Saoirse", "Thaddeus", "Ingrid"}
	givenES = []string{"Marisol", "Joaquín", "Ximena", "Esteban", "Guadalupe", "Ramiro", "Itziar", "Alejandro",
		"Lucía", "Mateo", "Valeria", "Iker", "Renata", "Xóchitl", "Maite", "Santiago"}
	surnames = []string{"Quintanilha", "Silva", "Albuquerque", "Vasconcelos", "Whitfield", "Okafor", "Nakamura",
		"Petrov", "Kowalczyk", "Brandão", "Guimarães", "Iturbide", "Echeverría", "Zubiaurre", "Mendonça",
		"Carvalho", "Ramírez", "Halvorsen", "Abernathy", "Pereira", "Santos", "Oliveira", "Lacerda",
		"Fagundes", "Bittencourt", "Montenegro", "Gallagher", "O'Connor", "Schmidt", "Ferreira", "Moreira",
		"Nascimento", "Castro", "Valadares", "Sobral", "Toscano", "Ugarte", "Arrieta"}
)

type person struct{ given, surname, lang string }

func (p person) full() string { return p.given + " " + p.surname }

func newPerson(lang string) person {
	switch lang {
	case "en":
		return person{pick(givenEN), pick(surnames), lang}
	case "es":
		return person{pick(givenES), pick(surnames), lang}
	}
	return person{pick(givenPT), pick(surnames), lang}
}

// Templates naming a person: {N} full name, {G} given name, {S} surname.
var positive = map[string][]string{
	"en": {
		"{N} prefers a call back after 6pm.",
		"Refund approved for {N} after the second complaint.",
		"Spoke with {N}; she wants the invoice reissued.",
		"Customer {N} reported the login loop again.",
		"Ask for {G} at the front desk when delivering.",
		"Hi {G}, your replacement ships tomorrow.",
		"Mr. {S} asked for a paper invoice.",
		"Ms. {S} wants all updates by e-mail.",
		"Her name is {N} and she resells our kits.",
		"Escalate to Tier 2 if {N} calls again.",
		"The account of {N} stays on manual review.",
		"Deliveries for {N} go to the back door.",
		"Thanks, {G}. Closing the ticket now.",
		"Dear {G}, we are sorry for the delay.",
		"Tell {G} the courier comes before noon.",
		"Agreed a payment plan with {N} for three months.",
		"Never call {N} before 10am; she works nights.",
	},
	"pt": {
		"{N} prefere retorno por telefone depois das 18h.",
		"Falar com a {G} antes de estornar.",
		"O cliente {N} recebeu o pedido duplicado.",
		"Olá {G}, o boleto foi reemitido.",
		"Sr. {S} pediu nota fiscal em papel.",
		"A Sra. {S} prefere contato por e-mail.",
		"Dona {G} sempre pede o mesmo entregador.",
		"O nome dela é {N}.",
		"Estorno aprovado para {N}.",
		"Ligar para o Sr. {S} amanhã cedo.",
		"Cadastro de {N} está com o CEP errado.",
		"Avise a {G} que a troca foi aprovada.",
		"Prezada {G}, seu chamado foi encerrado.",
		"Atendimento com {N} deve ser feito pelo supervisor.",
		"Verificar a conta do {N} antes de liberar.",
		"A cliente {G} reclamou do prazo.",
	},
	"es": {
		"La clienta {N} pidió la devolución del pedido.",
		"Hola {G}, tu pedido ya salió del almacén.",
		"Hablar con {N} antes de enviar.",
		"{N} cambió la dirección de entrega.",
		"El Sr. {S} prefiere factura en papel.",
		"Su nombre es {N} y compra al por mayor.",
		"Reembolso aprobado para {N}.",
	},
}

var titleTemplates = map[string][]string{
	"en": {"Callback for {N}", "{N}: payment plan", "Notes on {N}"},
	"pt": {"Reembolso de {N}", "{N} - retorno", "Cliente {N}"},
	"es": {"Devolución de {N}", "Nota sobre {N}"},
}

var cleanBodies = map[string][]string{
	"en": {"Approved after the second review.", "See the ticket history before answering.", "Follow the refund procedure."},
	"pt": {"Aprovado depois da segunda revisão.", "Veja o histórico do chamado antes de responder."},
	"es": {"Aprobado después de la segunda revisión."},
}

var (
	places = []string{"São Paulo", "Santa Catarina", "Rio Branco", "Belo Horizonte", "Curitiba", "Porto Alegre",
		"Campinas", "Lisboa", "Victoria", "Georgia", "Florida", "Austin", "Madison", "Charlotte", "Santiago",
		"Lima", "Santos", "Natal", "Vitória", "Florianópolis", "Ciudad de México", "Buenos Aires", "Valencia",
		"Sevilla", "Monterrey", "Guadalajara", "Cancún", "London", "Paris", "Sydney", "Toronto", "Dallas",
		"Houston", "Phoenix", "Jordan", "Chelsea", "Recife", "Salvador", "Manaus", "Goiânia", "Rio de Janeiro",
		"Joinville", "Petrópolis", "New York", "San Francisco", "Montevideo", "Porto"}
	companies = []string{"Acme Ltda", "Globex S.A.", "Initech Inc", "Umbrella GmbH", "Stark Industries",
		"Wayne Logistics", "Hooli LLC", "Vandelay Ltd", "Soylent Corp", "Tyrell Group", "Silva & Filhos Ltda",
		"Oliveira Transportes", "Mendes Consultoria", "Acme Logistics", "Banco do Brasil", "Hospital Santa Maria",
		"Ramos Advogados", "Costa Seguros", "Mercado Livre", "Casas Bahia", "Magazine Luiza"}
	products = []string{"Jenkins", "Alexa", "Zendesk", "Salesforce", "Stripe", "Kafka", "Grafana", "Sentry", "Jira",
		"Slack", "HubSpot", "Shopify", "Mercado Pago", "Outlook", "Teams", "Windows", "Claude", "Siri", "Ruby",
		"Julia", "PagerDuty", "Datadog", "Heroku", "Twilio", "PayPal", "Nubank"}
	fonts    = []string{"Times New Roman", "Open Sans", "Georgia", "Arial", "Helvetica", "Courier New", "Roboto", "Calibri"}
	brands   = []string{"Mercedes", "Tesla", "Dell", "Harley Davidson", "Morgan Stanley", "Wells Fargo", "Ford", "Porsche"}
	daysEN   = []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}
	monthsEN = []string{"January", "April", "May", "June", "July", "August", "December"}
	daysPT   = []string{"segunda", "terça", "quarta", "quinta", "sexta", "sábado", "domingo"}
	monthsPT = []string{"Janeiro", "Abril", "Maio", "Junho", "Agosto", "Dezembro"}
	daysES   = []string{"lunes", "martes", "viernes", "Domingo", "Sábado"}
)

// Clean templates: {P} {P2} places, {C} company, {R} product, {F} {F2} fonts, {B} brand,
// {D} weekday, {M} month, {T} tier number.
var clean = map[string][]string{
	"en": {
		"{C} ships every order from {P} to {P2} on weekdays.",
		"Invoices use {F}; the portal uses {F2}.",
		"Escalate to Tier {T} after two failed retries.",
		"Check the {R} dashboard before refunding. Then confirm the address.",
		"If the {R} job fails on {D}, rerun it before touching the queue.",
		"Orders to {P} are billed through {C}.",
		"Grace period is 30 days; in {M} the billing run moves to the 5th.",
		"Customer Success owns renewals; Support owns tickets from {P}.",
		"Ask for approval from Finance before refunds over 500.",
		"Hello World is the default test message for {R}.",
		"{B} fleet accounts are billed monthly through {C}.",
		"Grant access to {R} only after the contract with {C} is signed.",
		"Chase overdue payments from {P} on the 5th; never on {D}.",
		"Will the {R} sync run on {D}? Check the schedule in {M}.",
		"Mark the ticket as solved in {R} and tag it for {P}.",
		"Use {F} in every letter to {C}.",
		"New stock for {P} arrives every {D} from {C}.",
	},
	"pt": {
		"Entregas para {P} levam dois dias úteis; para {P2}, três.",
		"Verifique o Pix no extrato antes de liberar o pedido da {C}.",
		"Abra um chamado no {R} e marque a fila Financeiro.",
		"Pedidos da {C} seguem o prazo do marketplace.",
		"Na {D}, o lote roda depois das 18h; em {M} roda duas vezes.",
		"Cliente Premium tem prioridade na fila de {P}.",
		"Confirme o endereço. Depois gere a etiqueta no {R}.",
		"Notas fiscais da {C} saem em {F}.",
		"Falar com o Financeiro antes de estornar pedidos de {P}.",
		"Olá! Use este modelo para clientes de {P}.",
		"Veículos {B} da frota são faturados pela {C}.",
		"Suporte Nível {T} atende {P} e {P2}.",
		"Nova versão do {R} sai na {D}; avise a equipe de Vendas.",
	},
	"es": {
		"Las devoluciones desde {P} se procesan en {P2}.",
		"Revisa el estado en el Panel de {R} antes de responder.",
		"{C} paga con transferencia el {D}.",
		"Hola, usa esta plantilla para clientes de {P}.",
		"Hablar con Finanzas antes de reembolsar pedidos de {P}.",
	},
}

var cleanTitles = map[string][]string{
	"en": {"Refund Policy For {P} Orders", "Shipping From {P}", "{R} Runbook", "Invoices For {C}", "Font Rules: {F}"},
	"pt": {"Entrega em {P}", "Procedimento {R}", "Pedidos da {C}", "Fila de {P}"},
	"es": {"Envíos a {P}", "Procedimiento de {R}"},
}

func fillPerson(t string, p person) string {
	return strings.NewReplacer("{N}", p.full(), "{G}", p.given, "{S}", p.surname).Replace(t)
}

func fillClean(t, lang string) string {
	days, months := daysEN, monthsEN
	switch lang {
	case "pt":
		days, months = daysPT, monthsPT
	case "es":
		days, months = daysES, monthsPT
	}
	p := pick(places)
	p2 := pick(places)
	f := pick(fonts)
	return strings.NewReplacer("{P}", p, "{P2}", p2, "{C}", pick(companies), "{R}", pick(products),
		"{F}", f, "{F2}", pick(fonts), "{B}", pick(brands), "{D}", pick(days), "{M}", pick(months),
		"{T}", fmt.Sprint(1+rng.IntN(3))).Replace(t)
}

// tagOf is a name word as a tag: folded to a-z.
func tagOf(s string) string {
	var b strings.Builder
	for _, r := range norm.NFD.String(strings.ToLower(s)) {
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

var genericTags = []string{"refund", "billing", "delivery", "tier2", "callback", "vip", "escalation", "pix"}

func main() {
	var out []Note
	langs := []string{"en", "pt", "pt", "es"}
	for _, lang := range []string{"en", "pt", "es"} {
		for _, t := range positive[lang] {
			for range 4 {
				out = append(out, Note{Title: pick(titleCase(lang)), Body: fillPerson(t, newPerson(lang)),
					Tags: []string{pick(genericTags)}, Kinds: []string{"name"}, Part: "body", Lang: lang})
			}
		}
		for _, t := range titleTemplates[lang] {
			for range 5 {
				out = append(out, Note{Title: fillPerson(t, newPerson(lang)), Body: pick(cleanBodies[lang]),
					Tags: []string{}, Kinds: []string{"name"}, Part: "title", Lang: lang})
			}
		}
	}
	for range 15 {
		lang := pick(langs)
		p := newPerson(lang)
		tags := []string{pick(genericTags), "cliente", tagOf(p.given), tagOf(p.surname)}
		out = append(out, Note{Title: "Customer preference", Body: pick(cleanBodies["en"]), Tags: tags,
			Kinds: []string{"name"}, Part: "tags", Lang: lang})
	}
	for _, lang := range []string{"en", "pt", "es"} {
		for _, t := range clean[lang] {
			for range 6 {
				out = append(out, Note{Title: fillClean(pick(cleanTitles[lang]), lang), Body: fillClean(t, lang),
					Tags: []string{pick(genericTags)}, Kinds: []string{}, Part: "none", Lang: lang})
			}
		}
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

// titleCase returns clean titles for a note whose body names the person.
func titleCase(lang string) []string {
	switch lang {
	case "pt":
		return []string{"Preferência de contato", "Retorno pendente", "Pedido duplicado", "Reembolso"}
	case "es":
		return []string{"Devolución", "Seguimiento", "Cambio de dirección"}
	}
	return []string{"Callback preference", "Refund", "Account review", "Delivery notes"}
}
