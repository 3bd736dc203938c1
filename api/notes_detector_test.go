package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/llm"
	"github.com/agentmemory/agentmemory/internal/llm/llmtest"
)

// AM-6: the gate's model layer is internal/llm's detector, reached through the real Ollama
// client over a fake server speaking Ollama's API: what it finds is refused (422 with its
// kinds), what it clears is stored, the local layer decides alone when it already refuses,
// and a detector that fails, answers badly or hangs makes the write fail retryably (503
// detector_unavailable with Retry-After), storing nothing.
func TestNoteGateOllamaDetector(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			model := llmtest.New(t, llmtest.Answer{Content: `{"kinds": []}`})
			det, err := llm.New(llm.Config{Host: model.URL, Model: "distiller", DetectorModel: "detector"})
			require.NoError(t, err)
			e := apptest.New(t, engine, func(d *api.Deps) {
				d.Notes.Detector = det
				d.Notes.DetectorTimeout = 300 * time.Millisecond
			})
			enableNotes(e, nil)
			bot := writer(e, "shop-bot", "acme")

			create(e, bot, note("Refunds", "Validate the order before a refund."))
			require.Equal(t, 1, model.Calls())
			req := model.Requests()[0]
			require.Equal(t, "detector", req.Model, "the detector model is asked")
			require.Contains(t, req.Messages[1].Content, "Validate the order before a refund.")

			model.Script(llmtest.Answer{Content: `{"kinds": ["name"]}`})
			r := e.Do("POST", notesPath, bot, note("Callers", "Crystal prefers a call back."))
			m := requireError(t, r, http.StatusUnprocessableEntity, "personal_data_in_agent_memory")
			require.Equal(t, []string{"name"}, strs(m["kinds"]))
			require.NotContains(t, string(r.Body), "Crystal")

			calls := model.Calls()
			r = e.Do("POST", notesPath, bot, note("Mail", "Write to ana@example.com."))
			requireError(t, r, http.StatusUnprocessableEntity, "personal_data_in_agent_memory")
			require.Equal(t, calls, model.Calls(), "the local layer refused alone; the model is not asked")

			for _, tc := range []struct {
				name   string
				answer llmtest.Answer
			}{
				{"server error", llmtest.Answer{Status: http.StatusInternalServerError}},
				{"bad answer", llmtest.Answer{Content: `{}`}},
				{"hangs", llmtest.Answer{Hang: true}},
			} {
				model.Script(tc.answer)
				r := e.Do("POST", notesPath, bot, note("Retry", "Ask for the order id first."))
				requireError(t, r, http.StatusServiceUnavailable, "detector_unavailable")
				require.Equal(t, "1", r.Header.Get("Retry-After"), "%s: Retry-After in whole seconds", tc.name)
			}
			require.Len(t, listIDs(e, bot, ""), 1, "nothing refused or unchecked was stored")
		})
	}
}
