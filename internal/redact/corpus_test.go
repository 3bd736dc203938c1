package redact

// The labelled corpus of the gate (GATE-1, AM-6; issues 17, 26).
//
// Every file in corpusSets is JSON lines, one labelled note per line:
//
//	{"id":"en-tags-0001", "lang":"en|pt|es", "class":"tags-provider",
//	 "kinds":["email"], "part":"tags",
//	 "title":"...", "body":"...", "tags":["ana","gmail.com"]}
//
//   - kinds: the kinds the note carries ("email", "phone", "cpf", "cnpj",
//     "name", "instruction", ...); empty or absent means a clean note that
//     must pass.
//   - part: where the data sits: "title", "body", "tags", or "fields" (a value
//     split across parts, "Customer ana@" + "example.com"). For a clean note,
//     the part holding the look-alike the case tests (an id in the body, a
//     provider word in the tags), or "none". Required.
//   - id, lang and class name the case, its language and its template family
//     (failures group by class).
//
// A note is refused when any detector of corpusDetectors finds a kind in it.
// Recall is the share of notes with data that are refused (per kind: refused
// with that kind); false refusals the share of clean notes refused. make
// gate-report (GATE_REPORT=1) prints the figures per set, per kind and per
// part, with every failing case. TestGateCorpus pins them: each set's overall
// figures (corpusSets), each kind's (kindTargets) and each part's
// (partTargets). To add a corpus, add its file to corpusSets with its
// targets; to add a detector, append it to corpusDetectors.

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

// corpusNote is one labelled note of a corpus file (see the top of this file).
type corpusNote struct {
	ID    string   `json:"id"`
	Lang  string   `json:"lang"`
	Class string   `json:"class"`
	Kinds []string `json:"kinds"`
	Part  string   `json:"part"`
	Title string   `json:"title"`
	Body  string   `json:"body"`
	Tags  []string `json:"tags"`
}

// target is a pinned figure: recall at least recall, false refusals at most
// falseRefusals (shares, 0-1).
type target struct{ recall, falseRefusals float64 }

// corpusSet is one labelled file and the overall figures pinned on it.
type corpusSet struct {
	file string
	target
}

// corpusSets are the labelled sets: corpus.jsonl and tags.jsonl are
// generated (testdata/gen), heldout.jsonl is written by hand, in other words
// and shapes than the generator's templates. Targets of issue 17: recall >=
// 0.995, false refusals <= 0.005; the pins are the figures reached.
var corpusSets = []corpusSet{
	{"testdata/corpus.jsonl", target{1, 0}},
	{"testdata/heldout.jsonl", target{1, 0}},
	{"testdata/tags.jsonl", target{1, 0}},
}

// kindTargets pin recall (notes carrying the kind refused with it) and false
// refusals (clean notes refused with the kind, over all clean notes) per kind.
// Every kind listed is reported, with "no cases" until a set labels it; a
// kind with no labelled case is not pinned. Targets of issue 26: name recall
// >= 97% and false refusals <= 1%, instruction >= 95% and <= 1%.
var kindTargets = map[string]target{
	"email": {1, 0}, "phone": {1, 0}, "cpf": {1, 0}, "cnpj": {1, 0},
	"name": {0.97, 0.01}, "instruction": {0.95, 0.01},
}

// partTargets pin recall and false refusals per part of the note (the part
// the cases label). Tags: no false refusal (issue 26 §1).
var partTargets = map[string]target{
	"title": {1, 0}, "body": {1, 0}, "tags": {1, 0}, "fields": {1, 0}, "none": {1, 0},
}

// corpusParts are the values of corpusNote.Part, in report order.
var corpusParts = []string{"title", "body", "tags", "fields", "none"}

// corpusDetectors are the gate's detectors the corpus runs; each returns the
// kinds it finds in a note (nil: none).
var corpusDetectors = []func(corpusNote) []string{detectPersonal}

// detectPersonal is the personal-data gate on what the notes gate reads of n
// (NoteText, as notes.GateText without evidence).
func detectPersonal(n corpusNote) []string {
	var out []string
	for _, k := range Detect(NoteText(n.Title, n.Body, n.Tags), Options{}) {
		out = append(out, string(k))
	}
	return out
}

