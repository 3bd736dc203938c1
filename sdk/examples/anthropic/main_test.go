package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/agentmemory/agentmemory/sdk"
	"github.com/agentmemory/agentmemory/sdk/internal/devserver"
)

func TestMain(m *testing.M) { os.Exit(devserver.Main(m)) }

// messagesRequest is the part of a Messages request the test reads.
type messagesRequest struct {
	System []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"system"`
	Messages []struct {
		Role    string `json:"role"`
		Content []struct {
			Type      string `json:"type"`
			ToolUseID string `json:"tool_use_id"`
			IsError   bool   `json:"is_error"`
			Content   []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

// scriptedModel is a stand-in of the Messages API (no network): the first answer asks for
// remember with a phone number, the second for a clean remember, the third answers in text.
func scriptedModel(t *testing.T) (*httptest.Server, func() []messagesRequest) {
	var mu sync.Mutex
	var got []messagesRequest
	answers := []string{
		`[{"type":"tool_use","id":"toolu_1","name":"remember","input":{"kind":"pitfall","title":"Call back","body":"ligar para suporte(11)91234-5678"}}]`,
		`[{"type":"tool_use","id":"toolu_2","name":"remember","input":{"kind":"pitfall","title":"Card refunds take days","body":"Say five business days; store credit is at once."}}]`,
		`[{"type":"text","text":"A card refund takes five business days."}]`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		var req messagesRequest
		if r.URL.Path != "/v1/messages" || json.Unmarshal(data, &req) != nil {
			t.Errorf("model got %s %s", r.URL.Path, data)
		}
		mu.Lock()
		got = append(got, req)
		n := min(len(got), len(answers))
		mu.Unlock()
		stop := "tool_use"
		if n == len(answers) {
			stop = "end_turn"
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","stop_reason":"`+stop+`",`+
			`"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1},"content":`+answers[n-1]+`}`)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []messagesRequest { mu.Lock(); defer mu.Unlock(); return got }
}

// TestRun runs the example's core against the real binary and the scripted model: the block
// is in the system prompt after the instructions, the refused remember went back to the model
// as an is_error tool result with the code (the run went on), and the clean one stored a note.
func TestRun(t *testing.T) {
	srv := devserver.Shared(t)
	key := srv.Key(t, "example-anthropic-bot", devserver.AllScopes...)
	am, err := sdk.New(sdk.Options{BaseURL: srv.URL, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := am.Remember(ctx, sdk.Note{Kind: "procedure", Title: "Offer store credit first", Body: "Store credit settles at once."}, ""); err != nil {
		t.Fatal(err)
	}
	model, requests := scriptedModel(t)
	ac := anthropic.NewClient(option.WithBaseURL(model.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
	answer, err := run(ctx, am, ac, "claude-test", "Can I get a refund to my card?")
	if err != nil {
		t.Fatal(err)
	}
	if answer != "A card refund takes five business days." {
		t.Fatalf("answer %q", answer)
	}
	reqs := requests()
	if len(reqs) != 3 || len(reqs[0].System) != 1 || len(reqs[0].Tools) != 3 {
		t.Fatalf("model requests %+v", reqs)
	}
	if sys := reqs[0].System[0].Text; !strings.HasPrefix(sys, "You are the store's support assistant.\n\n<agent_notes>") || !strings.Contains(sys, "Offer store credit first") {
		t.Fatalf("system %q", sys)
	}
	refusal := reqs[1].Messages[len(reqs[1].Messages)-1].Content[0]
	if refusal.Type != "tool_result" || refusal.ToolUseID != "toolu_1" || !refusal.IsError || len(refusal.Content) != 1 ||
		!strings.Contains(refusal.Content[0].Text, "personal_data_in_agent_memory") || strings.Contains(refusal.Content[0].Text, "91234") {
		t.Fatalf("refusal %+v", refusal)
	}
	stored := reqs[2].Messages[len(reqs[2].Messages)-1].Content[0]
	if stored.ToolUseID != "toolu_2" || stored.IsError || !strings.Contains(stored.Content[0].Text, `"status":"stored"`) {
		t.Fatalf("stored %+v", stored)
	}
	found, err := am.Search(ctx, "card refunds", nil, 5)
	if err != nil || len(found) != 1 || found[0].Title != "Card refunds take days" {
		t.Fatalf("the remembered note: %+v %v", found, err)
	}
}
