package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"

	"github.com/agentmemory/agentmemory/internal/llm/fakemodel"
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

// inNetns runs fn on an OS thread moved into the namespace, so the sockets fn creates (a
// listener, a dialled connection) live there while this process stays outside. The thread is
// never given back: its goroutine ends locked, and the runtime then retires the thread, so no
// other goroutine ever runs in the namespace.
func inNetns[T any](n netns, fn func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked, see above
		var zero T
		f, err := os.Open(filepath.Join("/run/netns", n.name))
		if err != nil {
			ch <- result{zero, err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{zero, fmt.Errorf("setns: %w", err)}
			return
		}
		v, err := fn()
		ch <- result{v, err}
	}()
	r := <-ch
	return r.v, r.err
}

// modelCalls counts the fake model's requests by path.
type modelCalls struct {
	mu    sync.Mutex
	paths map[string]int
}

func (m *modelCalls) get(path string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.paths[path]
}

// fakeModelIn serves the fake Ollama (internal/llm/fakemodel: /api/chat drafts a note,
// /api/embed answers hashed vectors) on addr inside the namespace, counting its calls.
func fakeModelIn(t *testing.T, n netns, addr string) *modelCalls {
	t.Helper()
	calls := &modelCalls{paths: map[string]int{}}
	h := fakemodel.Handler()
	ln, err := inNetns(n, func() (net.Listener, error) { return net.Listen("tcp", addr) })
	require.NoError(t, err)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.mu.Lock()
		calls.paths[r.URL.Path]++
		calls.mu.Unlock()
		h.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()     // ends with ErrServerClosed at cleanup
	t.Cleanup(func() { _ = srv.Close() }) // best effort: the namespace goes away with the test
	return calls
}

// brokerIn starts a kfake Kafka broker listening on addr inside the namespace (so it
// advertises that address) with topic seeded, and returns a counter of the records produced
// to topic.
func brokerIn(t *testing.T, n netns, addr, topic string) *atomic.Int64 {
	t.Helper()
	listen := func(network, _ string) (net.Listener, error) {
		return inNetns(n, func() (net.Listener, error) { return net.Listen(network, addr) })
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ListenFn(listen), kfake.SeedTopics(1, topic))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	var records atomic.Int64
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		records.Add(int64(producedRecords(req.(*kmsg.ProduceRequest), topic)))
		return nil, nil, false // kfake stores the records as usual
	})
	require.Equal(t, []string{addr}, c.ListenAddrs())
	return &records
}

// producedRecords counts the records of a produce request's batches for topic.
func producedRecords(req *kmsg.ProduceRequest, topic string) int {
	n := 0
	for _, tp := range req.Topics {
		if tp.Topic != topic {
			continue
		}
		for _, p := range tp.Partitions {
			for b := p.Records; len(b) >= 12; {
				var rb kmsg.RecordBatch
				if err := rb.ReadFrom(b); err != nil {
					break
				}
				n += int(rb.NumRecords)
				b = b[min(len(b), 12+int(rb.Length)):]
			}
		}
	}
	return n
}

// readmeBlock returns the shell block of README.md between the walkthrough:NAME markers.
func readmeBlock(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	require.NoError(t, err)
	s := string(data)
	begin, end := "<!-- walkthrough:"+name+":begin -->", "<!-- walkthrough:"+name+":end -->"
	i, j := strings.Index(s, begin), strings.Index(s, end)
	require.True(t, i >= 0 && j > i, "README.md has no walkthrough:%s block", name)
	block := s[i+len(begin) : j]
	block = strings.TrimSpace(block)
	block = strings.TrimPrefix(block, "```sh")
	return strings.TrimSuffix(block, "```")
}

