package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/receipts/receiptstest"
)

// logPass runs the receipt log's pass (what Run does every half second) at now, signing
// with the env's key.
func (s signedEnv) logPass(t *testing.T, now time.Time) {
	t.Helper()
	ns, err := s.signer.NoteSigner(receipts.CheckpointName)
	require.NoError(t, err)
	_, err = receipts.CatchUpLog(t.Context(), s.DB, ns, now)
	require.NoError(t, err)
}

// writeFile writes data to a new file and returns its path.
func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(file, data, 0o600))
	return file
}

// Issue 32: a receipt's proof in the deployment's log, and a consistency proof between two
// checkpoints, saved from the API, verify offline with the public keys; `receipts verify
// --log` walks the log on the database; a reordered log, a changed receipt and a forked
// checkpoint fail each check (both DBs).
func TestReceiptsLogProofCommand(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		s := newSignedEnv(t, e)
		for _, agent := range []string{"a", "b"} {
			s.MustDo(http.StatusCreated, "POST", "/v1/keys", s.AdminKey, map[string]any{"kind": "agent", "agent": agent, "vendor": "v", "scopes": []string{"context"}})
		}
		s.MustDo(http.StatusNotFound, "GET", "/v1/receipts/checkpoint", s.AdminKey, nil)
		now := time.Now()
		s.logPass(t, now)
		keys := s.save(t, "/v1/signing-keys", "keys.json")
		old := s.save(t, "/v1/receipts/checkpoint", "checkpoint.json")
		page := s.MustDo(http.StatusOK, "GET", "/v1/receipts?limit=1000", s.AdminKey, nil).JSON(t)
		list := page["receipts"].([]any)
		id := list[len(list)-1].(map[string]any)["id"].(string)
		proof := s.save(t, "/v1/receipts/"+id+"/proof", "proof.json")
		out, err := cli(t, nil, "receipts", "verify-proof", proof, "--keys", keys, "--checkpoint", old)
		require.NoError(t, err)
		require.Contains(t, out, "log: valid; leaf")
		data, err := os.ReadFile(proof)
		require.NoError(t, err)
		forged := writeFile(t, "forged.json", bytes.Replace(data, []byte(`"action":"key.create"`), []byte(`"action":"key.revoke"`), 1))
		_, err = cli(t, nil, "receipts", "verify-proof", forged, "--keys", keys)
		require.ErrorContains(t, err, "does NOT verify")

		// The log grows; its next checkpoint extends the kept one.
		s.MustDo(http.StatusCreated, "POST", "/v1/keys", s.AdminKey, map[string]any{"kind": "agent", "agent": "c", "vendor": "v", "scopes": []string{"context"}})
		s.logPass(t, now.Add(2*time.Second))
		var kept receipts.Checkpoint
		require.NoError(t, json.Unmarshal(mustRead(t, old), &kept))
		s.MustDo(http.StatusBadRequest, "GET", "/v1/receipts/consistency?from=0", s.AdminKey, nil)
		s.MustDo(http.StatusBadRequest, "GET", "/v1/receipts/consistency?from=1&to=100000", s.AdminKey, nil)
		cons := s.save(t, "/v1/receipts/consistency?from="+strconv.FormatInt(kept.Size, 10), "consistency.json")
		out, err = cli(t, nil, "receipts", "verify-proof", cons, "--keys", keys, "--checkpoint", old)
		require.NoError(t, err)
		require.Contains(t, out, "consistency: valid")
		dbEnv := map[string]string{"DATABASE_URL": dbURL(t, s)}
		out, err = cli(t, dbEnv, "receipts", "verify", "--log", "--keys", keys, "--checkpoint", old)
		require.NoError(t, err)
		require.Contains(t, out, "log: ok")

		// A checkpoint of the kept size with another root, signed with the key: a fork.
		msg, err := receipts.SignTree(tlog.Tree{N: kept.Size, Hash: tlog.RecordHash([]byte("x"))}, mustNoteSigner(t, s))
		require.NoError(t, err)
		fork := receipts.Checkpoint{Size: kept.Size, Hash: tlog.RecordHash([]byte("x")), Note: string(msg), At: kept.At}
		forkData, err := json.Marshal(fork)
		require.NoError(t, err)
		forkFile := writeFile(t, "fork.json", forkData)
		_, err = cli(t, nil, "receipts", "verify-proof", cons, "--keys", keys, "--checkpoint", forkFile)
		require.ErrorContains(t, err, "fork")
		_, err = cli(t, dbEnv, "receipts", "verify", "--log", "--keys", keys, "--checkpoint", forkFile)
		require.ErrorContains(t, err, receipts.ReasonCheckpointMismatch)

		// Two leaves swap places, the tree's hashes rebuilt: the log and the proofs fail.
		for _, q := range []string{"UPDATE receipt_log_leaves SET idx = -1 WHERE idx = 0", "UPDATE receipt_log_leaves SET idx = 0 WHERE idx = 1",
			"UPDATE receipt_log_leaves SET idx = 1 WHERE idx = -1"} {
			_, err := s.DB.ExecContext(t.Context(), q)
			require.NoError(t, err)
		}
		require.NoError(t, receiptstest.RebuildLog(t.Context(), s.DB))
		_, err = cli(t, dbEnv, "receipts", "verify", "--log", "--keys", keys)
		require.Error(t, err)
		require.Regexp(t, receipts.ReasonLogOrder+"|"+receipts.ReasonCheckpointMismatch, err.Error())
		first := list[0].(map[string]any)["id"].(string)
		_, err = cli(t, nil, "receipts", "verify-proof", s.save(t, "/v1/receipts/"+first+"/proof", "first.json"), "--keys", keys)
		require.ErrorContains(t, err, "does NOT verify in the log")
	})
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return data
}

func mustNoteSigner(t *testing.T, s signedEnv) note.Signer {
	t.Helper()
	ns, err := s.signer.NoteSigner(receipts.CheckpointName)
	require.NoError(t, err)
	return ns
}
