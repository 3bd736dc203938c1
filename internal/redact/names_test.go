package redact

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// nameNote is one labelled note of testdata/names.jsonl (written by testdata/namegen),
// testdata/names_heldout.jsonl (written by hand before the rules were tuned) or
// testdata/names_heldout2.jsonl (written by hand after, measured once before its own fixes):
// Kinds ["name"] for a note naming a person (Part says where: title, body or tags), [] for a
// clean one (Part "none").
type nameNote struct {
	Title string   `json:"title"`
	Body  string   `json:"body"`
	Tags  []string `json:"tags"`
	Kinds []string `json:"kinds"`
	Part  string   `json:"part"`
	Lang  string   `json:"lang"`
}

func (n nameNote) gateText() string {
	return corpusNote{Title: n.Title, Body: n.Body, Tags: n.Tags}.gateText()
}

func loadNameNotes(t *testing.T, name string) []nameNote {
	t.Helper()
	f, err := os.Open(name)
	require.NoError(t, err)
	defer f.Close()
	var out []nameNote
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var n nameNote
		require.NoError(t, json.Unmarshal(sc.Bytes(), &n), sc.Text())
		out = append(out, n)
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, out, name)
	return out
}

// nameFigures is the name layer's outcome over a set: notes naming a person that were
// refused with kind name, clean notes refused with it, per part and language.
type nameFigures struct {
	positives, caught int
	cleans, refused   int
	per               map[string][2]int // "part=title", "lang=pt" -> {caught or passed, total}
	failures          []string
}

func (g nameFigures) recall() float64 { return ratio(g.caught, g.positives, 1) }

func (g nameFigures) falseRefusals() float64 { return ratio(g.refused, g.cleans, 0) }

func ratio(a, b int, empty float64) float64 {
	if b == 0 {
		return empty
	}
	return float64(a) / float64(b)
}

func measureNames(notes []nameNote) nameFigures {
	g := nameFigures{per: map[string][2]int{}}
	for _, n := range notes {
		hit := slices.Contains(Detect(n.gateText(), Options{Names: true}), KindName)
		want := slices.Contains(n.Kinds, string(KindName))
		ok := hit == want
		for _, k := range []string{"part=" + n.Part, "lang=" + n.Lang} {
			c := g.per[k]
			if ok {
				c[0]++
			}
			c[1]++
			g.per[k] = c
		}
		if want {
			g.positives++
			if hit {
				g.caught++
			}
		} else {
			g.cleans++
			if hit {
				g.refused++
			}
		}
		if !ok {
			g.failures = append(g.failures, fmt.Sprintf("want name=%v: %q / %q / %v", want, n.Title, n.Body, n.Tags))
		}
	}
	return g
}

func (g nameFigures) report(t *testing.T, set string) {
	t.Logf("%s: recall %.1f%% (%d/%d), false refusals %.1f%% (%d/%d)", set,
		100*g.recall(), g.caught, g.positives, 100*g.falseRefusals(), g.refused, g.cleans)
	keys := make([]string, 0, len(g.per))
	for k := range g.per {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		t.Logf("  %-12s right %d/%d", k, g.per[k][0], g.per[k][1])
	}
	for _, f := range g.failures {
		t.Logf("  MISS %s", f)
	}
}

// The figures the name layer reaches (GATE-2; targets of issue 26: recall >= 0.97 on notes
// naming a person, false refusals <= 0.01 on clean notes). The test fails when a change
// makes either worse; raise them when the layer gets better.
const (
	pinnedNameRecall        = 0.98
	pinnedNameFalseRefusals = 0.005
)

// TestNameCorpus measures the name layer on the labelled names corpus (generated and
// held-out) and on the clean notes of the personal-data corpus (which must stay clean with
// the name layer on), and pins the figures.
func TestNameCorpus(t *testing.T) {
	var all []nameNote
	for _, file := range []string{"testdata/names.jsonl", "testdata/names_heldout.jsonl", "testdata/names_heldout2.jsonl"} {
		set := loadNameNotes(t, file)
		measureNames(set).report(t, file)
		all = append(all, set...)
	}
	for _, file := range corpusFiles {
		for _, n := range loadCorpus(t, file) {
			if len(n.Kinds) == 0 {
				all = append(all, nameNote{Title: n.Title, Body: n.Body, Tags: n.Tags, Part: "none", Lang: n.Lang})
			}
		}
	}
	g := measureNames(all)
	g.report(t, "all (with the clean notes of "+strings.Join(corpusFiles, ", ")+")")
	require.GreaterOrEqual(t, g.recall(), pinnedNameRecall, "recall: got %.4f, want >= %.4f", g.recall(), pinnedNameRecall)
	require.LessOrEqual(t, g.falseRefusals(), pinnedNameFalseRefusals, "false refusals: got %.4f, want <= %.4f", g.falseRefusals(), pinnedNameFalseRefusals)
}
