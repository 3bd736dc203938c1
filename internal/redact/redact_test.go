package redact

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

type detectCase struct {
	name string
	in   string
	want []Kind
}

func runDetect(t *testing.T, opt Options, cases []detectCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, Detect(tc.in, opt), "input %q", tc.in)
		})
	}
}

var (
	email   = []Kind{KindEmail}
	phone   = []Kind{KindPhone}
	cpf     = []Kind{KindCPF}
	cnpj    = []Kind{KindCNPJ}
	subject = []Kind{KindSubject}
)

func TestDetectEmail(t *testing.T) {
	runDetect(t, Options{}, []detectCase{
		{"plain", "write to ana@example.com today", email},
		{"plus and dots", "Ana.Silva+crm@mail.example.co.uk", email},
		{"international local part", "fale com joão@empresa.com.br", email},
		{"IDN domain", "user@bücher.de", email},
		{"full width", "ａｎａ＠ｅｘａｍｐｌｅ．ｃｏｍ", email},
		{"zero width inside", "ana\u200b@example.com", email},
		{"soft hyphen inside", "an\u00ada@exam\u00adple.com", email},
		{"spelled at dot", "ana at example dot com", email},
		{"spelled brackets", "ana [at] example [dot] com", email},
		{"spelled parens", "ana (at) example (dot) com", email},
		{"spelled portuguese", "mande para ana arroba example ponto com", email},
		{"spelled mixed", "ana [at] example.com", email},
		{"end of sentence", "Mail cminh730@email.com.", email},
		// refused above; accepted (no personal data) below
		{"host", "deployed at api.example.com on Monday", nil},
		{"mention", "thanks @ana.silva for the fix", nil},
		{"no tld", "user@localhost", nil},
		{"dot com era", "look at the dot com era", nil},
		{"at without domain", "meet at noon dot", nil},
		{"url", "see https://docs.example.com/a/b", nil},
	})
}

func TestDetectPhone(t *testing.T) {
	runDetect(t, Options{}, []detectCase{
		{"glued to a word", "ligar para suporte(11)91234-5678", phone},
		{"french international", "+33 6 12 34 56 78", phone},
		{"uk international", "+44 20 7123 4567", phone},
		{"us possible not valid", "(977) 625-2661", phone},
		{"br spaced", "11 9 8765 4321", phone},
		{"br national", "(11) 91234-5678", phone},
		{"br mobile without area code", "me liga no 91234-5678", phone},
		{"e164 glued", "tel:+5511912345678", phone},
		{"us dashed", "call 415-555-2671 now", phone},
		{"uk national", "07700 900123", phone},
		{"bare br mobile", "meu celular 11912345678", phone},
		{"bare us", "7277607806", phone},
		{"after a date", "on 2026-08-12 call 11 98765-4321", phone},
		// accepted: not personal data
		{"seven digits local", "call 555-0100", nil},
		{"release note", "Roll build eu-20260812-09 after v1.2.3.4; form 1545-0008; order 4412-9981-0033", nil},
		{"organisation and place", "The ERP at Acme Ltda in São Paulo posts credits at night", nil},
		{"version", "upgrade to 10.2.3.4 and 2.14.1", nil},
		{"ip address", "host 192.168.100.200 is down", nil},
		{"iso date", "deployed 2026-08-12", nil},
		{"br date", "vence em 12/08/2026 ou 12.08.2026", nil},
		{"order id", "order 4412-9981-0033", nil},
		{"order id spaced", "order number 4412 9981 0033", nil},
		{"pedido bad cpf", "pedido 12345678901", nil},
		{"order id colon", "Order ID: 3348917502", nil},
		{"ticket hash", "see #4412998100", nil},
		{"invoice", "invoice 2026-000123-45", nil},
		{"cep", "CEP 01310-100", nil},
		{"amount", "total 1.234.567,89 reais", nil},
		{"range", "ids 1000-2000", nil},
		{"list of sizes", "sizes 36 38 40 42 44", nil},
		{"french national", "ligue 06 12 34 56 78", phone},
		{"kafka partitions", "partitions 12 24 48 96 and 2019 to 2023", nil},
		{"iso timestamp", "2026-08-12T10:00:00Z", nil},
		{"money", "R$ 1.299,90 em 10x", nil},
		{"sku glued", "SKU12345678 is back", nil},
		{"bare short", "batch of 12345678 rows", nil},
	})
}

