package api_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
)

// TestAdvMergeAcrossReplicasUnderConfigChurn (adversarial): merge writers on two replicas
// (each remembering rows and caching keys and documents), some with pii fields (the
// optimistic path), while documents are rewritten through the first: no merge is lost.
func TestAdvMergeAcrossReplicasUnderConfigChurn(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		typ := wmType("shop-bot", "conversation", 0, nil)
		fields := typ["fields"].(map[string]any)
		const writers = 6
		const each = 6
		for w := 0; w < writers; w++ {
			for i := 0; i < each; i++ {
				fields[fmt.Sprintf("f%d_%d", w, i)] = map[string]any{"type": "string", "pii": w%3 == 0}
			}
		}
		enableWM(e, typesDoc(typ))
		key := e.AgentKey("shop-bot", "acme-ai", "agent_state")
		replica := &apptest.Env{T: t, Server: newReplica(e)}
		c := conv("c-churn")
		mustStore(e, key, map[string]any{"scope": c, "body": map[string]any{"offer": "x"}})
		mustStore(replica, key, map[string]any{"scope": c, "body": map[string]any{"offer": "y"}})

		var wg sync.WaitGroup
		errs := make(chan string, writers*each+10)
		for w := 0; w < writers; w++ {
			srv := e
			if w%2 == 1 {
				srv = replica
			}
			wg.Add(1)
			go func(w int, srv *apptest.Env) {
				defer wg.Done()
				for i := 0; i < each; i++ {
					for {
						r := srv.Do(http.MethodPut, "/v1/agent-state", key, map[string]any{"scope": c, "mode": "merge_by_key",
							"body": map[string]any{fmt.Sprintf("f%d_%d", w, i): "v"}})
						if r.Status == http.StatusServiceUnavailable {
							continue
						}
						if r.Status != http.StatusOK || r.JSON(t)["stored"] != true {
							errs <- fmt.Sprintf("writer %d #%d: %d %s", w, i, r.Status, r.Body)
						}
						break
					}
				}
			}(w, srv)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 4; i++ {
				t2 := map[string]any{}
				for k, v := range typ {
					t2[k] = v
				}
				t2["agent_state"] = map[string]any{"scope": "conversation", "write": "both", "max_bytes": 50000 + i}
				e.PutDocument("object-types", typesDoc(t2)) // a new revision
			}
		}()
		wg.Wait()
		close(errs)
		for s := range errs {
			t.Error(s)
		}
		got := read(replica, key, c, "")
		for w := 0; w < writers; w++ {
			for i := 0; i < each; i++ {
				require.Contains(t, got.Body, fmt.Sprintf("f%d_%d", w, i), "lost merge: %s", got.Raw)
			}
		}
		require.Equal(t, got.Body, read(e, key, c, "").Body)
	})
}
