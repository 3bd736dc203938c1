package app

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/agentmemory/agentmemory/activities"
	"github.com/agentmemory/agentmemory/internal/compliance"
	"github.com/agentmemory/agentmemory/internal/events"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/llm"
	"github.com/agentmemory/agentmemory/internal/logs"
	"github.com/agentmemory/agentmemory/worker"
	"github.com/agentmemory/agentmemory/workflows"
)

// WorkerOptions adjust the worker NewWorker builds; the zero value is the binary's.
type WorkerOptions struct {
	// TaskQueue is polled instead of AGENTMEMORY_TASK_QUEUE (tests: one queue per test).
	TaskQueue string
	// Model distils notes instead of the Ollama client at OLLAMA_HOST.
	Model activities.Model
	// ReconcileMinAge is the minimum age of the rows a sweep's reconcile step restarts
	// (0: compliance.DefaultReconcileMinAge).
	ReconcileMinAge time.Duration
	// NoReconcile leaves the retention sweep's reconcile step without a starter, so a sweep
	// restarts no orphaned workflow (rigs that check rows as the API left them).
	NoReconcile bool
}

// Starter is the reconciler's workflow starter on taskQueue ("" is AGENTMEMORY_TASK_QUEUE):
// it restarts a distillation with the same inputs the API starts it with
// (AGENTMEMORY_APPROVAL_DEADLINE).
func (a *App) Starter(c client.Client, taskQueue string) worker.Starter {
	if taskQueue == "" {
		taskQueue = a.Config.TaskQueue
	}
	return worker.Starter{Client: c, TaskQueue: taskQueue, ApprovalDeadline: a.Config.ApprovalDeadline}
}

// NewWorker returns a Temporal worker on c with every workflow and activity registered over
// a's services, waiting up to AGENTMEMORY_SHUTDOWN_TIMEOUT for running activities on Stop.
// It is not started. Errors: the model client does not build (a malformed OLLAMA_HOST).
func (a *App) NewWorker(c client.Client, o WorkerOptions) (sdkworker.Worker, error) {
	tq := o.TaskQueue
	if tq == "" {
		tq = a.Config.TaskQueue
	}
	model := o.Model
	if model == nil {
		m, err := llm.New(llm.Config{Host: a.Config.OllamaHost, Model: a.Config.OllamaModel, DetectorModel: a.Config.DetectorModel})
		if err != nil {
			return nil, err
		}
		model = m
	}
	acts := &activities.Activities{Turns: a.Turns, Model: model, Proposals: a.Proposals, Now: a.Now,
		ModelOutage: &logs.Outage{Log: a.Log.With("component", "distill"), Name: "model server", Now: a.Now}}
	ca := &activities.ComplianceActivities{Compliance: a.Compliance, ReconcileMinAge: o.ReconcileMinAge}
	if !o.NoReconcile {
		ca.Workflows = a.Starter(c, tq)
	}
	w := worker.New(c, tq, sdkworker.Options{WorkerStopTimeout: a.Config.ShutdownTimeout,
		Interceptors: []interceptor.WorkerInterceptor{&keyCheckPerActivity{}}}, acts, ca)
	worker.RegisterKnowledge(w, &activities.KnowledgeActivities{Knowledge: a.Knowledge,
		EmbedderOutage: &logs.Outage{Log: a.Log.With("component", "knowledge"), Name: "embedder", Now: a.Now}})
	worker.RegisterFeed(w, a.FeedActivities())
	return w, nil
}

// keyCheckPerActivity makes each activity execution one request for the key cache
// (keystore.ForRequest, issue 29 §2): the cache compares the key store's destroy generation
// once per activity, at its first cached key read, instead of at every one (an erasure's
// content probe or a distillation opens many notes).
type keyCheckPerActivity struct {
	interceptor.WorkerInterceptorBase
}

// InterceptActivity implements interceptor.WorkerInterceptor.
func (*keyCheckPerActivity) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	a := &keyCheckActivity{}
	a.Next = next
	return a
}

// keyCheckActivity marks the activity's context as one request.
type keyCheckActivity struct {
	interceptor.ActivityInboundInterceptorBase
}

// ExecuteActivity implements interceptor.ActivityInboundInterceptor.
func (a *keyCheckActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (interface{}, error) {
	return a.Next.ExecuteActivity(keystore.ForRequest(ctx), in)
}

// Worker is a started worker with its reconcile loop.
type Worker struct {
	sdkworker.Worker
	loop *worker.ReconcileLoop
}

// Stop ends the reconcile loop (cancelling a running pass), then the worker (waiting up to
// AGENTMEMORY_SHUTDOWN_TIMEOUT for running activities).
func (w *Worker) Stop() {
	w.loop.Stop()
	w.Worker.Stop()
}

// StartWorker is the binary's worker: it ensures the retention schedule
// (AGENTMEMORY_SWEEP_EVERY), starts NewWorker's worker, reconciles orphaned workflows once,
// then every AGENTMEMORY_RECONCILE_INTERVAL (issue 11 §3).
func (a *App) StartWorker(c client.Client) (*Worker, error) {
	if err := worker.EnsureRetentionSchedule(context.Background(), c, a.Config.TaskQueue, a.Config.SweepEvery); err != nil {
		return nil, err
	}
	w, err := a.NewWorker(c, WorkerOptions{})
	if err != nil {
		return nil, err
	}
	if err := w.Start(); err != nil {
		return nil, err
	}
	starter := a.Starter(c, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	a.Reconcile(ctx, starter)
	cancel()
	a.StartSinks(context.Background(), c)
	loop := &worker.ReconcileLoop{Interval: a.Config.ReconcileInterval, Timeout: time.Minute,
		Run: func(ctx context.Context) { a.Reconcile(ctx, starter); a.StartSinks(ctx, c) }}
	loop.Start()
	return &Worker{Worker: w, loop: loop}, nil
}

// Reconcile starts the missing workflows of erasures and exports (pending or running) and of
// distillations (drafting) whose request died or failed between its commit and its workflow
// start, and fails those rows whose workflow ended without finishing them. A failure is
// logged (code and scrubbed cause), not returned: the next pass retries.
func (a *App) Reconcile(ctx context.Context, starter compliance.WorkflowStarter) {
	res, err := a.Compliance.Reconcile(ctx, starter, "", compliance.DefaultReconcileMinAge)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return // shutting down
		}
		code, cause := logs.Scrub(err)
		a.Log.Warn("reconcile of orphaned workflows failed; the next pass retries",
			"checked", res.Checked, "started", res.Started, "code", code, "cause", cause)
		return
	}
	if res.Started > 0 || res.Failed > 0 {
		a.Log.Info("reconciled orphaned compliance workflows", "checked", res.Checked, "started", res.Started,
			"failed_ended", res.Failed)
	}
}

