package console

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWordDiff(t *testing.T) {
	tests := []struct {
		name, a, b string
		want       []span
	}{
		{"equal", "send the chart", "send the chart", []span{{"same", "send the chart"}}},
		{"word replaced", "send the size chart first", "send the fit chart first",
			[]span{{"same", "send the "}, {"del", "size"}, {"add", "fit"}, {"same", " chart first"}}},
		{"words added at the end", "validate the purchase", "validate the purchase with the order number",
			[]span{{"same", "validate the purchase"}, {"add", " with the order number"}}},
		{"words removed", "always send the chart", "send the chart",
			[]span{{"del", "always "}, {"same", "send the chart"}}},
		{"two words replaced read as one change", "send the size chart first", "send the fit guide first",
			[]span{{"same", "send the "}, {"del", "size chart"}, {"add", "fit guide"}, {"same", " first"}}},
		{"punctuation is its own token", "ask first.", "ask first, always.",
			[]span{{"same", "ask first"}, {"add", ", always"}, {"same", "."}}},
		{"from empty", "", "new text", []span{{"add", "new text"}}},
		{"to empty", "old text", "", []span{{"del", "old text"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := wordDiff(tc.a, tc.b)
			require.Equal(t, tc.want, got)
		})
	}
}

// The spans always rebuild both texts, whatever the texts (long ones with frequent words too).
func TestWordDiffRebuildsBothTexts(t *testing.T) {
	a := strings.Repeat("the order is the order and the size is the size. ", 30) + "ask first"
	b := strings.Repeat("the order is the order and the fit is the size. ", 30) + "ask later\nthen act"
	var old, new strings.Builder
	for _, s := range wordDiff(a, b) {
		if s.Op != "add" {
			old.WriteString(s.Text)
		}
		if s.Op != "del" {
			new.WriteString(s.Text)
		}
	}
	require.Equal(t, a, old.String())
	require.Equal(t, b, new.String())
}
