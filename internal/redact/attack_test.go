package redact

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Findings of the attack on the gate (AM-6): every row failed before the fix.

// TestDetectFormatCharacters: every format character (Cf) is removed and every
// decimal digit (Nd) of any script is read as 0-9 before detection.
func TestDetectFormatCharacters(t *testing.T) {
	runDetect(t, Options{}, []detectCase{
		{"rlm in email", "Write to ana\u200f@example.com", email},
		{"rlm in phone", "call +55\u200f11\u200f91234\u200f5678", phone},
		{"rlm in cpf", "cpf 529\u200f982\u200f247\u200f25", cpf},
		{"lrm in email", "ana\u200e@exam\u200eple.com", email},
		{"rlo in email", "Write to ana\u202e@example.com", email},
		{"rlo in phone", "call +55\u202e11\u202e91234\u202e5678", phone},
		{"rlo in cpf", "cpf 529\u202e982\u202e247\u202e25", cpf},
		{"lri in email", "Write to ana\u2066@example.com", email},
		{"lri in phone", "call +55\u206611\u206691234\u20665678", phone},
		{"lri in cpf", "cpf 529\u2066982\u2066247\u206625", cpf},
		{"pdi and lre in phone", "call +55\u206911\u202a91234\u202c5678", phone},
		{"invisible times in cnpj", "11\u2062222\u2062333\u20620001\u206281", cnpj},
		{"mongolian vowel separator", "ana\u180e@example.com", email},
		{"arabic letter mark", "529982\u061c24725", cpf},
		{"variation selector", "52998\ufe0f224725", cpf},
		{"arabic-indic phone", "call (\u0661\u0661) \u0669\u0661\u0662\u0663\u0664-\u0665\u0666\u0667\u0668", phone},
		{"arabic-indic phone with rlo", "call (\u0661\u0661)\u202e \u0669\u0661\u0662\u0663\u0664-\u0665\u0666\u0667\u0668", phone},
		{"arabic-indic phone with lri", "call (\u0661\u0661) \u2066\u0669\u0661\u0662\u0663\u0664-\u0665\u0666\u0667\u0668", phone},
		{"extended arabic-indic cpf", "\u06f5\u06f2\u06f9.\u06f9\u06f8\u06f2.\u06f2\u06f4\u06f7-\u06f2\u06f5", cpf},
		{"devanagari phone", "+\u0969\u0969 \u096c \u0967\u0968 \u0969\u096a \u096b\u096c \u096d\u096e", phone},
		{"mixed scripts phone", "(11) 9\u0661\u0968\u09e9\u0a6a-5678", phone},
		{"unicode dash phone", "(11) 91234\u20115678", phone},
		// guards (passed before too): NFKC digits still read, and format
		// characters do not make personal data out of prose
		{"mathematical digits cpf", "\U0001D7D3\U0001D7D0\U0001D7D7\U0001D7D7\U0001D7D6\U0001D7D0\U0001D7D0\U0001D7D2\U0001D7D5\U0001D7D0\U0001D7D3", cpf},
		{"bidi marks in prose", "Refunds\u200f go back\u202e to the card\u2066 in 5 days.", nil},
		{"arabic-indic small number", "\u0665 business days", nil},
	})
}