// detect runs every detector on n: the sorted, de-duplicated kinds found.
func (n corpusNote) detect() []string {
	var out []string
	for _, d := range corpusDetectors {
		for _, k := range d(n) {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}

// foundIn names the parts whose text alone makes a detector find something
// ("title", "body", "tags"), or "fields" when only the parts read together do.
func (n corpusNote) foundIn() string {
	var in []string
	for _, p := range [...]struct {
		name string
		n    corpusNote
	}{{"title", corpusNote{Title: n.Title}}, {"body", corpusNote{Body: n.Body}}, {"tags", corpusNote{Tags: n.Tags}}} {
		if len(p.n.detect()) > 0 {
			in = append(in, p.name)
		}
	}
	if len(in) == 0 {
		return "fields"
	}
	return strings.Join(in, "+")
}

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
		require.Contains(t, corpusParts, n.Part, "%s: part must be one of %v", n.ID, corpusParts)
		if len(n.Kinds) > 0 {
			require.NotEqual(t, "none", n.Part, "%s: a note with data names its part", n.ID)
		}
		out = append(out, n)
	}
	require.NoError(t, sc.Err())
	return out
}

// ratio is a count of hits out of a total.
type ratio struct{ hit, total int }

func (r ratio) share() float64 {
	if r.total == 0 {
		return 0
	}
	return float64(r.hit) / float64(r.total)
}

func (r ratio) String() string {
	if r.total == 0 {
		return fmt.Sprintf("%-16s", "no cases")
	}
	return fmt.Sprintf("%6.2f%% %-8s", 100*r.share(), fmt.Sprintf("%d/%d", r.hit, r.total))
}

// gateFigures is the outcome of the gate over a set of notes.
type gateFigures struct {
	recall, falseRef ratio               // notes with data refused; clean notes refused
	kindRecall       map[string]ratio    // kind -> notes carrying it refused with it
	kindFalse        map[string]int      // kind -> clean notes refused with it
	cell             map[[2]string]ratio // {kind, part} -> recall
	partRecall       map[string]ratio    // part -> notes with data there refused
	partFalse        map[string]ratio    // part -> clean notes testing it refused
	perClass         map[string]ratio    // class -> {wrong, total}
	failures         []string
}

func runCorpus(notes []corpusNote) gateFigures {
	g := gateFigures{kindRecall: map[string]ratio{}, kindFalse: map[string]int{}, cell: map[[2]string]ratio{},
		partRecall: map[string]ratio{}, partFalse: map[string]ratio{}, perClass: map[string]ratio{}}
	for _, n := range notes {
		got := n.detect()
		var wrong bool
		if len(n.Kinds) == 0 {
			wrong = g.addClean(n, got)
		} else {
			wrong = g.addPositive(n, got)
		}
		c := g.perClass[n.Class]
		c.total++
		if wrong {
			c.hit++
		}
		g.perClass[n.Class] = c
	}
	return g
}

// count adds one case to m[k], a hit when hit.
func count[K comparable](m map[K]ratio, k K, hit bool) {
	r := m[k]
	r.total++
	if hit {
		r.hit++
	}
	m[k] = r
}

// addClean counts a clean note the gate found got in; it reports a false refusal.
func (g *gateFigures) addClean(n corpusNote, got []string) bool {
	refused := len(got) > 0
	g.falseRef.total++
	count(g.partFalse, n.Part, refused)
	if !refused {
		return false
	}
	g.falseRef.hit++
	for _, k := range got {
		g.kindFalse[k]++
	}
	g.failures = append(g.failures, fmt.Sprintf("FALSE REFUSAL %s [%s] part=%s got %v (found in %s): title=%q body=%q tags=%q",
		n.ID, n.Class, n.Part, got, n.foundIn(), n.Title, n.Body, n.Tags))
	return true
}

// addPositive counts a note with data the gate found got in; it reports a miss.
func (g *gateFigures) addPositive(n corpusNote, got []string) bool {
	refused := len(got) > 0
	g.recall.total++
	count(g.partRecall, n.Part, refused)
	for _, k := range n.Kinds {
		count(g.kindRecall, k, slices.Contains(got, k))
		count(g.cell, [2]string{k, n.Part}, slices.Contains(got, k))
	}
	if refused {
		g.recall.hit++
		if missing := slices.DeleteFunc(slices.Clone(n.Kinds), func(k string) bool { return slices.Contains(got, k) }); len(missing) > 0 {
			g.failures = append(g.failures, fmt.Sprintf("REFUSED AS ANOTHER KIND %s [%s] part=%s want %v got %v", n.ID, n.Class, n.Part, n.Kinds, got))
		}
		return false
	}
	g.failures = append(g.failures, fmt.Sprintf("MISSED %s [%s] part=%s want %v: title=%q body=%q tags=%q",
		n.ID, n.Class, n.Part, n.Kinds, n.Title, n.Body, n.Tags))
	return true
}

