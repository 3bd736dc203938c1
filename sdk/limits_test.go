package sdk_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/agentmemory/agentmemory/sdk"
)

// TestDeepAnswerIsRefused: an answer of 1 MB of nesting (from a broken or hostile server) is
// refused before it is parsed, with bounded memory (issue 11 §1).
func TestDeepAnswerIsRefused(t *testing.T) {
	deep := append([]byte(`{"body":`), bytes.Repeat([]byte("["), 1<<20)...)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(deep)
	}))
	defer srv.Close()
	c, err := sdk.New(sdk.Options{BaseURL: srv.URL, Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	st := c.AgentState(sdk.Conversation("c-deep"))

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = st.Get(context.Background())
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "json_too_deep") {
		t.Fatalf("Get of a 1 MB deep answer: got %v, want a json_too_deep error", err)
	}
	// The answer itself is read (1 MB, plus the reader's growth); nothing proportional to
	// its depth is allocated on top.
	if got := after.TotalAlloc - before.TotalAlloc; got >= 8<<20 {
		t.Fatalf("allocated %d bytes reading a 1 MB deep answer, want less than %d", got, 8<<20)
	}
}
