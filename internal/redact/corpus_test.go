package redact

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// corpusNote is one labelled note of testdata/corpus.jsonl (written by
// testdata/gen): Kinds empty means a clean note that must pass.
type corpusNote struct {
	ID    string   `json:"id"`
	Lang  string   `json:"lang"`
	Class string   `json:"class"`
	Kinds []string `json:"kinds"`
	Title string   `json:"title"`
	Body  string   `json:"body"`
	Tags  []string `json:"tags"`
}

// The figures the gate reaches on the corpus (recall: share of notes with
// personal data refused; false refusals: share of clean notes refused). The
// test fails when a change makes either worse; raise them when the gate gets
// better. Targets of issue 17: recall >= 0.995, false refusals <= 0.005.
const (
	pinnedRecall        = 1.0
	pinnedFalseRefusals = 0.0
)

// corpusFiles are the labelled sets: corpus.jsonl is generated (testdata/gen),
// heldout.jsonl is written by hand, in other words and shapes than the
// generator's templates.
var corpusFiles = []string{"testdata/corpus.jsonl", "testdata/heldout.jsonl"}

func loadCorpus(t *testing.T, name string) []corpusNote {
	t.Helper()
	f, err := os.Open(name)
	require.NoError(t, err)
	defer f.Close()
	var out []corpusNote
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var n corpusNote
		require.NoError(t, json.Unmarshal(sc.Bytes(), &n), sc.Text())
		out = append(out, n)
	}
	require.NoError(t, sc.Err())
	return out
}

// gateText is what the notes gate reads of a note (as notes.GateText, without evidence).
func (n corpusNote) gateText() string {
	s := JoinForCheck(n.Title, n.Body, strings.Join(n.Tags, " "))
	if t := JoinTagsForCheck(n.Tags); t != "" {
		s += "\n" + t
	}
	return s
}

// gateFigures is the outcome of the gate over the corpus.
type gateFigures struct {
	positives, caught int
	cleans, refused   int
	perKind           map[string][2]int // kind -> {caught, total}
	perFalse          map[string]int    // detected kind -> clean notes refused with it
	perClass          map[string][2]int // class -> {wrong, total}
	failures          []string
}

func (g gateFigures) recall() float64 {
	if g.positives == 0 {
		return 1
	}
	return float64(g.caught) / float64(g.positives)
}

func (g gateFigures) falseRate() float64 {
	if g.cleans == 0 {
		return 0
	}
	return float64(g.refused) / float64(g.cleans)
}

func runCorpus(notes []corpusNote) gateFigures {
	g := gateFigures{perKind: map[string][2]int{}, perFalse: map[string]int{}, perClass: map[string][2]int{}}
	for _, n := range notes {
		found := Detect(n.gateText(), Options{})
		var got []string
		for _, k := range found {
			got = append(got, string(k))
		}
		wrong := false
		if len(n.Kinds) == 0 {
			g.cleans++
			if len(got) > 0 {
				g.refused++
				wrong = true
				for _, k := range got {
					g.perFalse[k]++
				}
				g.failures = append(g.failures, fmt.Sprintf("FALSE REFUSAL %s [%s] got %v: %q", n.ID, n.Class, got, n.Body))
			}
		} else {
			g.positives++
			if len(got) > 0 {
				g.caught++
			} else {
				wrong = true
				g.failures = append(g.failures, fmt.Sprintf("MISSED %s [%s] want %v: title=%q body=%q tags=%q", n.ID, n.Class, n.Kinds, n.Title, n.Body, n.Tags))
			}
			for _, k := range n.Kinds {
				c := g.perKind[k]
				c[1]++
				if len(got) > 0 {
					c[0]++
				}
				g.perKind[k] = c
			}
		}
		c := g.perClass[n.Class]
		c[1]++
		if wrong {
			c[0]++
		}
		g.perClass[n.Class] = c
	}
	return g
}

func (g gateFigures) report(w io.Writer, name string) {
	fmt.Fprintf(w, "personal-data gate on %s (%d notes: %d with personal data, %d clean)\n", name, g.positives+g.cleans, g.positives, g.cleans)
	fmt.Fprintf(w, "overall: recall %.2f%% (%d/%d refused), false refusals %.2f%% (%d/%d clean notes refused)\n",
		100*g.recall(), g.caught, g.positives, 100*g.falseRate(), g.refused, g.cleans)
	for _, k := range slices.Sorted(mapKeys(g.perKind)) {
		c := g.perKind[k]
		fmt.Fprintf(w, "  recall %-8s %6.2f%% (%d/%d)\n", k, 100*float64(c[0])/float64(c[1]), c[0], c[1])
	}
	for _, k := range slices.Sorted(mapKeys(g.perFalse)) {
		fmt.Fprintf(w, "  false refusals as %-8s %6.2f%% (%d/%d)\n", k, 100*float64(g.perFalse[k])/float64(g.cleans), g.perFalse[k], g.cleans)
	}
	fmt.Fprintln(w, "by class (wrong/total):")
	for _, c := range slices.Sorted(mapKeys(g.perClass)) {
		fmt.Fprintf(w, "  %-22s %d/%d\n", c, g.perClass[c][0], g.perClass[c][1])
	}
	fmt.Fprintf(w, "failing cases: %d\n", len(g.failures))
	for _, f := range g.failures {
		fmt.Fprintln(w, "  "+f)
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestGateCorpus pins the gate's recall and false-refusal rate on the
// labelled corpus (issue 17 §1). With GATE_REPORT=1 (make gate-report) it
// prints the figures per kind and the failing cases.
func TestGateCorpus(t *testing.T) {
	var notes []corpusNote
	for _, name := range corpusFiles {
		set := loadCorpus(t, name)
		require.NotEmpty(t, set, name)
		if os.Getenv("GATE_REPORT") != "" {
			runCorpus(set).report(os.Stdout, name)
			fmt.Println()
		}
		notes = append(notes, set...)
	}
	require.Greater(t, len(notes), 400)
	langs := map[string]int{}
	for _, n := range notes {
		langs[n.Lang]++
	}
	require.Positive(t, langs["en"])
	require.Positive(t, langs["pt"])
	g := runCorpus(notes)
	require.Positive(t, g.positives)
	require.Positive(t, g.cleans)
	if os.Getenv("GATE_REPORT") != "" {
		g.report(os.Stdout, "all sets")
	}
	require.GreaterOrEqual(t, g.recall(), pinnedRecall, "recall fell: run make gate-report")
	require.LessOrEqual(t, g.falseRate(), pinnedFalseRefusals, "false refusals rose: run make gate-report")
}