// TestMaskFormatCharacters: Mask replaces the whole original span, whatever
// was removed or mapped inside it, and leaves no digit of the value behind.
func TestMaskFormatCharacters(t *testing.T) {
	cases := []struct {
		name, in, want string
		digits         string // digits of the value, in ASCII
	}{
		{"rlm email", "Write to ana\u200f@example.com now", "Write to <email> now", ""},
		{"rlm phone", "call +55\u200f11\u200f91234\u200f5678 now", "call <phone> now", "91234"},
		{"rlm cpf", "cpf 529\u200f982\u200f247\u200f25 ok", "cpf <cpf> ok", "52998224725"},
		{"rlo phone", "call +55\u202e11\u202e91234\u202e5678", "call <phone>", "91234"},
		{"lri cpf", "cpf 529\u2066982\u2066247\u206625", "cpf <cpf>", "52998224725"},
		{"arabic-indic phone", "call (\u0661\u0661) \u0669\u0661\u0662\u0663\u0664-\u0665\u0666\u0667\u0668 today", "call <phone> today", "91234"},
		{"arabic-indic phone lri", "call (\u0661\u0661) \u2066\u0669\u0661\u0662\u0663\u0664-\u0665\u0666\u0667\u0668", "call <phone>", "5678"},
		{"devanagari phone", "ligue +\u0969\u0969 \u096c \u0967\u0968 \u0969\u096a \u096b\u096c \u096d\u096e já", "ligue <phone> já", "345678"},
		// guard: format characters outside a value are kept byte for byte
		{"format char outside kept", "\u200fana@example.com\u200f", "\u200f<email>\u200f", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := Mask(tc.in, Options{})
			require.Equal(t, tc.want, got)
			require.NotContains(t, got, "ana")
			if tc.digits != "" {
				// no digit of the value left, in any script
				require.NotContains(t, onlyDigits(normalize(got).s), tc.digits)
			}
		})
	}
}

// TestDetectFalsePositives: ranges, amounts, timestamps, git remotes and
// company service lines are not personal data.
func TestDetectFalsePositives(t *testing.T) {
	runDetect(t, Options{}, []detectCase{
		{"port range", "NodePort services must use the port range 30000-32767.", nil},
		{"ports", "open ports 30000-32767 on the node", nil},
		{"decimal amount", "Refunds above 1234567.89 BRL need approval.", nil},
		{"epoch", "The cutoff is epoch 1732960000 in the billing tool.", nil},
		{"unix timestamp", "unix timestamp 1732960000", nil},
		{"scp git remote", "Clone git@github.com:acme/tools.git first.", nil},
		{"scp with home path", "copy it to deploy@build.example.com:~/releases", nil},
		{"url user info", "ssh://git@github.com/acme/tools.git", nil},
		{"toll-free br", "Call the support line 0800 123 4567", nil},
		{"toll-free br dashed", "SAC 0800-123-4567", nil},
		{"shared cost br", "central 0300 123 4567", nil},
		{"toll-free us", "call 1-800-555-0100 or 888 555 0100", nil},
		{"toll-free us bare", "call 800 555 0199", nil},
		{"toll-free international", "+55 800 123 4567", nil},
		{"year range", "policies from 2019-2023 still apply", nil},
	})
	// Guards (passed before too), still refused: the host-spec exceptions do not cover mailbox providers,
	// and a toll-free prefix does not hide the number after it.
	runDetect(t, Options{}, []detectCase{
		{"scp shaped gmail", "ana@gmail.com:notes", email},
		{"e-mail followed by colon and space", "write ana@example.com: she answers", email},
		{"phone after toll-free", "0800 123 4567 or (11) 91234-5678", phone},
	})
}

// TestMaskServiceLine: a company line is left as it is.
func TestMaskServiceLine(t *testing.T) {
	in := "Call the support line 0800 123 4567 or (11) 91234-5678"
	got, kinds := Mask(in, Options{})
	require.Equal(t, "Call the support line 0800 123 4567 or <phone>", got)
	require.Equal(t, phone, kinds)
}

// TestDetectMisses: numbers and addresses that used to pass.
func TestDetectMisses(t *testing.T) {
	runDetect(t, Options{}, []detectCase{
		{"country code without plus", "5511912345678", phone},
		{"country code without plus in text", "whatsapp 5511912345678 ok", phone},
		{"cpf all dots", "529.982.247.25", cpf},
		{"cpf spaces", "cpf 529 982 247 25", cpf},
		{"cpf after digits", "lote 555 529 982 247 25", cpf},
		{"cnpj dashes", "11-222-333-0001-81", cnpj},
		{"cnpj spaces", "11 222 333 0001 81", cnpj},
		{"spaced at and dots", "ana @ gmail . com", email},
		{"braces", "ana {at} example {dot} com", email},
		{"angle brackets", "ana <at> example <dot> com", email},
		{"bare at provider", "ana at gmail.com", email},
		{"bare at provider br", "fale com ana arroba uol.com.br", email},
		{"bare at country domain", "ana at empresa.com.br", email},
		{"bare at country domain short", "joao at empresa.pt", email},
		{"provider without tld", "ana@gmail", email},
		{"provider without tld end of sentence", "write to ana@hotmail.", email},
		// guards (passed before too)
		{"country code without plus formatted", "55 11 91234 5678", phone},
		{"host after at", "deployed at api.example.com", nil},
		{"host with country subdomain", "The API at api.acme.com.br:8443 times out", nil},
		{"vanity country code", "hosted at fly.io and x.ai", nil},
		{"prose before provider", "sign in at outlook.com first", nil},
		{"mention of provider", "thanks @gmail team", nil},
		{"localhost", "user@localhost", nil},
		{"meet at noon", "meet at noon . Then call", nil},
	})
}