// StartRelay runs the outbox relay until ctx ends (AM-13, GOV-4): webhooks always, Kafka
// when KAFKA_BROKERS is set (otherwise the outbox only fills and GET /v1/events reads it).
// Several workers may run it at once. The returned stop cancels it and waits.
func (a *App) StartRelay(ctx context.Context) (stop func()) {
	r := &events.Relay{
		DB: a.DB, Logger: a.Log, Metrics: a.EventMetrics, Now: a.Now,
		Webhooks: &events.Webhooks{Docs: a.Docs, Signer: events.Signer{Hasher: &a.Hasher}, AllowPrivate: a.Config.WebhookAllowPrivate},
	}
	var kafka *events.Kafka
	if len(a.Config.KafkaBrokers) > 0 {
		kafka = events.NewKafka(a.Config.KafkaBrokers, a.Config.KafkaTopic)
		r.Publisher = kafka
		a.Log.Info("events relay to Kafka on", "topic", a.Config.KafkaTopic, "brokers", len(a.Config.KafkaBrokers))
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = r.Run(ctx) }) // Run returns only nil, when ctx ends: each pass's errors are logged and retried inside
	return func() {
		cancel()
		wg.Wait()
		if kafka != nil {
			_ = kafka.Close() // at shutdown, after the relay stopped: nothing is left to send or report to
		}
	}
}

// StartKeyUsage writes the keys' noted uses (a.KeyUsage) every auth.UsageResolution until
// stop is called, and once more then; serve and dev run it beside the API. A failed write is logged
// (scrubbed) and retried at the next flush. The returned stop cancels it and waits.
func (a *App) StartKeyUsage(ctx context.Context) (stop func()) {
	// Not ctx's end but stop ends it: serveHTTP stops it after draining, so the uses of the
	// drained requests are written too.
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() {
		a.KeyUsage.Run(ctx, a.DB, a.Now, func(err error) {
			code, cause := logs.Scrub(err)
			a.Log.Warn("key use not recorded; retried at the next flush", "code", code, "cause", cause)
		})
	})
	return func() { cancel(); wg.Wait() }
}

// StartSealer runs the receipt log's safety-net sealer (receipts.Log.Run: every second, seal
// whatever receipts are still unsealed) until ctx ends. serve, worker and dev run it; several
// at once are harmless. The returned stop cancels it and waits.
func (a *App) StartSealer(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { a.Receipts.Run(ctx) })
	return func() {
		cancel()
		wg.Wait()
	}
}

// FeedActivities are the export feed's activities over a's database, documents, signer and
// configuration (AGENTMEMORY_EXPORT_DIR, default export/ in the data dir; KAFKA_BROKERS).
func (a *App) FeedActivities() *activities.FeedActivities {
	dir := a.Config.ExportDir
	if dir == "" {
		dir = filepath.Join(a.Config.DataDir, "export")
	}
	return &activities.FeedActivities{DB: a.DB, Keys: a.Keys, Docs: a.Docs, Dir: dir, Brokers: a.Config.KafkaBrokers, Signer: a.Signer, Now: a.Now}
}

// StartSinks starts the SinkWorkflow of every configured export sink that has none running
// (issue 33): at worker start and on every reconcile pass, so a sink added by a features
// change starts within AGENTMEMORY_RECONCILE_INTERVAL. A running one is left alone (its id
// is the sink's). A failure is logged, scrubbed; the next pass retries.
func (a *App) StartSinks(ctx context.Context, c client.Client) {
	refs, err := a.FeedActivities().ConfiguredSinks(ctx)
	if err != nil {
		code, cause := logs.Scrub(err)
		a.Log.Warn("export sinks not listed; the next pass retries", "code", code, "cause", cause)
		return
	}
	for _, r := range refs {
		_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID: workflows.SinkWorkflowID(r.SpaceID, r.Sink), TaskQueue: a.Config.TaskQueue,
			WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		}, workflows.SinkWorkflow, workflows.SinkInput{SpaceID: r.SpaceID, Sink: r.Sink, Poll: a.Config.ExportPoll})
		if err != nil {
			code, cause := logs.Scrub(err)
			a.Log.Warn("export sink workflow not started; the next pass retries", "space_id", r.SpaceID, "code", code, "cause", cause)
		}
	}
}
