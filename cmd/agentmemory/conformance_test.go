package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/conformance"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
)

// buildTagged builds the real binary with build tags (the deliberately broken build uses
// conformance_broken: api/breakspace_on.go).
func buildTagged(t *testing.T, tags string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "agentmemory")
	cmd := exec.Command("go", "build", "-tags", tags, "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// createSpace runs `bin space create NAME --direct-put` with env and returns the admin key.
func createSpace(t *testing.T, bin string, env []string, name string, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	c := exec.Command(bin, append([]string{"space", "create", name, "--direct-put"}, args...)...)
	c.Env, c.Stdout, c.Stderr = env, &out, &out
	require.NoError(t, c.Run(), "space create: %s", out.String())
	var sp map[string]string
	require.NoError(t, json.Unmarshal(out.Bytes(), &sp), "space create printed %q", out.String())
	return sp["admin_key"]
}

// operatorKey runs `bin operator-key create conformance` with env and returns the operator key.
func operatorKey(t *testing.T, bin string, env []string) string {
	t.Helper()
	var out bytes.Buffer
	c := exec.Command(bin, "operator-key", "create", "conformance")
	c.Env, c.Stdout, c.Stderr = env, &out, &out
	require.NoError(t, c.Run(), "operator-key create: %s", out.String())
	var k map[string]string
	require.NoError(t, json.Unmarshal(out.Bytes(), &k), "operator-key create printed %q", out.String())
	require.True(t, strings.HasPrefix(k["operator_key"], "amop_"), "%v", k)
	return k["operator_key"]
}

// runConformance runs `bin conformance` against url with two fresh spaces' admin keys (or an
// operator key as adminA and no adminB: the run creates its spaces) and returns its output,
// the JSON report and its exit error; extra are further flags.
func runConformance(t *testing.T, bin string, env []string, url, adminA, adminB string, extra ...string) (string, conformance.Report, error) {
	t.Helper()
	report := filepath.Join(t.TempDir(), "report.json")
	var out bytes.Buffer
	args := []string{"conformance", "--url", url, "--admin-key", adminA, "--json", report}
	if adminB != "" {
		args = append(args, "--peer-admin-key", adminB)
	}
	args = append(args, extra...)
	c := exec.Command(bin, args...)
	c.Env, c.Stdout, c.Stderr = env, &out, &out
	err := c.Run()
	var rep conformance.Report
	data, rerr := os.ReadFile(report)
	require.NoError(t, rerr, "no JSON report; output:\n%s", out.String())
	require.NoError(t, json.Unmarshal(data, &rep))
	return out.String(), rep, err
}

// startDev starts `bin dev` (SQLite, the Temporal dev server it starts itself, as make run
// does) on a fresh data dir and returns its URL and the environment that reaches its data dir.
func startDev(t *testing.T, bin string) (string, []string) {
	t.Helper()
	ports, err := freePorts(2)
	require.NoError(t, err)
	dir := t.TempDir()
	env := append(shippedEnviron(), "AGENTMEMORY_TEMPORAL_CLI="+filepath.Join(repoRoot(t), "bin", "temporal"), "AGENTMEMORY_DATA_DIR="+dir)
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	p := start(t, bin, env, "dev", "--addr", addr, "--data-dir", dir, "--temporal-ui-port", fmt.Sprint(ports[1]))
	waitHealthy(t, p, "http://"+addr+"/healthz")
	t.Cleanup(func() { p.stop(t) })
	return "http://" + addr, env
}

// QT-3 (issue 34 §3): `agentmemory conformance --url U --admin-key K`, K an operator key,
// passes against the real binary on SQLite (dev, as make run starts it): it creates its two
// spaces, runs every check of every group (the operator key among the callers refused on
// every route, and every space key refused POST /v1/spaces), and revokes the keys it minted
// and the created spaces' admin keys.
func TestConformancePassesAgainstDev(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts the Temporal dev server")
	}
	bin := buildBinary(t)
	url, env := startDev(t, bin)
	out, rep, err := runConformance(t, bin, env, url, operatorKey(t, bin, env), "")
	require.NoError(t, err, "conformance failed:\n%s", out)
	requireEveryGroup(t, rep)
	require.Contains(t, out, fmt.Sprintf("%d checks, 0 failed", len(rep.Checks)))
	count := map[string]int{}
	for _, c := range rep.Checks {
		count[c.Name]++
	}
	require.Equal(t, 2, count["revoke a created space's admin key"], "cleanup revokes both created spaces' admin keys")
	require.Equal(t, 1, count["POST /v1/spaces as space B admin is refused"])
	require.Equal(t, 1, count["tools/call remember as vendor B agent stores in space A (control)"])
	require.Positive(t, count["GET /v1/keys/self as operator key"], "the operator key is a caller of the isolation walk")
}

// requireEveryGroup checks that rep ran every group of checks, with isolation and bad input
// over many routes.
func requireEveryGroup(t *testing.T, rep conformance.Report) {
	t.Helper()
	count := map[string]int{}
	for _, c := range rep.Checks {
		count[c.Group]++
	}
	for _, g := range []string{"setup", "isolation", "bad_input", "boards", "erasure", "receipts", "console", "cleanup"} {
		require.Positive(t, count[g], "group %s ran no check", g)
	}
	require.Greater(t, count["isolation"], 60, "isolation covers the routes of /openapi.json for three callers")
	require.Greater(t, count["bad_input"], 40)
	require.GreaterOrEqual(t, count["boards"], 14, "boards: conflicts, rules, grants across vendors and spaces, leases")
	requireErasureChecked(t, rep)
}

