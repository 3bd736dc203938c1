package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentmemory/agentmemory/sdk"
	"github.com/agentmemory/agentmemory/sdk/internal/devserver"
)

func TestMain(m *testing.M) { os.Exit(devserver.Main(m)) }

// chatRequest is the part of a Chat Completions request the test reads.
type chatRequest struct {
	Messages []struct {
		Role       string `json:"role"`
		Content    any    `json:"content"`
		ToolCallID string `json:"tool_call_id"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

// scriptedModel is a stand-in of the Chat Completions API (no network): the first answer calls
// remember, the second answers in text. It keeps the requests.
func scriptedModel(t *testing.T) (*httptest.Server, func() []chatRequest) {
	var mu sync.Mutex
	var got []chatRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		var req chatRequest
		if r.URL.Path != "/chat/completions" || json.Unmarshal(data, &req) != nil {
			t.Errorf("model got %s %s", r.URL.Path, data)
		}
		mu.Lock()
		got = append(got, req)
		n := len(got)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		message := `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"remember",` +
			`"arguments":"{\"kind\":\"pitfall\",\"title\":\"Card refunds take days\",\"body\":\"Say five business days; store credit is at once.\"}"}}]}`
		finish := "tool_calls"
		if n > 1 {
			message, finish = `{"role":"assistant","content":"A card refund takes five business days."}`, "stop"
		}
		_, _ = io.WriteString(w, `{"id":"chatcmpl-`+strconv.Itoa(n)+`","object":"chat.completion","created":1764750000,"model":"gpt-test",`+
			`"choices":[{"index":0,"finish_reason":"`+finish+`","message":`+message+`}]}`)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []chatRequest { mu.Lock(); defer mu.Unlock(); return got }
}

// TestRun runs the example's core against the real binary and the scripted model: the model
// received the block after the instructions in its system message and the three tools, and
// its remember call stored a note whose result it was given.
func TestRun(t *testing.T) {
	srv := devserver.Shared(t)
	key := srv.Key(t, "example-openai-bot", devserver.AllScopes...)
	am, err := sdk.New(sdk.Options{BaseURL: srv.URL, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := am.Remember(ctx, sdk.Note{Kind: "procedure", Title: "Offer store credit first", Body: "Store credit settles at once."}, ""); err != nil {
		t.Fatal(err)
	}
	model, requests := scriptedModel(t)
	oa := openai.NewClient(option.WithBaseURL(model.URL+"/"), option.WithAPIKey("test"), option.WithMaxRetries(0))
	answer, err := run(ctx, am, oa, "gpt-test", "Can I get a refund to my card?")
	if err != nil {
		t.Fatal(err)
	}
	if answer != "A card refund takes five business days." {
		t.Fatalf("answer %q", answer)
	}
	reqs := requests()
	if len(reqs) != 2 || len(reqs[0].Messages) < 2 || len(reqs[0].Tools) != 3 {
		t.Fatalf("model requests %+v", reqs)
	}
	sys, _ := reqs[0].Messages[0].Content.(string)
	if reqs[0].Messages[0].Role != "system" || !strings.HasPrefix(sys, "You are the store's support assistant.\n\n<agent_notes>") || !strings.Contains(sys, "Offer store credit first") {
		t.Fatalf("system message %+v", reqs[0].Messages[0])
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	content, _ := last.Content.(string)
	if last.Role != "tool" || last.ToolCallID != "call_1" || !strings.Contains(content, `"status":"stored"`) {
		t.Fatalf("tool message %+v", last)
	}
	found, err := am.Search(ctx, "card refunds", nil, 5)
	if err != nil || len(found) != 1 || found[0].Title != "Card refunds take days" {
		t.Fatalf("the remembered note: %+v %v", found, err)
	}
}
