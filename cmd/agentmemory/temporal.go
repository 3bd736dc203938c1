package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/agentmemory/agentmemory/app"
)

// defaultTemporalUIPort is the dev server's web UI port when --temporal-ui-port is not given
// (Temporal's own default).
const defaultTemporalUIPort = 8233

// startTemporal dials TEMPORAL_ADDRESS when set; otherwise it starts the Temporal dev server
// (./bin/temporal or temporal on PATH) with its database in the data dir, so workflows survive
// restarts (even a kill -9: the child dies with this process and a restart reopens the same
// file), and prints its web UI address. The web UI listens on 127.0.0.1:uiPort (0: a free
// port). A busy uiPort is an error when explicit (the flag was given); otherwise a free port
// is used instead and the message says so.
func startTemporal(ctx context.Context, a *app.App, uiPort int, explicit bool, stdout io.Writer) (client.Client, func(), error) {
	cfg := a.Config
	if cfg.TemporalAddress != "" {
		c, err := dialTemporal(a)
		if err != nil {
			return nil, nil, err
		}
		return c, c.Close, nil
	}
	path, err := temporalCLI(cfg.TemporalCLI)
	if err != nil {
		return nil, nil, err
	}
	// The frontend port stays held while the web UI port is chosen, so the two can never be
	// the same port (two free-port picks in a row can return one port twice).
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	port := held.Addr().(*net.TCPAddr).Port
	uiPort, uiNote, err := pickUIPort(uiPort, explicit)
	_ = held.Close() // a probe listener: only its port number is kept
	if err != nil {
		return nil, nil, err
	}
	stop, exited, err := startDevServer(path, cfg.DataDir, cfg.TemporalNamespace, port, uiPort)
	if err != nil {
		return nil, nil, err
	}
	hostPort := "127.0.0.1:" + strconv.Itoa(port)
	c, err := dialUntilReady(ctx, a.ClientOptions(hostPort), exited)
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("the Temporal dev server did not come up (see %s): %w", filepath.Join(cfg.DataDir, "temporal.log"), err)
	}
	fmt.Fprintf(stdout, "Temporal dev server at %s, web UI at http://127.0.0.1:%d%s\n", hostPort, uiPort, uiNote)
	return c, func() { c.Close(); stop() }, nil
}

// startDevServer starts the Temporal dev server at path, its frontend on 127.0.0.1:port and
// its web UI on uiPort, with its database and log (temporal.db, temporal.log) in dataDir, as
// a child that dies with this process. It returns stop (SIGTERM, then after 10 seconds a
// kill; it returns once the server exited) and a channel closed when the server exits.
func startDevServer(path, dataDir, namespace string, port, uiPort int) (func(), <-chan struct{}, error) {
	cmd := exec.Command(path, "server", "start-dev",
		"--ip", "127.0.0.1", "--port", strconv.Itoa(port), "--ui-port", strconv.Itoa(uiPort),
		"--db-filename", filepath.Join(dataDir, "temporal.db"),
		"--namespace", namespace, "--log-level", "error",
		"--dynamic-config-value", "frontend.enableServerVersionCheck=false")
	logFile, err := os.OpenFile(filepath.Join(dataDir, "temporal.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, nil, err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// The dev server must not outlive this process, or a restart would find two servers on
	// one database file.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close() // the start error is the one to report
		return nil, nil, fmt.Errorf("start the Temporal dev server: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited); _ = logFile.Close() }() // its exit status after a stop says nothing; its log is written as it goes
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM) // a process already gone is what we want
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill() // best effort after SIGTERM went unheeded: Pdeathsig ends it with us anyway
			<-exited
		}
	}
	return stop, exited, nil
}

// pickUIPort returns the web UI port to use and a note for the start message: port itself when
// it is free, a free port when port is 0, or when port is busy and not explicit (the note then
// says so); a busy explicit port is an error.
func pickUIPort(port int, explicit bool) (int, string, error) {
	if port < 0 || port > 65535 {
		return 0, "", fmt.Errorf("--temporal-ui-port must be 0 to 65535, got %d", port)
	}
	if port == 0 {
		p, err := freePort()
		return p, "", err
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err == nil {
		_ = l.Close() // a probe listener: only its port number is kept
		return port, "", nil
	}
	if explicit {
		return 0, "", fmt.Errorf("the Temporal web UI port %d is busy: choose another with --temporal-ui-port", port)
	}
	p, err := freePort()
	if err != nil {
		return 0, "", err
	}
	return p, fmt.Sprintf(" (port %d is busy; set --temporal-ui-port to choose)", port), nil
}

// dialUntilReady dials opts until its namespace answers, the process exits, or 60 s pass.
func dialUntilReady(ctx context.Context, opts client.Options, exited <-chan struct{}) (client.Client, error) {
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := client.Dial(opts)
		if err == nil {
			_, err = c.WorkflowService().DescribeNamespace(ctx, describeNamespace(opts.Namespace))
			if err == nil {
				return c, nil
			}
			c.Close()
		}
		if time.Now().After(deadline) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-exited:
			return nil, errors.New("the process exited")
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// temporalCLI finds the Temporal CLI: the configured path, ./bin/temporal (installed by make),
// then PATH.
func temporalCLI(configured string) (string, error) {
	if configured != "" {
		return configured, nil
	}
	if p, err := filepath.Abs(filepath.Join("bin", "temporal")); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath("temporal"); err == nil {
		return p, nil
	}
	return "", errors.New("the Temporal CLI is not installed: run `make run` (it installs ./bin/temporal) or set TEMPORAL_ADDRESS")
}

// dialTemporal dials TEMPORAL_ADDRESS with a's client options (the SDK's logs and metrics
// into a's logger and registry).
func dialTemporal(a *app.App) (client.Client, error) {
	addr := a.Config.TemporalAddress
	if addr == "" {
		return nil, errors.New("TEMPORAL_ADDRESS is not set")
	}
	c, err := client.Dial(a.ClientOptions(addr))
	if err != nil {
		return nil, fmt.Errorf("TEMPORAL_ADDRESS %s: %w", addr, err)
	}
	return c, nil
}

func describeNamespace(ns string) *workflowservice.DescribeNamespaceRequest {
	return &workflowservice.DescribeNamespaceRequest{Namespace: ns}
}
