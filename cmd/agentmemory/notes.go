package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/agentmemory/agentmemory/internal/config"
)

func notesCmd(cl config.Client, stdout io.Writer) *cobra.Command {
	notes := &cobra.Command{Use: "notes", Short: "Agent-memory notes"}
	var opt importOptions
	imp := &cobra.Command{
		Use:   "import",
		Short: "Load the ABCD guidelines (55 subflows) as procedure notes through the REST API",
		Long: `Load every subflow of an ABCD guidelines.json as a "procedure" note, through the API
(POST /v1/agent-memory/notes), so each passes the personal-data gate, the limits and the
receipts like any other write.

Use a person key with role integration and name the agent with --source-id: people's writes
are not held to an agent's 20 notes per hour (AM-7). An agent key works too, but stops at
its 21st note of the hour with 429.

Each note: title "<Flow>: <Subflow>"; tags the flow's and subflow's slugs; body the
subflow's instructions, then its steps numbered, each "[Button] text" with its sub-points.
A body over 2,000 characters is split at step boundaries into notes titled
"... (part i/n)"; text is never truncated. Every note carries an Idempotency-Key derived from
flow, subflow and part, so a rerun of the same key writes nothing twice.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opt.key == "" {
				opt.key = cl.Key
			}
			if opt.key == "" {
				return fmt.Errorf("notes import: --key (or AGENTMEMORY_KEY) is required")
			}
			sum, err := importGuidelines(cmd.Context(), http.DefaultClient, opt)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "imported %d notes from %d subflows (%d split into parts, %d already there)\n",
				sum.Notes, sum.Subflows, sum.Split, sum.Replayed)
			return nil
		},
	}
	imp.Flags().StringVar(&opt.path, "guidelines", "testdata/abcd/guidelines.json", "path of guidelines.json")
	imp.Flags().StringVar(&opt.url, "url", "http://127.0.0.1:8080", "base URL of the agentmemory API")
	imp.Flags().StringVar(&opt.key, "key", "", "API key: person with integration (then --source-id) or agent with agent_memory:write")
	imp.Flags().StringVar(&opt.sourceID, "source-id", "", "the agent the notes belong to (person keys)")
	imp.Flags().StringVar(&opt.visibility, "visibility", "vendor", "source, vendor or space")
	notes.AddCommand(imp)
	return notes
}

type importOptions struct {
	path, url, key, sourceID, visibility string
}

type importSummary struct {
	Subflows, Notes, Split, Replayed int
	IDs                              []string
}

// guideline shapes of guidelines.json.
type guidelineFlow struct {
	Description string                      `json:"description"`
	Subflows    map[string]guidelineSubflow `json:"subflows"`
}

type guidelineSubflow struct {
	Actions []struct {
		Type    string   `json:"type"`
		Button  string   `json:"button"`
		Text    string   `json:"text"`
		Subtext []string `json:"subtext"`
	} `json:"actions"`
	Instructions []string `json:"instructions"`
}

// guidelineNote is one note to write.
type guidelineNote struct {
	Title, Body, IdemKey string
	Tags                 []string
}

const maxNoteBody = 2000

var slugRe = regexp.MustCompile(`[^a-z0-9]+`)

func slug(s string) string {
	return strings.Trim(slugRe.ReplaceAllString(strings.ToLower(s), "-"), "-")
}

// guidelineNotes renders the guidelines as notes, in a stable order (flows, then subflows, by
// name), splitting a body over 2,000 code points at step boundaries.
func guidelineNotes(data []byte) ([]guidelineNote, int, error) {
	var flows map[string]guidelineFlow
	if err := json.Unmarshal(data, &flows); err != nil {
		return nil, 0, fmt.Errorf("guidelines: %w", err)
	}
	var out []guidelineNote
	subflows := 0
	for _, fname := range sortedKeys(flows) {
		f := flows[fname]
		for _, sname := range sortedKeys(f.Subflows) {
			sf := f.Subflows[sname]
			subflows++
			var intro string
			if len(sf.Instructions) > 0 {
				intro = strings.Join(cleanAll(sf.Instructions), " ") + "\n"
			}
			var steps []string
			for i, a := range sf.Actions {
				var b strings.Builder
				fmt.Fprintf(&b, "%d. [%s] %s", i+1, clean(a.Button), clean(a.Text))
				for _, st := range a.Subtext {
					fmt.Fprintf(&b, "\n   - %s", clean(st))
				}
				steps = append(steps, b.String())
			}
			parts := splitSteps(intro, steps)
			title := fname + ": " + sname
			tags := []string{slug(fname), slug(sname)}
			for i, body := range parts {
				t := title
				if len(parts) > 1 {
					t = fmt.Sprintf("%s (part %d/%d)", title, i+1, len(parts))
				}
				out = append(out, guidelineNote{Title: t, Body: body, Tags: tags,
					IdemKey: fmt.Sprintf("abcd-guidelines:%s:%s:%d", tags[0], tags[1], i+1)})
			}
		}
	}
	return out, subflows, nil
}

// splitSteps packs intro and steps into bodies of at most 2,000 code points, breaking only
// between steps (a single step over the limit is split between its lines).
func splitSteps(intro string, steps []string) []string {
	var parts []string
	cur := intro
	for _, s := range steps {
		add := s + "\n"
		if cur != "" && utf8.RuneCountInString(cur+add) > maxNoteBody {
			parts = append(parts, strings.TrimRight(cur, "\n"))
			cur = ""
		}
		for utf8.RuneCountInString(add) > maxNoteBody { // one step alone over the limit
			lines := strings.SplitAfter(add, "\n")
			var head string
			for len(lines) > 0 && utf8.RuneCountInString(head+lines[0]) <= maxNoteBody {
				head, lines = head+lines[0], lines[1:]
			}
			parts = append(parts, strings.TrimRight(head, "\n"))
			add = strings.Join(lines, "")
		}
		cur += add
	}
	if strings.TrimSpace(cur) != "" {
		parts = append(parts, strings.TrimRight(cur, "\n"))
	}
	return parts
}

func clean(s string) string { return strings.Join(strings.Fields(s), " ") }

func cleanAll(list []string) []string {
	out := make([]string, 0, len(list))
	for _, s := range list {
		out = append(out, clean(s))
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// importGuidelines writes every guideline note through the API. It stops at the first
// refusal, naming the note and the error code (never the text).
func importGuidelines(ctx context.Context, hc *http.Client, opt importOptions) (importSummary, error) {
	data, err := os.ReadFile(opt.path)
	if err != nil {
		return importSummary{}, err
	}
	list, subflows, err := guidelineNotes(data)
	if err != nil {
		return importSummary{}, err
	}
	sum := importSummary{Subflows: subflows}
	split := map[string]bool{}
	for _, n := range list {
		a, err := postGuideline(ctx, hc, opt, n)
		if err != nil {
			return sum, err
		}
		switch a.status {
		case http.StatusCreated, http.StatusAccepted:
		case http.StatusOK: // duplicate_of: the same note is already active (issue 17 §2)
			sum.Replayed++
		case http.StatusTooManyRequests:
			return sum, fmt.Errorf("notes import: %q: rate limited (an agent writes 20 notes an hour); retry after %s s, or use a person key with integration and --source-id",
				n.Title, a.header.Get("Retry-After"))
		default:
			return sum, fmt.Errorf("notes import: %q: %d %s %v", n.Title, a.status, a.Error.Code, a.Error.Kinds)
		}
		if a.header.Get("Idempotent-Replayed") == "true" {
			sum.Replayed++
		}
		sum.Notes++
		sum.IDs = append(sum.IDs, a.ID+a.ProposalID)
		if strings.Contains(n.Title, "(part ") {
			split[n.IdemKey[:strings.LastIndex(n.IdemKey, ":")]] = true
		}
	}
	sum.Split = len(split)
	return sum, nil
}

// guidelineAnswer is the API's answer to one guideline note: its status and headers, and the
// note's id or proposal id, or the error's code and kinds (empty when the body is not JSON).
type guidelineAnswer struct {
	status     int
	header     http.Header
	ID         string `json:"id"`
	ProposalID string `json:"proposal_id"`
	Error      struct {
		Code  string   `json:"code"`
		Kinds []string `json:"kinds"`
	} `json:"error"`
}

// postGuideline writes the note n as a procedure (POST /v1/agent-memory/notes, with n's
// idempotency key and opt's visibility and source id), within 30 seconds, and returns the
// answer. Errors: the request's (the API's refusals are answers).
func postGuideline(ctx context.Context, hc *http.Client, opt importOptions, n guidelineNote) (guidelineAnswer, error) {
	body := map[string]any{"kind": "procedure", "title": n.Title, "body": n.Body, "tags": n.Tags, "visibility": opt.visibility}
	if opt.sourceID != "" {
		body["source_id"] = opt.sourceID
	}
	raw, _ := json.Marshal(body) // cannot fail: strings and string lists only
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", strings.TrimRight(opt.url, "/")+"/v1/agent-memory/notes", bytes.NewReader(raw))
	if err != nil {
		return guidelineAnswer{}, err
	}
	req.Header.Set("Authorization", "Bearer "+opt.key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", n.IdemKey)
	resp, err := hc.Do(req)
	if err != nil {
		return guidelineAnswer{}, fmt.Errorf("notes import: %w", err)
	}
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20)) // a cut body leaves the answer partly empty: the status decides
	resp.Body.Close()
	a := guidelineAnswer{status: resp.StatusCode, header: resp.Header}
	_ = json.Unmarshal(answer, &a) // a body that is not an error object leaves a empty: the status decides
	return a, nil
}
