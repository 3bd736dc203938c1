package redact

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// GATE-2: the name layer on the examples: names refused whatever their position and
// cue; organisations, places, products, fonts and procedure words pass. Without
// Options.Names nothing here is a name.
func TestNamesDetect(t *testing.T) {
	tests := []struct {
		name, in string
		want     bool
	}{
		{"unknown customer", "Marisol Quintanilha prefers a call back", true},
		{"given name and surname at the end", "Refund approved for João Silva", true},
		{"after falar com and an article", "Falar com a Maria sobre o reembolso", true},
		{"greeting", "Hi Maria, the refund is done", true},
		{"Portuguese greeting", "Olá João, tudo certo", true},
		{"ask for and an unknown word", "Ask for Quintanilha at the desk", true},
		{"honorific and an ordinary surname", "Sr. Branco prefere e-mail", true},
		{"Dona", "Dona Cida sempre pede o mesmo entregador", true},
		{"her name is", "Her name is Priscilla Vaughn", true},
		{"o nome dela é", "O nome dela é Luana", true},
		{"weak cue and two capitalised words", "customer Zoltan Ferenczy called", true},
		{"lower case after a cue", "cliente maria silva ligou", true},
		{"tags as the gate joins them", "refund cliente maria silva", true},
		{"ordinary given name before a surname", "Will Smith called twice", true},
		{"company suffix", "Acme Ltda ships from São Paulo", false},
		{"S.A. and GmbH", "Globex S.A. and Umbrella GmbH share a contract", false},
		{"fonts and tiers", "Times New Roman in Tier 2", false},
		{"states named like people", "Santa Catarina and Rio Branco", false},
		{"brand named like a person, sentence start", "Mark Jenkins job as failed", false},
		{"assistant", "Alexa skill broke", false},
		{"car brand", "Mercedes fleet account", false},
		{"place named like a person", "Deploy to Victoria region", false},
		{"ordinary word at a sentence start", "Grace period is 30 days", false},
		{"weekday", "Check the Monday queue", false},
		{"Portuguese procedure", "Verifique o Pix antes", false},
		{"button label", "Confirm with [Validate Purchase] first", false},
		{"example", "Get the full name, such as 'George Constanza'", false},
		{"camel-case product", "Restart MariaDB after the upgrade", false},
	}
	for _, tc := range tests {
		got := slices.Contains(Detect(tc.in, Options{Names: true}), KindName)
		require.Equal(t, tc.want, got, "%s: %q: got name=%v, want %v", tc.name, tc.in, got, tc.want)
		require.NotContains(t, Detect(tc.in, Options{}), KindName, "%s: names off", tc.name)
	}
	masked, kinds := Mask("Ligar para Marisol Quintanilha amanhã", Options{Names: true})
	require.Equal(t, "Ligar para <name> amanhã", masked)
	require.Equal(t, []Kind{KindName}, kinds)
}