func TestDetectPhoneRegion(t *testing.T) {
	runDetect(t, Options{DefaultRegion: "US"}, []detectCase{
		{"bare valid us", "4155552671", phone},
		{"bare not valid in us", "7916676427", nil},
		{"formatted br still refused", "(11) 91234-5678", phone},
	})
	runDetect(t, Options{DefaultRegion: "BR"}, []detectCase{
		{"bare valid br", "11912345678", phone},
		{"bare us not valid in br", "6502530000", nil},
	})
}

func TestDetectDocuments(t *testing.T) {
	runDetect(t, Options{}, []detectCase{
		{"cpf formatted", "CPF 529.982.247-25", cpf},
		{"cpf bare", "cpf: 52998224725.", cpf},
		{"cpf after id word", "id 52998224725", cpf},
		{"cpf after customer", "cliente 52998224725", cpf},
		{"cpf after procedure word and another word", "recibo para 52998224725", cpf},
		{"formatted cpf after procedure word", "pedido 529.982.247-25", cpf},
		{"order number with cpf check digits", "pedido 52998224725", nil},
		{"ticket number with cpf check digits", "Ticket #52998224725 closed", nil},
		{"cnpj formatted", "CNPJ 11.222.333/0001-81", cnpj},
		{"cnpj bare", "11222333000181", cnpj},
		{"both", "529.982.247-25 e 11.222.333/0001-81", []Kind{KindCNPJ, KindCPF}},
		// accepted
		{"cpf bad digits", "529.982.247-26", nil},
		{"cpf repeated digit", "111.111.111-11", nil},
		{"cnpj bad digits", "11.222.333/0001-82", nil},
		{"cnpj repeated digit", "00.000.000/0000-00", nil},
		{"cpf glued to digits", "552998224725", nil},
	})
}

func TestDetectMixed(t *testing.T) {
	runDetect(t, Options{}, []detectCase{
		{"all", "ana@example.com, +33 6 12 34 56 78, 529.982.247-25", []Kind{KindCPF, KindEmail, KindPhone}},
		{"nothing", "", nil},
		{"plain prose", "Refunds go back to the original card within 5 business days.", nil},
	})
}

func newKnown() *KnownSubjects {
	k := NewKnownSubjects([]byte("space-key"))
	k.AddName("Crystal Minh")
	k.AddName("José  Álvaro da Silva Pereira Neto")
	k.AddName("Ana")
	k.AddName("Joyce")
	k.AddHandle("email:cminh730@email.com")
	k.AddHandle("phone:+19776252661")
	k.AddHandle("username:cminh730")
	k.AddHandle("document:52998224725")
	return k
}

func TestDetectKnownSubjects(t *testing.T) {
	k := newKnown()
	runDetect(t, Options{Known: k}, []detectCase{
		{"full name", "Account has been pulled up for Crystal Minh.", subject},
		{"case folded", "CRYSTAL MINH called", subject},
		{"accents folded", "jose alvaro da silva asked", subject},
		{"first and last of long name", "José Neto wrote", subject},
		{"single long token", "Joyce asked about hats", subject},
		{"username", "Username: cminh730", subject},
		{"known email", "cminh730@email.com", []Kind{KindEmail, KindSubject}},
		{"known phone", "(977) 625-2661", []Kind{KindPhone, KindSubject}},
		{"known cpf", "529.982.247-25", []Kind{KindCPF, KindSubject}},
		// accepted
		{"first name alone", "What is your membership level Crystal?", nil},
		{"short single name ignored", "ana maria", nil},
		{"other name", "Crystal Palace won", nil},
		{"name inside word", "crystalminh", nil},
	})
	// Bare run not valid in US: not a phone by the rule, but a known phone.
	require.Equal(t, subject, Detect("ref 9776252661", Options{DefaultRegion: "US", Known: k}))
	require.Nil(t, Detect("ref 9776252661", Options{DefaultRegion: "US"}))
	require.Nil(t, Detect("Crystal Minh", Options{}))
	var nilKnown *KnownSubjects
	require.Nil(t, Detect("Crystal Minh", Options{Known: nilKnown}))
	other := NewKnownSubjects([]byte("other-key"))
	other.AddName("Someone Else")
	require.Nil(t, Detect("Crystal Minh", Options{Known: other}))
}