// TestMaskMisses: Mask masks the whole number, whatever its separators.
func TestMaskMisses(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"cnpj spaces", "fornecedor 11 222 333 0001 81 ok", "fornecedor <cnpj> ok"},
		{"cnpj dashes", "11-222-333-0001-81", "<cnpj>"},
		{"cpf dots", "cpf 529.982.247.25.", "cpf <cpf>."},
		{"country code", "zap 5511912345678", "zap <phone>"},
		{"spaced email", "ana @ gmail . com!", "<email>!"},
		{"provider without tld", "ana@gmail ok", "<email> ok"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := Mask(tc.in, Options{})
			require.Equal(t, tc.want, got)
		})
	}
}

// TestJoinForCheck: an address split between parts is found in the joined
// text, and each part is still checked on its own.
func TestJoinForCheck(t *testing.T) {
	runDetect(t, Options{}, []detectCase{
		{"split address", JoinForCheck("Customer ana@", "example.com is the right mailbox"), email},
		{"split phone", JoinForCheck("Call (11) 91234-", "5678 today"), phone},
		// guards
		{"whole parts", JoinForCheck("Title", "mail ana@example.com", "tag"), email},
		{"clean parts", JoinForCheck("Refunds", "Refunds go back to the card.", "billing"), nil},
	})
	runDetect(t, Options{}, []detectCase{
		{"address split across tags", JoinForCheck("Contact", "", "ana example.com") + "\n" + JoinTagsForCheck([]string{"ana", "example.com"}), email},
		// guards
		{"word tags", JoinTagsForCheck([]string{"refund", "orders", "br"}), nil},
		{"one tag", JoinTagsForCheck([]string{"example.com"}), nil},
	})
	require.Equal(t, "", JoinTagsForCheck([]string{"a", "b", "c"}))
	require.Equal(t, "a@b.com\nb.com@c.com\n", JoinTagsForCheck([]string{"a", "b.com", "c.com"}))
	require.Equal(t, "a\nb\nab", JoinForCheck("a", "b"))
	require.Equal(t, "a", JoinForCheck("a"))
	require.Equal(t, "", JoinForCheck())
}

// TestLargeInputs: the shapes that used to be super-linear still give the
// right answer (speed is measured by BenchmarkLarge).
func TestLargeInputs(t *testing.T) {
	phones := repeatTo("9 1234 5678 ", 64<<10)
	masked, kinds := Mask(phones, Options{})
	require.Equal(t, phone, kinds)
	require.Nil(t, Detect(masked, Options{}), "nothing left to find once masked")
	require.Greater(t, strings.Count(masked, "<phone>"), len(phones)/(2*len("9 1234 5678 ")))
	emails := repeatTo("ana@example.com ", 64<<10)
	masked, kinds = Mask(emails, Options{})
	require.Equal(t, email, kinds)
	require.True(t, masked == strings.Repeat("<email> ", strings.Count(emails, "@")), "every address masked")
	// Many "a@": no address, nothing masked (one short window per "@").
	ats := strings.Repeat("a@", 8000)
	masked, kinds = Mask(ats, Options{})
	require.Nil(t, kinds)
	require.True(t, masked == ats, "nothing to mask")
}

