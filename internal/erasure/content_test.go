package erasure

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The content matcher reads the subject's handles in their common written forms and her name
// with case and accents folded; a name alone is MatchName, a handle MatchHandle, and nobody
// else matches (issue 29 §1b).
func TestMatcher(t *testing.T) {
	m := NewMatcher(Needles{Handles: []string{"email:ana.souza@example.com", "phone:+5511912345678"}, Names: []string{"Ana Souza"}, Region: "BR"})
	for _, tc := range []struct {
		name, in, want string
	}{
		{"plain e-mail", "write to ana.souza@example.com", MatchHandle},
		{"upper-case e-mail", "ANA.SOUZA@EXAMPLE.COM", MatchHandle},
		{"spelled-out e-mail", "ana.souza at example dot com", MatchHandle},
		{"international phone", "call +55 11 91234-5678", MatchHandle},
		{"national phone", "call (11) 91234-5678", MatchHandle},
		{"phone digits", "5511912345678", MatchHandle},
		{"name", "Ana Souza asked for a refund", MatchName},
		{"name folded", "ANA SOUZA", MatchName},
		{"name with accents", "Ána Sóuza", MatchName},
		{"handle beats name", "Ana Souza, ana.souza@example.com", MatchHandle},
		{"someone else", "Bruno Lima, bruno@example.com, +55 11 98888-7777", ""},
		{"placeholder", "<subject> asked for <email>", ""},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, m.Match(tc.in), "got %q for %q", m.Match(tc.in), tc.in)
		})
	}
	var none *Matcher
	require.Equal(t, "", none.Match("ana.souza@example.com"))
	require.Equal(t, "", NewMatcher(Needles{}).Match("Ana Souza"))
	require.Equal(t, MatchName, m.MatchAll("nothing", "Ana Souza"))
	n := Needles{Handles: []string{"b", "a"}}.Merge(Needles{Handles: []string{"a"}, Names: []string{"X"}, Region: "BR"})
	require.Equal(t, Needles{Handles: []string{"a", "b"}, Names: []string{"X"}, Region: "BR"}, n)
}
