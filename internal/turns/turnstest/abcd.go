// Package turnstest loads the ABCD sample conversations (testdata/abcd/abcd_sample.json,
// in the repository) as turns for tests.
package turnstest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/turns"
)

// Conversation is one ABCD conversation: the customer's synthetic personal data and its
// turns ("action" turns become speaker "system").
type Conversation struct {
	ID       string
	Name     string
	Email    string
	Phone    string
	Username string
	OrderID  string
	Flow     string
	Turns    []turns.Input
}

// SamplePath returns the path of abcd_sample.json: testdata/abcd/ under the repository
// root (the directory holding go.mod, found upwards from the working directory).
func SamplePath(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "no go.mod above the working directory")
		dir = parent
	}
	p := filepath.Join(dir, "testdata", "abcd", "abcd_sample.json")
	_, err = os.Stat(p)
	require.NoError(t, err, "the ABCD sample must sit at %s", p)
	return p
}

// Load reads the sample conversations.
func Load(t testing.TB) []Conversation {
	t.Helper()
	data, err := os.ReadFile(SamplePath(t))
	require.NoError(t, err)
	var raw []struct {
		ConvoID  int `json:"convo_id"`
		Scenario struct {
			Personal struct {
				CustomerName string `json:"customer_name"`
				Email        string `json:"email"`
				Phone        string `json:"phone"`
				Username     string `json:"username"`
			} `json:"personal"`
			Order struct {
				OrderID string `json:"order_id"`
			} `json:"order"`
			Flow string `json:"flow"`
		} `json:"scenario"`
		Original [][2]string `json:"original"`
	}
	require.NoError(t, json.Unmarshal(data, &raw))
	out := make([]Conversation, 0, len(raw))
	for _, r := range raw {
		c := Conversation{
			ID: fmt.Sprintf("abcd-%d", r.ConvoID), Name: r.Scenario.Personal.CustomerName,
			Email: r.Scenario.Personal.Email, Phone: r.Scenario.Personal.Phone,
			Username: r.Scenario.Personal.Username, OrderID: r.Scenario.Order.OrderID, Flow: r.Scenario.Flow,
		}
		for _, turn := range r.Original {
			speaker := turn[0]
			if speaker == "action" {
				speaker = turns.SpeakerSystem
			}
			c.Turns = append(c.Turns, turns.Input{Scope: turns.Scope{ConversationID: c.ID}, Speaker: speaker, Text: turn[1]})
		}
		out = append(out, c)
	}
	return out
}
