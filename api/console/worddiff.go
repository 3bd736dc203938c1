package console

import (
	"regexp"
	"strings"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/agentmemory/agentmemory/internal/notes"
)

// span is one run of a word diff: Op is "same", "del" (only in the old text) or "add" (only
// in the new one).
type span struct {
	Op   string
	Text string
}

// fieldDiff is the word diff of one member of a note: its name, and the spans from the
// proposed value to the approved one.
type fieldDiff struct {
	Field string
	Spans []span
}

// tokens splits s into words, single punctuation marks and the runs of white space between
// them, so that joining the tokens gives s back.
var tokens = regexp.MustCompile(`\s+|[\p{L}\p{N}_'’-]+|[^\s\p{L}\p{N}_'’-]`)

// wordDiff is the word-level diff from a to b (difflib's matcher over words, without its
// junk heuristic, which would treat frequent words as noise in long texts). Joining the
// "same" and "del" spans gives a; "same" and "add" give b.
func wordDiff(a, b string) []span {
	x, y := tokens.FindAllString(a, -1), tokens.FindAllString(b, -1)
	var out []span
	add := func(op string, words []string) {
		if len(words) == 0 {
			return
		}
		text := strings.Join(words, "")
		if n := len(out); n > 0 && out[n-1].Op == op {
			out[n-1].Text += text
			return
		}
		out = append(out, span{Op: op, Text: text})
	}
	for _, oc := range difflib.NewMatcherWithJunk(x, y, false, nil).GetOpCodes() {
		if oc.Tag == 'e' && oc.I1 > 0 && oc.I2 < len(x) && blank(x[oc.I1:oc.I2]) {
			// A lone space between two changes reads better inside them ("size chart" to
			// "fit guide" is one change, not two).
			oc.Tag = 'r'
		}
		switch oc.Tag {
		case 'e':
			add("same", x[oc.I1:oc.I2])
		case 'd':
			add("del", x[oc.I1:oc.I2])
		case 'i':
			add("add", y[oc.J1:oc.J2])
		case 'r':
			add("del", x[oc.I1:oc.I2])
			add("add", y[oc.J1:oc.J2])
		}
	}
	return regroup(out)
}

// blank reports whether every token is white space.
func blank(ts []string) bool {
	for _, t := range ts {
		if strings.TrimSpace(t) != "" {
			return false
		}
	}
	return true
}

// regroup merges each run of changes (del and add spans, in any order) into one del span
// then one add span, so a change reads as "old words" then "new words".
func regroup(in []span) []span {
	var out []span
	var del, add strings.Builder
	flush := func() {
		if del.Len() > 0 {
			out = append(out, span{Op: "del", Text: del.String()})
		}
		if add.Len() > 0 {
			out = append(out, span{Op: "add", Text: add.String()})
		}
		del.Reset()
		add.Reset()
	}
	for _, s := range in {
		switch s.Op {
		case "del":
			del.WriteString(s.Text)
		case "add":
			add.WriteString(s.Text)
		default:
			flush()
			out = append(out, s)
		}
	}
	flush()
	return out
}

// approvedDiff is what a reviewer changed in proposed before approving it as note n: the
// word diff of each member that differs (title, body, tags, kind, visibility), in that
// order; none when n was approved as proposed.
func approvedDiff(proposed notes.ProposedNote, n notes.Note) []fieldDiff {
	pairs := []struct{ field, from, to string }{
		{"Title", proposed.Title, n.Title},
		{"Body", proposed.Body, n.Body},
		{"Tags", strings.Join(proposed.Tags, ", "), strings.Join(n.Tags, ", ")},
		{"Kind", proposed.Kind, n.Kind},
		{"Visibility", proposed.Visibility, n.Visibility},
	}
	var out []fieldDiff
	for _, p := range pairs {
		if p.from != p.to {
			out = append(out, fieldDiff{Field: p.field, Spans: wordDiff(p.from, p.to)})
		}
	}
	return out
}