func TestKnownSubjectsStoresNoClearText(t *testing.T) {
	k := newKnown()
	for d := range k.hashes {
		require.NotContains(t, string(d[:]), "crystal")
	}
	require.Len(t, k.hashes, 9) // 4 name sequences (Ana ignored, long name twice), 4 handles, 1 phone NSN
}

func TestMask(t *testing.T) {
	k := newKnown()
	cases := []struct {
		name  string
		in    string
		want  string
		kinds []Kind
	}{
		{"email", "mail ana@example.com now", "mail <email> now", email},
		{"spelled email", "ana [at] example [dot] com!", "<email>!", email},
		{"full width email keeps rest", "Olá ａｎａ＠ｅｘａｍｐｌｅ．ｃｏｍ ok", "Olá <email> ok", email},
		{"zero width", "x ana\u200b@example.com y", "x <email> y", email},
		{"phone glued", "ligar para suporte(11)91234-5678.", "ligar para suporte<phone>.", phone},
		{"international", "ligue +33 6 12 34 56 78 hoje", "ligue <phone> hoje", phone},
		{"cpf and cnpj", "CPF 529.982.247-25 CNPJ 11.222.333/0001-81", "CPF <subject> CNPJ <cnpj>", []Kind{KindCNPJ, KindCPF, KindSubject}},
		{"known name", "pulled up for Crystal Minh.", "pulled up for <subject>.", subject},
		{"known email", "é cminh730@email.com", "é <subject>", []Kind{KindEmail, KindSubject}},
		{"nothing", "order 4412-9981-0033 shipped", "order 4412-9981-0033 shipped", nil},
		{"accents outside span kept", "São Paulo: (11) 91234-5678", "São Paulo: <phone>", phone},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, kinds := Mask(tc.in, Options{Known: k})
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.kinds, kinds)
		})
	}
}

func TestCanonicalHandle(t *testing.T) {
	ok := []struct {
		name, in, region, want string
	}{
		{"email lower", "email:Ana@Example.COM", "", "email:ana@example.com"},
		{"email trimmed", " Email : ana@example.com ", "", "email:ana@example.com"},
		{"email full width", "email:ａｎａ＠ｅｘａｍｐｌｅ．ｃｏｍ", "", "email:ana@example.com"},
		{"phone br", "phone:(11) 91234-5678", "BR", "phone:+5511912345678"},
		{"phone br no region", "phone:(11) 91234-5678", "", "phone:+5511912345678"},
		{"phone international", "phone:+33 6 12 34 56 78", "BR", "phone:+33612345678"},
		{"phone us", "phone:(977) 625-2661", "US", "phone:+19776252661"},
		{"document", "document:529.982.247-25", "", "document:52998224725"},
		{"username", "username:  CMinh730 ", "", "username:cminh730"},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CanonicalHandle(tc.in, tc.region)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	bad := []struct {
		name, in string
		want     error
	}{
		{"no prefix", "ana@example.com", ErrUnknownHandle},
		{"unknown prefix", "fax:123", ErrUnknownHandle},
		{"empty email", "email:", ErrEmptyHandle},
		{"blank username", "username:   ", ErrEmptyHandle},
		{"document without digits", "document:abc", ErrEmptyHandle},
		{"not an email", "email:ana", ErrInvalidHandle},
		{"not a phone", "phone:12", ErrInvalidHandle},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CanonicalHandle(tc.in, "BR")
			require.ErrorIs(t, err, tc.want)
			require.Empty(t, got)
			require.NotContains(t, err.Error(), strings.TrimPrefix(tc.in, "fax:"))
		})
	}
}

