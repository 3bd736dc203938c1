package auth

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/fault"
)

// lookAlikes lists, per class of look-alike spelling (issue 27, "Found by the attacker"), a
// spelling of a base name that names the same person (SamePersonName) and whether a key may be
// minted under it (ValidatePersonName).
var lookAlikes = []struct {
	class, base, name string
	mintable          bool
}{
	{"same spelling", "Alice", "Alice", true},
	{"other case", "Alice", "ALICE", true},
	{"white space", "Ana Souza", "AnaSouza", true},
	{"Cyrillic а (U+0430) for a", "Alice", "\u0430lice", true},
	{"Greek ο (U+03BF) for o", "Bob", "B\u03bfb", true},
	{"digit 0 for O", "Bob", "B0b", true},
	{"capital I for l", "Alice", "AIice", true},
	{"small capital ᴀ (U+1D00)", "Alice", "\u1d00lice", true},
	{"small capital ʙ (U+0299)", "Bob", "\u0299ob", true},
	{"combining dot below (U+0323)", "Alice", "Alice\u0323", true},
	{"NFD against NFC", "Jos\u00e9", "Jose\u0301", true},
	{"accent dropped", "Jos\u00e9", "Jose", true},
	{"full-width letters", "Sol", "\uff33ol", true},
	{"mathematical letters (NFKC)", "Sol", "\U0001d412ol", true},
	{"punctuation", "Anne-Marie", "Anne Marie", true},
	{"trailing braille blank (U+2800)", "Alice", "Alice\u2800", false},
	{"object replacement (U+FFFC)", "Alice", "Alice\ufffc", false},
	{"control character (U+0001)", "Alice", "Al\u0001ice", false},
	{"DEL (U+007F)", "Alice", "Alice\u007f", false},
	{"zero-width space (U+200B)", "Sol", "S\u200bol", false},
	{"zero-width joiner (U+200D)", "Sol", "So\u200dl", false},
	{"right-to-left override (U+202E)", "Sol", "Sol\u202e", false},
	{"soft hyphen (U+00AD)", "Sol", "So\u00adl", false},
	{"variation selector (U+FE0F)", "Sol", "Sol\ufe0f", false},
	{"Hangul filler (U+3164)", "Sol", "Sol\u3164", false},
	{"no-break space (U+00A0)", "Ana Souza", "Ana\u00a0Souza", false},
	{"private use (U+E000)", "Sol", "Sol\ue000", false},
	{"unassigned (U+0378)", "Sol", "Sol\u0378", false},
	{"newer than the confusables data (U+1F6DD, Unicode 14)", "Sol", "Sol\U0001f6dd", false},
}

// TestSamePersonNameClasses: every look-alike class names the same person as its base, and a
// key is minted under it only when it holds no refused character.
func TestSamePersonNameClasses(t *testing.T) {
	for _, c := range lookAlikes {
		t.Run(c.class, func(t *testing.T) {
			require.True(t, SamePersonName(c.base, c.name), "%q and %q: got other people, want the same", c.base, c.name)
			require.True(t, SamePersonName(c.name, c.base), "symmetric")
			err := ValidatePersonName(c.name)
			if c.mintable {
				require.NoError(t, err)
				return
			}
			fe := fault.As(err)
			require.NotNil(t, fe, "%q: got %v, want invalid_member", c.name, err)
			require.Equal(t, "invalid_member", fe.Code)
			require.Equal(t, "name", fe.Details["member"])
		})
	}
}

// TestSamePersonNameTellsPeopleApart: other names stay other people, or nobody could approve.
func TestSamePersonNameTellsPeopleApart(t *testing.T) {
	for _, pair := range [][2]string{
		{"Alice", "Alicia"}, {"Sol", "Rui"}, {"Jos\u00e9", "Josefa"}, {"Ana Souza", "Ana Silva"},
		{"Lia", "Ila"}, {"Bob", "Rob"}, {"admin", "Val"},
	} {
		require.False(t, SamePersonName(pair[0], pair[1]), "%q and %q: got the same person, want two", pair[0], pair[1])
	}
	require.True(t, SamePersonName("\u2800", "\ufffc"), "names with no letter left cannot be told apart: the same")
	require.False(t, SamePersonName("\u2800", "Sol"))
}

// TestValidatePersonNameShape: the length, letter and UTF-8 rules.
func TestValidatePersonNameShape(t *testing.T) {
	for _, bad := range []string{"", "   ", "1234", "--", "\xff\xfe", string(make([]byte, 121))} {
		require.Error(t, ValidatePersonName(bad), "%q", bad)
	}
	for _, good := range []string{"Sol", "Ana Souza", "O'Brien", "\u674e\u96f7", "Zo\u00eb 2"} {
		require.NoError(t, ValidatePersonName(good), "%q", good)
	}
}