// noEgressWalk is the walk-through run inside the namespace against dev at $U: two spaces
// and a whole conformance run (every route, the README's working-memory and agent-memory
// calls among them), the README's distillation block (the model drafts a note, a person
// approves it), and the knowledge walk-through's ingest and retrieval (the model embeds);
// then it waits until the relay has sent every outbox event of the three spaces to Kafka and
// prints their count as EVENTS=N.
const noEgressWalk = `
for i in $(seq 300); do "$BIN" healthcheck $U/healthz 2>/dev/null && break; sleep 0.2; done
key() { sed 's/.*"admin_key":"\([^"]*\)".*/\1/'; }
A=$("$BIN" space create conformance-a --direct-put --data-dir "$DATA" | key)
B=$("$BIN" space create conformance-b --direct-put --data-dir "$DATA" | key)
"$BIN" conformance --url $U --admin-key "$A" --peer-admin-key "$B" | tail -1
ADMIN=$("$BIN" space create walk --direct-put --data-dir "$DATA" | key)
H=(-H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json')
curl -fsS -X PUT $U/v1/documents/features "${H[@]}" -d '{"agent_memory": {"enabled": true}, "knowledge": {"enabled": true}}' >/dev/null
KEY=$(curl -fsS -X POST $U/v1/keys "${H[@]}" -d '{"kind": "agent", "agent": "shop-bot", "vendor": "acme-ai", "scopes": ["agent_memory", "knowledge:read"]}' | sed -E 's/.*"key":"([^"]+)".*/\1/')
# README: Distillation
` + "%s" + `
echo
# The knowledge walk-through: a base the agent may read, one document ingested (embedded), retrieved.
KB=$(curl -fsS -X POST $U/v1/knowledge "${H[@]}" -d '{"name": "handbook", "settings": {"embedding_model": "nomic-embed-text", "readers": {"agents": ["shop-bot"]}}}' | sed -E 's/.*"id":"([^"]+)".*/\1/')
WRITER=$(curl -fsS -X POST $U/v1/keys "${H[@]}" -d '{"kind": "agent", "agent": "docs-loader", "vendor": "acme-ai", "scopes": ["knowledge:write"]}' | sed -E 's/.*"key":"([^"]+)".*/\1/')
D=$(curl -fsS -X POST $U/v1/knowledge/$KB/documents -H "Authorization: Bearer $WRITER" -H 'Content-Type: application/json' \
  -d '{"source_uri": "kb://refunds", "title": "Refunds", "format": "markdown", "text": "# Refunds\n\nRefunds go back to the original card within 5 business days."}' | sed -E 's/.*"document_id":"([^"]+)".*/\1/')
for i in $(seq 120); do curl -fsS $U/v1/knowledge/$KB/documents/$D -H "Authorization: Bearer $WRITER" | grep -q '"status":"ready"' && break; sleep 0.5; done
curl -fsS -X POST $U/v1/knowledge/retrieve -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
  -d "{\"query\": \"how long does a refund take\", \"kbs\": [\"$KB\"]}" | grep -o '"chunk_id":"kc_[^"]*"' | head -1
n=0
for k in "$A" "$B" "$ADMIN"; do
  for i in $(seq 300); do E=$(curl -fsS "$U/v1/events?limit=1000" -H "Authorization: Bearer $k"); echo "$E" | grep -q '"state":"pending"' || break; sleep 0.2; done
  n=$((n + $(echo "$E" | grep -o '"state":"sent"' | wc -l)))
done
echo "EVENTS=$n"
`

// QT-3 (issue 34 §3): the binary, started inside a namespace with only loopback, runs the
// walk-throughs (noEgressWalk: conformance over every route, the README's distillation, a
// knowledge ingest and retrieval) against the model and Kafka that OLLAMA_HOST and
// KAFKA_BROKERS name, at addresses the namespace holds on loopback: the fake model drafts and
// embeds, the broker receives every outbox event, and no packet leaves for any other
// address. The negative control proves the counter catches one attempt.
func TestNoEgress(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts the Temporal dev server")
	}
	const ollama, broker, topic = "198.18.0.7", "198.18.0.8", "noegress.events" // TEST-NET (benchmarking) addresses, held on the namespace's lo
	n := newNetns(t, ollama, broker)
	model := fakeModelIn(t, n, ollama+":11434")
	records := brokerIn(t, n, broker+":9092", topic)
	bin := buildBinary(t)
	data := t.TempDir()
	env := append(shippedEnviron(), "AGENTMEMORY_TEMPORAL_CLI="+filepath.Join(repoRoot(t), "bin", "temporal"),
		"BIN="+bin, "DATA="+data, "U=http://127.0.0.1:18080", "OLLAMA_HOST=http://"+ollama+":11434",
		"KAFKA_BROKERS="+broker+":9092", "KAFKA_TOPIC="+topic)

	// Negative control: one attempt off the machine is caught.
	before := n.sent(t)
	_, err := n.run(t, env, `"$BIN" healthcheck http://203.0.113.9:80/healthz`)
	require.Error(t, err, "nothing off the machine can answer inside the namespace")
	require.Greater(t, n.sent(t), before, "the control's connection attempt was not counted: the detector detects nothing")

	before = n.sent(t)
	dev := start(t, "ip", env, "netns", "exec", n.name, bin, "dev", "--addr", "127.0.0.1:18080", "--data-dir", data, "--temporal-ui-port", "18233")
	out, err := n.run(t, env, fmt.Sprintf(noEgressWalk, readmeBlock(t, "distill")))
	require.NoError(t, err, "walk-through inside the namespace:\n%s\ndev:\n%s", out, dev.stderr.String())
	require.Contains(t, out, "0 failed", "the conformance run inside the namespace:\n%s", out)
	require.Contains(t, out, `"status":"pending","reason":null,"last_error":null`, "the distillation drafted no note:\n%s", out)
	require.Contains(t, out, `"chunk_id":"kc_`, "retrieval found no chunk:\n%s", out)
	m := regexp.MustCompile(`EVENTS=(\d+)`).FindStringSubmatch(out)
	require.NotNil(t, m, "%s", out)
	events, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	require.Positive(t, events, "the walk-through wrote no outbox event:\n%s", out)
	require.GreaterOrEqual(t, records.Load(), int64(events), "every event the relay reports sent reached the broker in the namespace")
	require.Positive(t, model.get("/api/chat"), "the distillation never called the model")
	require.Positive(t, model.get("/api/embed"), "the ingest never called the embedder")
	t.Logf("inside the namespace: %d chat and %d embed calls to the model, %d outbox events sent, %d records at the broker",
		model.get("/api/chat"), model.get("/api/embed"), events, records.Load())
	dev.stop(t)
	require.Equal(t, before, n.sent(t), "the binary tried to reach an address off the machine (eg0 sent packets)")
}