func BenchmarkDetect(b *testing.B) {
	para := "Refund procedure: ask the customer for their full name or account ID, validate the purchase " +
		"with order 4412-9981-0033 and build eu-20260812-09 (v1.2.3.4). The ERP at Acme Ltda in São Paulo " +
		"posts credits at night; escalate to the manager after 2026-08-12 if needed. "
	var sb strings.Builder
	for sb.Len() < 1950 {
		sb.WriteString(para)
	}
	note := sb.String()[:1950] + " call (11) 91234-5678"
	for _, bc := range []struct {
		name string
		opt  Options
	}{
		{"plain", Options{DefaultRegion: "BR"}},
		{"known", Options{DefaultRegion: "BR", Known: newKnown()}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(note)))
			for b.Loop() {
				Detect(note, bc.opt)
			}
		})
	}
}

// TestDetectPhoneIntroduction: what introduces a digit run decides between id
// and phone (issue 17 §1): contact abbreviations glued by punctuation make a
// phone, ids introduced by order/ticket/invoice/protocol/tracking/batch words
// (also a few words away, and in lists) pass, and a contact word closer to the
// number than the id word makes it a phone again.
func TestDetectPhoneIntroduction(t *testing.T) {
	phone := []Kind{KindPhone}
	runDetect(t, Options{}, []detectCase{
		{"tel glued by period", "ligar tel.11987654321 hoje", phone},
		{"cel glued, formatted", "cel.(21)96869-4296", phone},
		{"fone glued with plus", "fone.+55 19 98044-8505", phone},
		{"ph glued", "callback Ph.2125550143 today", phone},
		{"whats glued", "whats.(85)99914-5187", phone},
		{"fone glued by dash", "fone-2125550143", phone},
		{"tel glued by slash", "tel/+1 404 481 0901", phone},
		{"contact glued by dash, plus", "contact-+55 92 98903-1561", phone},
		{"tel glued to digits", "tel11987654321", phone},
		{"id glued stays id", "build eu-2125550143-09 failed", nil},
		{"protocol two words away", "Protocolo de atendimento 4159977512 registrado.", nil},
		{"tracking number is", "The tracking number is 2123460821; updates at night.", nil},
		{"nota fiscal", "Nota fiscal 3129671929 emitida em duplicidade.", nil},
		{"numero do protocolo e", "O número do protocolo é 31999509241, informar.", nil},
		{"order list", "Orders 4154327323 and 6355444157 were merged.", nil},
		{"ticket list with comma", "Tickets 2802139876, 31982742690 closed.", nil},
		{"pedidos e", "Pedidos 85975527444 e 51966107181 unidos.", nil},
		{"batch", "Batch 2125550143 recalled.", nil},
		{"plural id word", "Chamados 11987650000 e 11987650001 tratam do mesmo defeito.", nil},
		{"filler glued, contact before it", "Callback number=3125550187, ask for the holder.", phone},
		{"filler glued, id word before it", "Order number=3125550187 shipped.", nil},
		{"contact after id in clause", "Ticket 88213: customer 2125550143 asked to cancel.", phone},
		{"id then contact", "Pedido 7253724283: telefone do cliente 11987654321.", phone},
		{"sentence ends the id", "Order 4471 delayed. Call 2125550143.", phone},
		{"semicolon ends the id", "Order 4471 delayed; 11987654321 is the buyer.", phone},
		{"too far from the id word", "Order shipped to the buyer at 2125550143.", phone},
		{"us number not a BR shared-cost line", "ligar (303) 630-6430", phone},
		{"br shared-cost line with trunk 0", "Central 0303 630 6430", nil},
	})
}
