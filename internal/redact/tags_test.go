package redact

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// gateTags is what the notes gate reads of a list of tags alone (as
// notes.GateText with an empty title and body).
func gateTags(tags ...string) string {
	return JoinForCheck("", "", strings.Join(tags, " ")) + "\n" + JoinTagsForCheck(tags)
}

// TestTagsProviderWords: a bare provider word after another tag is not an
// address (issue 26 §1, GATE-1); a local part and a dotted domain are.
func TestTagsProviderWords(t *testing.T) {
	for _, tags := range [][]string{
		{"deploy", "live"}, {"handoff", "pm"}, {"sso", "outlook"}, {"billing", "orange"},
		{"refund", "gmail"}, {"w1", "r7"}, {"ana", "gmail"}, {"support", "yahoo", "icloud"},
		{"deploy", "api.prod"}, {"config", "app.yaml"}, {"docs", "readme.md"}, {"ops", "deploy.sh"},
		{"infra", "main.tf"}, {"release", "v2.14.3"}, {"tax", "com.br"}, {"refund", "orders", "br"},
		{"live", "outlook", "pm", "r7", "orange", "gmail"},
	} {
		require.Nil(t, Detect(gateTags(tags...), Options{}), "%q", tags)
	}
	for _, tags := range [][]string{
		{"ana", "gmail.com"}, {"ana.silva", "example.com.br"}, {"vip", "joao", "empresa.pt"},
		{"ana", "example", "com"}, {"vip", "ana", "loja", "com.br"}, {"k.tanaka", "outlook.co.uk"},
		{"ana", "at", "gmail", "dot", "com"}, {"ana", "at", "gmail.com"},
		{"billing", "stripe.com"}, // the documented cost: a bare domain tag after another tag
	} {
		require.Equal(t, []Kind{KindEmail}, Detect(gateTags(tags...), Options{}), "%q", tags)
	}
	// Tags are read as text too: phones and documents in tags are refused.
	require.Equal(t, []Kind{KindPhone}, Detect(gateTags("deploy", "tel:2125550143"), Options{}))
	require.Equal(t, []Kind{KindPhone}, Detect(gateTags("ligar", "11", "98765-4321"), Options{}))
	require.Equal(t, []Kind{KindCPF}, Detect(gateTags("refund", "529.982.247-25"), Options{}))
	// The same provider words in text keep every detection they had.
	for _, s := range []string{"ana@gmail", "write to ana@live", "ana at gmail dot com", "ana arroba orange ponto fr", "ana at outlook.com"} {
		require.Equal(t, []Kind{KindEmail}, Detect(s, Options{}), s)
	}
}

func TestTagDomain(t *testing.T) {
	for d, want := range map[string]bool{
		"gmail.com": true, "empresa.com.br": true, "empresa.pt": true, "firm.co.uk": true,
		"mail.example.org": true, "loja.online": true,
		"gmail": false, "com.br": false, "co.uk": false, "v1.2": false, "app.yaml": false,
		"readme.md": false, "api.prod": false, "app.dev": false, "a..com": false, "-a.com": false,
		".com.br": false, "2.0": false,
	} {
		require.Equal(t, want, tagDomain(d), d)
	}
}