// reportKinds lists the kinds to report: the targeted ones, then any other
// kind labelled or found.
func (g gateFigures) reportKinds() []string {
	ks := slices.Sorted(mapKeys(kindTargets))
	for _, k := range slices.Sorted(mapKeys(g.kindRecall)) {
		if !slices.Contains(ks, k) {
			ks = append(ks, k)
		}
	}
	for _, k := range slices.Sorted(mapKeys(g.kindFalse)) {
		if !slices.Contains(ks, k) {
			ks = append(ks, k)
		}
	}
	return ks
}

func (g gateFigures) report(w io.Writer, name string) {
	fmt.Fprintf(w, "personal-data gate on %s (%d notes: %d with data, %d clean)\n",
		name, g.recall.total+g.falseRef.total, g.recall.total, g.falseRef.total)
	fmt.Fprintf(w, "overall: recall %s  false refusals %s\n", g.recall, g.falseRef)
	fmt.Fprintf(w, "by kind: recall (refused with the kind) | false refusals (clean notes refused with it / all clean)\n")
	for _, k := range g.reportKinds() {
		fmt.Fprintf(w, "  %-12s recall %s | false %s\n", k, g.kindRecall[k], ratio{g.kindFalse[k], g.falseRef.total})
	}
	fmt.Fprintf(w, "by part: recall (notes with data there refused) | false refusals (clean notes testing it refused)\n")
	for _, p := range corpusParts {
		fmt.Fprintf(w, "  %-12s recall %s | false %s\n", p, g.partRecall[p], g.partFalse[p])
	}
	fmt.Fprintf(w, "recall by kind and part:\n  %-12s", "")
	for _, p := range corpusParts[:4] {
		fmt.Fprintf(w, " %-16s", p)
	}
	fmt.Fprintln(w)
	for _, k := range g.reportKinds() {
		fmt.Fprintf(w, "  %-12s", k)
		for _, p := range corpusParts[:4] {
			fmt.Fprintf(w, " %s", g.cell[[2]string{k, p}])
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "by class (wrong/total):")
	for _, c := range slices.Sorted(mapKeys(g.perClass)) {
		fmt.Fprintf(w, "  %-26s %d/%d\n", c, g.perClass[c].hit, g.perClass[c].total)
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

// requireTarget fails when r's recall (positives) or false-refusal rate
// (cleans) is worse than tg; a ratio with no cases is not checked.
func requireTarget(t *testing.T, what string, recall, falseRef ratio, tg target) {
	t.Helper()
	if recall.total > 0 {
		require.GreaterOrEqual(t, recall.share(), tg.recall, "%s: recall fell to %s: run make gate-report", what, recall)
	}
	if falseRef.total > 0 {
		require.LessOrEqual(t, falseRef.share(), tg.falseRefusals, "%s: false refusals rose to %s: run make gate-report", what, falseRef)
	}
}

// TestGateCorpus pins the gate's recall and false refusals on the labelled
// corpus (issues 17 §1, 26): per set, per kind and per part. With
// GATE_REPORT=1 (make gate-report) it prints the figures and failing cases.
func TestGateCorpus(t *testing.T) {
	report := os.Getenv("GATE_REPORT") != ""
	var notes []corpusNote
	for _, set := range corpusSets {
		ns := loadCorpus(t, set.file)
		require.NotEmpty(t, ns, set.file)
		g := runCorpus(ns)
		if report {
			g.report(os.Stdout, set.file)
			fmt.Println()
		}
		requireTarget(t, set.file, g.recall, g.falseRef, set.target)
		notes = append(notes, ns...)
	}
	require.Greater(t, len(notes), 1000)
	langs := map[string]int{}
	for _, n := range notes {
		langs[n.Lang]++
	}
	require.Positive(t, langs["en"])
	require.Positive(t, langs["pt"])
	g := runCorpus(notes)
	if report {
		g.report(os.Stdout, "all sets")
	}
	require.Positive(t, g.recall.total)
	require.Positive(t, g.falseRef.total)
	for _, k := range slices.Sorted(mapKeys(kindTargets)) {
		requireTarget(t, "kind "+k, g.kindRecall[k], ratio{g.kindFalse[k], g.falseRef.total}, kindTargets[k])
	}
	for _, p := range corpusParts {
		requireTarget(t, "part "+p, g.partRecall[p], g.partFalse[p], partTargets[p])
	}
	require.Positive(t, g.partFalse["tags"].total, "tags.jsonl holds clean tag cases")
	require.Positive(t, g.partRecall["tags"].total, "tags.jsonl holds split values in tags")
}
