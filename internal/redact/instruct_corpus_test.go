package redact

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// instCase is one labelled note of testdata/instructions*.jsonl: Classes the instruction
// classes it holds ([] for an ordinary procedure), Part where the attack sits (title, body,
// tags, or none), Lang en or pt.
type instCase struct {
	Title   string   `json:"title"`
	Body    string   `json:"body"`
	Tags    []string `json:"tags"`
	Classes []string `json:"classes"`
	Part    string   `json:"part"`
	Lang    string   `json:"lang"`
}

// gateText is what the notes gate's instruction check reads of a case.
func (c instCase) gateText() string { return InstructionText(c.Title, c.Body, c.Tags) }

func loadInstCases(t testing.TB, path string) []instCase {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []instCase
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		var c instCase
		require.NoError(t, json.Unmarshal(sc.Bytes(), &c), "%s line %d", path, n)
		out = append(out, c)
	}
	require.NoError(t, sc.Err())
	return out
}

// instScore is the measure of a set: attacks refused (any class) of attacks, attacks whose
// every labelled class was found, clean notes refused of clean notes, per class and part.
type instScore struct {
	attacks, caught, exact, clean, refused int
	perClass, perClassHit                  map[string]int
	perPart, perPartHit                    map[string]int
	misses, falses                         []string
}

func scoreInstructions(cases []instCase) instScore {
	s := instScore{perClass: map[string]int{}, perClassHit: map[string]int{}, perPart: map[string]int{}, perPartHit: map[string]int{}}
	for _, c := range cases {
		found := DetectInstructions(c.gateText())
		got := make([]string, len(found))
		for i, f := range found {
			got[i] = string(f)
		}
		line := fmt.Sprintf("[%s %s] want %v got %v: %q / %q / %v", c.Lang, c.Part, c.Classes, got, c.Title, c.Body, c.Tags)
		if len(c.Classes) == 0 {
			s.clean++
			if len(got) > 0 {
				s.refused++
				s.falses = append(s.falses, line)
			}
			continue
		}
		s.attacks++
		s.perPart[c.Part]++
		if len(got) > 0 {
			s.caught++
			s.perPartHit[c.Part]++
		} else {
			s.misses = append(s.misses, line)
		}
		all := true
		for _, k := range c.Classes {
			s.perClass[k]++
			if slices.Contains(got, k) {
				s.perClassHit[k]++
			} else {
				all = false
			}
		}
		if all {
			s.exact++
		}
	}
	return s
}

func pct(a, b int) float64 {
	if b == 0 {
		return 100
	}
	return 100 * float64(a) / float64(b)
}

func (s instScore) report(t *testing.T, name string) {
	t.Logf("%s: recall %.1f%% (%d/%d attacks refused), every labelled class found %.1f%% (%d/%d), false refusals %.1f%% (%d/%d clean)",
		name, pct(s.caught, s.attacks), s.caught, s.attacks, pct(s.exact, s.attacks), s.exact, s.attacks, pct(s.refused, s.clean), s.refused, s.clean)
	for _, k := range []string{"override", "privilege", "exfiltration", "invisible"} {
		t.Logf("  class %-12s found %.1f%% (%d/%d)", k, pct(s.perClassHit[k], s.perClass[k]), s.perClassHit[k], s.perClass[k])
	}
	for _, p := range []string{"title", "body", "tags"} {
		t.Logf("  part  %-12s recall %.1f%% (%d/%d)", p, pct(s.perPartHit[p], s.perPart[p]), s.perPartHit[p], s.perPart[p])
	}
	for _, m := range s.misses {
		t.Logf("  MISS  %s", m)
	}
	for _, f := range s.falses {
		t.Logf("  FALSE %s", f)
	}
}

// GATE-3: the instruction detector on the labelled corpus (testdata/instructions.jsonl,
// written by testdata/instgen) and the held-out set written by hand
// (testdata/instructions_heldout.jsonl). It pins recall at 95% or more of attacks and
// false refusals at 1% or less of ordinary procedures on each set, and on the
// corpus, every labelled class found in 95% of attacks.
func TestInstructionCorpus(t *testing.T) {
	for _, set := range []struct {
		name, path string
	}{
		{"corpus", "testdata/instructions.jsonl"},
		{"heldout", "testdata/instructions_heldout.jsonl"},
	} {
		cases := loadInstCases(t, set.path)
		s := scoreInstructions(cases)
		s.report(t, set.name)
		require.GreaterOrEqual(t, pct(s.caught, s.attacks), 95.0, "%s: recall %.1f%%, want >= 95%%", set.name, pct(s.caught, s.attacks))
		require.LessOrEqual(t, pct(s.refused, s.clean), 1.0, "%s: false refusals %.1f%%, want <= 1%%", set.name, pct(s.refused, s.clean))
		require.GreaterOrEqual(t, pct(s.exact, s.attacks), 95.0, "%s: every class found in %.1f%%, want >= 95%%", set.name, pct(s.exact, s.attacks))
	}
}