// requireErasureChecked checks that rep's erasure group verified the certificate offline,
// read a probe of 0 from every store it lists (state and subjects at least) and saw the state
// gone.
func requireErasureChecked(t *testing.T, rep conformance.Report) {
	t.Helper()
	ok := map[string]bool{}
	for _, c := range rep.Checks {
		if c.Group == "erasure" {
			ok[c.Name] = c.OK
		}
	}
	for _, name := range []string{"POST /v1/erasures ends completed", "certificate verifies offline",
		"probe of store state finds nothing", "probe of store subjects finds nothing",
		"the certificate's status is completed", "the subject's state reads back as gone"} {
		require.True(t, ok[name], "erasure check %q missing or failed; erasure checks: %v", name, ok)
	}
}

// startServe starts `serve` on PostgreSQL against a Temporal dev server with extra
// environment, and, when worker is set, `worker` beside it (as a production deployment
// runs); it returns the URL and the environment.
func startServe(t *testing.T, bin string, worker bool, extra ...string) (string, []string) {
	t.Helper()
	srv := devServer(t)
	ports, err := freePorts(2)
	require.NoError(t, err)
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	env := append(shippedEnviron(), "DATABASE_URL="+dbtest.URL(t, "postgres"), "TEMPORAL_ADDRESS="+srv.FrontendHostPort(),
		"AGENTMEMORY_SECRET=conformance-serve-secret-0123456789abcdef", "AGENTMEMORY_ADDR="+addr,
		"AGENTMEMORY_TASK_QUEUE=conformance-serve", "AGENTMEMORY_DATA_DIR="+t.TempDir())
	env = append(env, extra...)
	if worker {
		metrics := fmt.Sprintf("127.0.0.1:%d", ports[1])
		w := start(t, bin, append(slices.Clone(env), "AGENTMEMORY_METRICS_ADDR="+metrics), "worker")
		waitHealthy(t, w, "http://"+metrics+"/healthz")
		t.Cleanup(func() { w.stop(t) })
	}
	p := start(t, bin, env, "serve")
	waitHealthy(t, p, "http://"+addr+"/healthz")
	t.Cleanup(func() { p.stop(t) })
	return "http://" + addr, env
}

// QT-3: against `serve` on PostgreSQL (with a worker and a Temporal dev server) the run
// passes too, the erasure's signed certificate included.
func TestConformancePassesAgainstServeOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts the Temporal dev server")
	}
	bin := buildBinary(t)
	url, env := startServe(t, bin, true, "AGENTMEMORY_SIGNING_KEY="+randomBase64(t)) // production-shaped: signed proofs on
	out, rep, err := runConformance(t, bin, env, url, createSpace(t, bin, env, "conf-a"), createSpace(t, bin, env, "conf-b"))
	require.NoError(t, err, "conformance failed:\n%s", out)
	requireEveryGroup(t, rep)
}

// QT-3 (issue 34 §3): the erasure check is never skipped. A deployment without a worker
// (the erasure stays pending past a short --erasure-wait) fails that check, and only that one; one
// without a signing key fails the certificate check (besides the routes that answer 503
// signing_unavailable there); each with a detail naming what is missing, and exits non-zero.
func TestConformanceErasureFailsWithoutWorkerOrSigningKey(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts the Temporal dev server")
	}
	bin := buildBinary(t)
	for _, tc := range []struct {
		name, failed, detail string
		worker               bool
		env                  []string
		wait                 string // --erasure-wait: short where nothing can end the erasure
	}{
		{"no worker", "POST /v1/erasures ends completed", "Temporal worker", false, []string{"AGENTMEMORY_SIGNING_KEY=" + randomBase64(t)}, "3s"},
		{"no signing key", "certificate verifies offline", "no signing key", true, nil, "2m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, env := startServe(t, bin, tc.worker, tc.env...)
			out, rep, err := runConformance(t, bin, env, url, createSpace(t, bin, env, "conf-a"), createSpace(t, bin, env, "conf-b"),
				"--erasure-wait", tc.wait)
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "conformance must exit non-zero:\n%s", out)
			var erasure []conformance.Check
			for _, c := range rep.Checks {
				switch {
				case c.OK:
				case c.Group == "erasure":
					erasure = append(erasure, c)
				default: // only a server without a signing key answers 503 on the signing routes
					require.Contains(t, c.Detail, "signing_unavailable", "unexpected failure %+v:\n%s", c, out)
					require.Nil(t, tc.env, "unexpected failure %+v:\n%s", c, out)
				}
			}
			require.Len(t, erasure, 1, "one erasure check fails:\n%s", out)
			require.Equal(t, tc.failed, erasure[0].Name)
			require.Contains(t, erasure[0].Detail, tc.detail)
		})
	}
}

// QT-3: on a deliberately broken build (tag conformance_broken: GET
// /v1/agent-memory/notes/{id} reads across spaces) the run fails, exits non-zero and names
// that route, and only that route.
func TestConformanceFailsOnABrokenBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts the Temporal dev server")
	}
	broken := buildTagged(t, "conformance_broken")
	url, env := startDev(t, broken)
	out, rep, err := runConformance(t, broken, env, url, createSpace(t, broken, env, "conf-a"), createSpace(t, broken, env, "conf-b"))
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "conformance must exit non-zero on the broken build:\n%s", out)
	require.NotZero(t, rep.Failures)
	var failed []string
	for _, c := range rep.Checks {
		if !c.OK {
			failed = append(failed, c.Name)
		}
	}
	for _, f := range failed {
		require.True(t, strings.HasPrefix(f, "GET /v1/agent-memory/notes/{id} as space B"), "unexpected failure %q; all: %v", f, failed)
	}
	require.True(t, slices.Contains(failed, "GET /v1/agent-memory/notes/{id} as space B admin"), "failures: %v", failed)
	require.Contains(t, out, "FAIL")
}