// TestDetectHiddenForms: escapes, quoted local parts and spaced characters do
// not hide an address or a number (second attack).
func TestDetectHiddenForms(t *testing.T) {
	runDetect(t, Options{}, []detectCase{
		{"spaced letters", "write to a n a @ e x a m p l e . c o m today", email},
		{"url-encoded at", "ana%40example.com", email},
		{"url-encoded at and dot", "mailto=ana%40example%2Ecom", email},
		{"html decimal entities", "&#97;na&#64;example.com", email},
		{"html hex entity", "ana&#x40;example.com", email},
		{"html named entity", "ana&commat;example.com", email},
		{"html named at and dot", "ana&commat;example&period;com", email},
		{"quoted local part", `"ana smith"@example.com`, email},
		{"spaced us digits", "4 1 5 5 5 5 0 1 3 2", phone},
		{"spaced br digits", "ligue 1 1 9 1 2 3 4 5 6 7 8 hoje", phone},
		// guards: not personal data
		{"percent amounts", "fees of 40%40 and 2%2E3", nil},
		{"html entity in prose", "Tom &amp; Jerry &lt;3", nil},
		{"nine spaced digits", "codes 1 2 3 4 5 6 7 8 9 done", nil},
		{"spaced letters without at", "a b c d e f g h", nil},
		{"single letters around at", "a @ b", nil},
		{"quoted word before mention", `say "hi"@team`, nil},
		{"quotes across lines", "\"ana\n\"@example.com", nil},
	})
}

// TestMaskHiddenForms: the whole original run (escapes, quotes and spaces
// included) is masked, and nothing else.
func TestMaskHiddenForms(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"spaced letters", "write to a n a @ e x a m p l e . c o m today", "write to <email> today"},
		{"url-encoded", "to=ana%40example.com&x=1", "to=<email>&x=1"},
		{"html entities", "mail &#97;na&#64;example.com now", "mail <email> now"},
		{"html named", "ana&commat;example.com.", "<email>."},
		{"quoted local part", `write "ana smith"@example.com now`, "write <email> now"},
		{"spaced digits", "ligue 1 1 9 1 2 3 4 5 6 7 8 hoje", "ligue <phone> hoje"},
		{"spaced digits us", "call 4 1 5 5 5 5 0 1 3 2.", "call <phone>."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := Mask(tc.in, Options{})
			require.Equal(t, tc.want, got)
		})
	}
}

// TestDetectEscapeAndSplitGaps: the gaps of issue 17 §1: percent-escapes of
// letters, HTML references without ";", spaced letters mixed with address
// words, three-way tag splits; and the guards that keep prose clean.
func TestDetectEscapeAndSplitGaps(t *testing.T) {
	runDetect(t, Options{}, []detectCase{
		{"percent-escaped letter in domain", "renata88@gm%61il.com", email},
		{"percent-escaped letter in local part", "%61na@example.com", email},
		{"upper-case escape", "ana@ho%74mail.com", email},
		{"numeric reference without semicolon", "ana&#64example.com", email},
		{"hex reference without semicolon", "ana&#x40example.com", email},
		{"named reference without semicolon", "ana&commatgmail.com", email},
		{"named at and dot without semicolons", "ana&commatexample&periodcom", email},
		{"spaced domain after at", "tiago.m at g m a i l dot com", email},
		{"spaced short domain after at", "lucia_f at u o l dot com", email},
		{"spaced local part before at", "a n a at gmail dot com", email},
		{"spaced domain, arroba", "bia arroba o u t l o o k ponto com", email},
		{"three tags ending in a generic tld", JoinTagsForCheck([]string{"joao.pereira", "acme-corp", "com"}), email},
		{"three tags ending in com.br", JoinTagsForCheck([]string{"vip", "ana", "loja", "com.br"}), email},
		// guards
		{"AT&T and R&D", "AT&T and R&D signed; Q&A at 10", nil},
		{"copy sign without semicolon", "&copy 2026 Acme &reg", nil},
		{"numeric reference to a control character", "item &#1 of the list", nil},
		{"percent of a non-letter", "discount 50%da loja, 10%ab", nil},
		{"spaced letters without address word", "grades a b c d", nil},
		{"spaced letters then at in prose", "look at a b c", nil},
		{"three tags ending in a country code", JoinTagsForCheck([]string{"refund", "orders", "br"}), nil},
	})
	got, _ := Mask("write to ana&#64example.com or bia@gm%61il.com now", Options{})
	require.Equal(t, "write to <email> or <email> now", got)
}
