package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/skips"
)

// netns is a network namespace holding only loopback plus a veth pair whose one end carries
// every route off the machine: nothing answers there, so any connection attempt (a SYN, an
// ARP, a DNS query to the namespace's resolv.conf) is a packet counted in eg0's tx_packets.
type netns struct{ name string }

// ip runs `ip args...` and fails the test on error.
func ip(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command("ip", args...).CombinedOutput()
	require.NoError(t, err, "ip %v: %s", args, out)
}

// newNetns creates the namespace, or skips when ip netns is impossible here (not root, no
// iproute2, no veth): the reason is printed.
func newNetns(t *testing.T, lo ...string) netns {
	t.Helper()
	if os.Geteuid() != 0 {
		skips.Capability(t, "no-egress test: ip netns needs root")
	}
	n := netns{name: fmt.Sprintf("am-noegress-%d", os.Getpid())}
	if out, err := exec.Command("ip", "netns", "add", n.name).CombinedOutput(); err != nil {
		skips.Capability(t, "no-egress test: ip netns add is impossible here: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", n.name).Run() }) // best effort: the namespace dies with its last process anyway
	ip(t, "-n", n.name, "link", "set", "lo", "up")
	for _, k := range []string{"router_solicitations=0", "dad_transmits=0", "accept_dad=0", "accept_ra=0"} {
		out, err := exec.Command("ip", "netns", "exec", n.name, "sysctl", "-qw", "net.ipv6.conf.default."+k).CombinedOutput()
		require.NoError(t, err, "sysctl %s: %s", k, out)
	}
	if out, err := exec.Command("ip", "-n", n.name, "link", "add", "eg0", "type", "veth", "peer", "name", "eg1").CombinedOutput(); err != nil {
		skips.Capability(t, "no-egress test: no veth here: %v %s", err, out)
	}
	ip(t, "-n", n.name, "link", "set", "eg1", "up")
	ip(t, "-n", n.name, "link", "set", "eg0", "up")
	ip(t, "-n", n.name, "addr", "add", "192.0.2.1/32", "dev", "eg0")
	ip(t, "-n", n.name, "route", "add", "default", "dev", "eg0")
	ip(t, "-n", n.name, "-6", "route", "add", "default", "dev", "eg0")
	for _, a := range lo {
		ip(t, "-n", n.name, "addr", "add", a+"/32", "dev", "lo") // an allowed address: stays on loopback
	}
	// DNS inside the namespace goes to an address off the machine: a lookup is an attempt.
	dir := filepath.Join("/etc/netns", n.name)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(dir) }) // best effort: a leftover file names a deleted namespace
	require.NoError(t, os.WriteFile(filepath.Join(dir, "resolv.conf"), []byte("nameserver 192.0.2.53\n"), 0o644))
	time.Sleep(1500 * time.Millisecond) // link-up chatter (IPv6 MLD) ends before the baseline
	return n
}

// sent is eg0's tx_packets: every attempt to leave the machine.
func (n netns) sent(t *testing.T) int {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", n.name, "cat", "/sys/class/net/eg0/statistics/tx_packets").CombinedOutput()
	require.NoError(t, err, "%s", out)
	v, err := strconv.Atoi(strings.TrimSpace(string(out)))
	require.NoError(t, err)
	return v
}

// run runs a shell script inside the namespace with env and returns its output.
func (n netns) run(t *testing.T, env []string, script string) (string, error) {
	t.Helper()
	c := exec.Command("ip", "netns", "exec", n.name, "bash", "-euo", "pipefail", "-c", script)
	c.Env = env
	out, err := c.CombinedOutput()
	return string(out), err
}

// QT-3 (issue 34 §3): the binary, started inside a namespace with only loopback, runs the
// walk-through (dev, two spaces, the conformance run over every route, which includes the
// README's working-memory and agent-memory calls) and makes no connection attempt off the
// machine; with OLLAMA_HOST set to an address the namespace holds on loopback, only that
// address is contacted. The negative control proves the counter catches one attempt.
func TestNoEgress(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts the Temporal dev server")
	}
	const ollama = "198.18.0.7" // TEST-NET (benchmarking) address, held on the namespace's lo
	n := newNetns(t, ollama)
	bin := buildBinary(t)
	env := append(shippedEnviron(), "AGENTMEMORY_TEMPORAL_CLI="+filepath.Join(repoRoot(t), "bin", "temporal"),
		"BIN="+bin, "DATA="+t.TempDir(), "OLLAMA_HOST=http://"+ollama+":11434")

	// Negative control: one attempt off the machine is caught.
	before := n.sent(t)
	_, err := n.run(t, env, `"$BIN" healthcheck http://203.0.113.9:80/healthz`)
	require.Error(t, err, "nothing off the machine can answer inside the namespace")
	require.Greater(t, n.sent(t), before, "the control's connection attempt was not counted: the detector detects nothing")

	before = n.sent(t)
	out, err := n.run(t, env, `
"$BIN" dev --addr 127.0.0.1:18080 --data-dir "$DATA" --temporal-ui-port 18233 > "$DATA/dev.log" 2>&1 &
dev=$!
trap 'kill $dev; wait $dev' EXIT
for i in $(seq 300); do "$BIN" healthcheck http://127.0.0.1:18080/healthz 2>/dev/null && break; sleep 0.2; done
A=$("$BIN" space create conformance-a --direct-put --data-dir "$DATA" | sed 's/.*"admin_key":"\([^"]*\)".*/\1/')
B=$("$BIN" space create conformance-b --direct-put --data-dir "$DATA" | sed 's/.*"admin_key":"\([^"]*\)".*/\1/')
"$BIN" conformance --url http://127.0.0.1:18080 --admin-key "$A" --peer-admin-key "$B" | tail -1
sleep 2
`)
	require.NoError(t, err, "walk-through inside the namespace:\n%s", out)
	require.Contains(t, out, "0 failed")
	require.Equal(t, before, n.sent(t), "the binary tried to reach an address off the machine (eg0 sent packets)")
}
