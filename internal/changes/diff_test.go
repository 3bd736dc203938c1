package changes

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPretty(t *testing.T) {
	require.Equal(t, "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": {}\n}\n", Pretty(`{"a":[1,2],"b":{}}`))
	require.Equal(t, "not json\n", Pretty("not json"))
	require.Equal(t, "not json\n", Pretty("not json\n"))
}

func TestDiff(t *testing.T) {
	require.Empty(t, Diff("features", 3, `{"a":1}`, `{"a":1}`), "equal documents have no diff")

	got := Diff("features", 3, `{"a":{"enabled":false},"b":2}`, `{"a":{"enabled":true},"b":2}`)
	require.Equal(t, strings.Join([]string{
		"--- features@v3",
		"+++ features (proposed)",
		"@@ -1,6 +1,6 @@",
		" {",
		"   \"a\": {",
		"-    \"enabled\": false",
		"+    \"enabled\": true",
		"   },",
		"   \"b\": 2",
		" }",
		"",
	}, "\n"), got)

	// Added and removed members; context stays at three lines around each change.
	old := `{"types":[{"type":"a"},{"type":"b"},{"type":"c"},{"type":"d"},{"type":"e"}]}`
	neu := `{"types":[{"type":"a"},{"type":"b"},{"type":"c"},{"type":"d"},{"type":"e"},{"type":"f"}]}`
	got = Diff("object-types", 0, old, neu)
	require.True(t, strings.HasPrefix(got, "--- object-types@v0\n+++ object-types (proposed)\n"), got)
	require.Contains(t, got, "@@ -14,6 +14,9 @@\n")
	require.Contains(t, got, "       \"type\": \"e\"\n+    },\n+    {\n+      \"type\": \"f\"\n     }\n")
	require.NotContains(t, got, `"type": "a"`, "lines far from the change are not shown")
}
