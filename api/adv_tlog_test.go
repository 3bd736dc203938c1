package api_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/receipts"
)

// Attacks on the receipt log's proofs (issue 32): another space's receipt id is answered as
// one that does not exist, byte for byte; malformed and out-of-range tree sizes are 400s, never
// a 5xx.
func TestAdvReceiptLogInputs(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			e := apptest.New(t, engine, func(d *api.Deps) { d.Signer = newTestSigner(t) })
			advReceiptLogInputs(t, e)
		})
	}
}

// advReceiptLogInputs runs TestAdvReceiptLogInputs on e (a signer set).
func advReceiptLogInputs(t *testing.T, e *apptest.Env) {
	other := newGovSpace(e)
	page := e.MustDo(http.StatusOK, "GET", "/v1/receipts?limit=5", e.AdminKey, nil).JSON(t)
	mine := page["receipts"].([]any)[0].(map[string]any)["id"].(string)
	requireError(t, e.Do("GET", "/v1/receipts/consistency?from=1", e.AdminKey, nil), http.StatusBadRequest, "invalid_tree_range") // no checkpoint yet
	ns, err := e.Deps.Signer.NoteSigner(receipts.CheckpointName)
	require.NoError(t, err)
	_, err = receipts.CatchUpLog(t.Context(), e.DB, ns, time.Now())
	require.NoError(t, err)
	e.MustDo(http.StatusOK, "GET", "/v1/receipts/"+mine+"/proof", e.AdminKey, nil)

	nope := e.Do("GET", "/v1/receipts/rcpt_nope/proof", other.admin, nil)
	requireError(t, nope, http.StatusNotFound, "receipt_not_found")
	for _, id := range []string{strings.Repeat("r", 10000), "rcpt_%27%20OR%201=1--", "..%2F..%2Fverify"} {
		r := e.Do("GET", "/v1/receipts/"+id+"/proof", other.admin, nil)
		require.Equal(t, http.StatusNotFound, r.Status, "%.40s: %s", id, r.Body)
	}
	requireError(t, e.Do("GET", "/v1/receipts/%00/proof", other.admin, nil), http.StatusBadRequest, "invalid_request")
	theirs := e.Do("GET", "/v1/receipts/"+mine+"/proof", other.admin, nil)
	require.Equal(t, nope.Status, theirs.Status, "%s", theirs.Body)
	require.Equal(t, string(nope.Body), string(theirs.Body))

	size, err := e.MustDo(http.StatusOK, "GET", "/v1/receipts/checkpoint", e.AdminKey, nil).JSON(t)["size"].(json.Number).Int64()
	require.NoError(t, err)
	for _, q := range []string{"from=-1", "from=abc", "from=1.5", "from=1&to=abc", "from=99999999999999999999",
		"from=2&to=1", "from=1&to=4611686018427387904", "to=1", "from=1&to=-1"} {
		r := e.Do("GET", "/v1/receipts/consistency?"+q, e.AdminKey, nil)
		require.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", q, r.Body)
	}
	requireError(t, e.Do("GET", "/v1/receipts/consistency?from=1&to="+strconv.FormatInt(size+1, 10), e.AdminKey, nil), http.StatusBadRequest, "invalid_tree_range")
	ok := e.MustDo(http.StatusOK, "GET", "/v1/receipts/consistency?from="+strconv.FormatInt(size, 10)+"&to="+strconv.FormatInt(size, 10), e.AdminKey, nil).JSON(t)
	require.Empty(t, ok["hashes"])
}
