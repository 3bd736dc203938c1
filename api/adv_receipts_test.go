package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/receipts"
)

// TestAdvReceiptTampering (adversarial): changes made in the database behind the API are
// caught by GET /v1/receipts/verify, and the proof route never answers a proof that verifies
// for a changed receipt, nor a 500.
func TestAdvReceiptTampering(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		for i := 0; i < 5; i++ {
			e.PersonKey(fmt.Sprintf("p%d", i), "integration") // key.mint receipts
		}
		list := e.MustDo(http.StatusOK, http.MethodGet, "/v1/receipts?limit=1000", e.AdminKey, nil).JSON(t)["receipts"].([]any)
		require.GreaterOrEqual(t, len(list), 5)
		last := list[len(list)-1].(map[string]any)
		id := last["id"].(string)
		verify := func() map[string]any {
			return e.MustDo(http.StatusOK, http.MethodGet, "/v1/receipts/verify", e.AdminKey, nil).JSON(t)
		}
		require.Equal(t, true, verify()["ok"])
		proofOK := func() (int, error) {
			r := e.Do(http.MethodGet, "/v1/receipts/"+id+"/proof", e.AdminKey, nil)
			if r.Status != http.StatusOK {
				return r.Status, nil
			}
			var p receipts.Proof
			require.NoError(t, json.Unmarshal(r.Body, &p))
			return r.Status, p.Verify()
		}
		st, err := proofOK()
		require.Equal(t, http.StatusOK, st)
		require.NoError(t, err)

		// The receipt's detail changed.
		_, err = e.DB.ExecContext(ctx, "UPDATE receipts SET action = 'forged' WHERE id = ?", id)
		require.NoError(t, err)
		require.Equal(t, false, verify()["ok"])
		st, err = proofOK()
		require.Less(t, st, 500)
		if st == http.StatusOK {
			require.Error(t, err, "a proof of a changed receipt must not verify")
		}
		_, err = e.DB.ExecContext(ctx, "UPDATE receipts SET action = ? WHERE id = ?", last["action"], id)
		require.NoError(t, err)
		require.Equal(t, true, verify()["ok"])

		// Its chain entry removed.
		var seq int64
		require.NoError(t, e.DB.NewRaw("SELECT seq FROM receipts WHERE id = ?", id).Scan(ctx, &seq))
		_, err = e.DB.ExecContext(ctx, "DELETE FROM receipt_batches WHERE seq >= ? AND first_seq <= ?", seq, seq)
		require.NoError(t, err)
		require.Equal(t, false, verify()["ok"])
		st, _ = proofOK()
		require.Less(t, st, 500, "a receipt whose chain entry is gone")
	})
}
