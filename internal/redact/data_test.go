package redact

import (
	"encoding/json"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const abcdDir = "../../testdata/abcd/"

func readData(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(abcdDir + name)
	require.NoError(t, err, "the ABCD slices live in the repository (testdata/abcd): a missing file is an error, not a skip")
	return b
}

type guidelineAction struct {
	Text    string   `json:"text"`
	Subtext []string `json:"subtext"`
}

type guidelineFlow struct {
	Description string `json:"description"`
	Subflows    map[string]struct {
		Instructions []string          `json:"instructions"`
		Actions      []guidelineAction `json:"actions"`
	} `json:"subflows"`
}

// TestGuidelinesHaveNoPersonalData: the agents' procedures (real agent-memory
// notes of kind procedure) must all pass the gate.
func TestGuidelinesHaveNoPersonalData(t *testing.T) {
	var flows map[string]guidelineFlow
	require.NoError(t, json.Unmarshal(readData(t, "guidelines.json"), &flows))
	n := 0
	flowNames := make([]string, 0, len(flows))
	for f := range flows {
		flowNames = append(flowNames, f)
	}
	sort.Strings(flowNames)
	for _, f := range flowNames {
		for title, sub := range flows[f].Subflows {
			parts := []string{title}
			parts = append(parts, sub.Instructions...)
			for _, a := range sub.Actions {
				parts = append(parts, a.Text)
				parts = append(parts, a.Subtext...)
			}
			body := strings.Join(parts, "\n")
			n++
			t.Run(f+"/"+title, func(t *testing.T) {
				for _, region := range []string{"", "BR", "US"} {
					require.Nil(t, Detect(body, Options{DefaultRegion: region}), "region %q", region)
				}
			})
		}
	}
	require.Equal(t, 55, n)
}

type abcdConvo struct {
	ConvoID  int `json:"convo_id"`
	Scenario struct {
		Personal struct {
			Name     string `json:"customer_name"`
			Email    string `json:"email"`
			Phone    string `json:"phone"`
			Username string `json:"username"`
		} `json:"personal"`
	} `json:"scenario"`
	Original [][2]string `json:"original"`
}

func onlyDigits(s string) string { return digitString(digitsOf(s)) }

// TestABCDTurns: customer turns carrying the scenario's e-mail or phone are
// refused with the right kind, and no masked turn keeps them.
func TestABCDTurns(t *testing.T) {
	var convos []abcdConvo
	require.NoError(t, json.Unmarshal(readData(t, "abcd_sample.json"), &convos))
	require.Len(t, convos, 3)
	checked := 0
	for _, c := range convos {
		p := c.Scenario.Personal
		phoneDigits := onlyDigits(p.Phone)
		for i, turn := range c.Original {
			speaker, text := turn[0], turn[1]
			for _, region := range []string{"", "US"} {
				opt := Options{DefaultRegion: region}
				kinds := Detect(text, opt)
				if speaker == "customer" {
					if p.Email != "" && strings.Contains(text, p.Email) {
						require.Contains(t, kinds, KindEmail, "convo %d turn %d", c.ConvoID, i)
						checked++
					}
					if phoneDigits != "" && strings.Contains(onlyDigits(text), phoneDigits) {
						require.Contains(t, kinds, KindPhone, "convo %d turn %d", c.ConvoID, i)
						checked++
					}
				}
				masked, mkinds := Mask(text, opt)
				require.Equal(t, kinds, mkinds)
				if p.Email != "" {
					require.NotContains(t, masked, p.Email, "convo %d turn %d", c.ConvoID, i)
				}
				if phoneDigits != "" {
					require.NotContains(t, onlyDigits(masked), phoneDigits, "convo %d turn %d", c.ConvoID, i)
				}
			}
		}
	}
	require.Positive(t, checked)
}

// TestABCDKnownSubjects: with the scenario's profile known, its name and
// username in turns are masked as subjects.
func TestABCDKnownSubjects(t *testing.T) {
	var convos []abcdConvo
	require.NoError(t, json.Unmarshal(readData(t, "abcd_sample.json"), &convos))
	for _, c := range convos {
		p := c.Scenario.Personal
		k := NewKnownSubjects([]byte("k"))
		k.AddName(p.Name)
		if p.Username != "" {
			k.AddHandle("username:" + p.Username)
		}
		if p.Email != "" {
			k.AddHandle("email:" + p.Email)
		}
		if h, err := CanonicalHandle("phone:"+p.Phone, "US"); err == nil {
			k.AddHandle(h)
		}
		for i, turn := range c.Original {
			masked, kinds := Mask(turn[1], Options{DefaultRegion: "US", Known: k})
			low := strings.ToLower(masked)
			require.NotContains(t, low, p.Name, "convo %d turn %d", c.ConvoID, i)
			if p.Username != "" {
				require.NotContains(t, low, p.Username, "convo %d turn %d", c.ConvoID, i)
			}
			if strings.Contains(strings.ToLower(turn[1]), p.Name) {
				require.Contains(t, kinds, KindSubject)
			}
		}
	}
}
