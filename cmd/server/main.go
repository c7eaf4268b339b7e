// Command taskactions is the TaskAction API server. With no kubeconfig it
// runs its own control plane (etcd and the Kubernetes API server, in
// process) on --data-dir; given one, it runs against that cluster.
//
// Every flag can also be set as TASKACTIONS_<FLAG>, e.g. --data-dir as
// TASKACTIONS_DATA_DIR; a flag on the command line wins.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"

	"taskactions/internal/app"
	"taskactions/internal/controlplane"
	"taskactions/internal/logging"
	"taskactions/internal/tracing"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	cfg, logLevel, logFormat, err := parseFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "taskactions:", err)
		return 2
	}
	log, err := logging.New(os.Stderr, logLevel, logging.Format(logFormat))
	if err != nil {
		fmt.Fprintln(os.Stderr, "taskactions:", err)
		return 2
	}
	logging.RouteKlog(log)
	stopProfiles := startProfiles()
	defer stopProfiles()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a, err := app.Start(ctx, cfg, log)
	if err != nil && ctx.Err() != nil {
		// Stopped (SIGTERM, Ctrl-C) before it was ready: a stop, not a failure.
		log.Info().Err(err).Msg("stopped while starting")
		return 0
	}
	if err == nil {
		printLogin(os.Stderr, a, cfg, log)
		err = a.Serve(ctx)
	}
	if err != nil {
		if errors.Is(err, controlplane.ErrDataDirLocked) {
			log.Error().Err(err).Msg("another server is using this data dir; stop it or pick another --data-dir")
		} else {
			log.Error().Err(err).Msg("server failed")
		}
		return 1
	}
	return 0
}

// printLogin shows a person at a terminal how to get in: a one-time login
// link for the dashboard, the way Jupyter does, and where the API token is.
// A log that is not a terminal gets no link: logs are kept and shipped, and
// the link is a credential until it is used.
func printLogin(out *os.File, a *app.App, cfg app.Config, log zerolog.Logger) {
	link := a.LoginURL()
	if link == "" {
		return
	}
	token := filepath.Join(cfg.DataDir, app.FileAPIToken)
	if !isatty.IsTerminal(out.Fd()) {
		log.Info().Str("token", token).Msg("dashboard: log in with the token in this file (no login link is printed when stderr is not a terminal)")
		return
	}
	fmt.Fprintf(out, "\n  Dashboard: %s\n  (a one-time login link, good for an hour)\n  API: curl -H \"Authorization: Bearer $(cat %s)\" %s/api/v1/session\n\n",
		link, token, a.URL())
}

func parseFlags(args []string) (cfg app.Config, logLevel, logFormat string, err error) {
	cfg = app.Defaults()
	fs := flag.NewFlagSet("taskactions", flag.ContinueOnError)
	fs.StringVar(&cfg.Listen, "listen", cfg.Listen, "HTTP listen address; loopback by default")
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "data dir of the embedded control plane (etcd, certificates, kubeconfig)")
	fs.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "run against this cluster instead of the embedded control plane (else KUBECONFIG, else in-cluster)")
	fs.StringVar(&cfg.NamespaceTemplate, "namespace-template", cfg.NamespaceTemplate, "namespace of an action, from {project} and {domain}")
	fs.StringVar(&cfg.TLSCert, "tls-cert", "", "serve HTTPS (and HTTP/2) with this certificate (PEM)")
	fs.StringVar(&cfg.TLSKey, "tls-key", "", "private key of --tls-cert (PEM)")
	fs.IntVar(&cfg.Workers, "workers", cfg.Workers, "action manager workers")
	fs.DurationVar(&cfg.SSEHeartbeat, "sse-heartbeat", cfg.SSEHeartbeat, "a keep-alive comment on an event stream that wrote nothing for this long")
	fs.IntVar(&cfg.SSEReplayEvents, "sse-replay-events", cfg.SSEReplayEvents, "events kept for stream resumes")
	fs.DurationVar(&cfg.SSEReplayAge, "sse-replay-age", cfg.SSEReplayAge, "how long events are kept for stream resumes")
	fs.IntVar(&cfg.SSEMailbox, "sse-buffer", cfg.SSEMailbox, "distinct actions a slow stream may have pending before it is reset")
	fs.StringVar(&cfg.ExecutorTaskTypes, "executor-task-types", cfg.ExecutorTaskTypes, `task types the built-in executor runs: auto ("*" on the embedded control plane, failing other types as no executor outside runs them; none against a cluster), "*" every type it has a plugin for, "" none, or a comma list (other types are left to an executor outside)`)
	fs.StringVar(&cfg.KargoControllers, "kargo-controllers", cfg.KargoControllers, "run the Stage controller and the Promotion orchestrator (on a cluster under a Lease, one replica at a time): auto = only on the embedded control plane, where no Kargo controller runs")
	fs.StringVar(&cfg.ExecutorProcess, "executor-process", cfg.ExecutorProcess, "enable the process plugin (runs commands sent over HTTP): auto = only embedded on loopback")
	fs.StringVar(&cfg.ProcessSandbox, "process-sandbox", cfg.ProcessSandbox, "confine process tasks to their attempt (Landlock, a mount namespace, uid 65534 when root): required = refuse process tasks where Landlock is missing; best-effort = run them with what there is; auto = required unless --listen is loopback; off = run them as the server")
	fs.BoolVar(&cfg.ProcessCgroups, "process-cgroups", cfg.ProcessCgroups, "run each process task in a cgroup of its own where the server may create one (cgroup v2), so that what it starts dies with it; false, or without cgroups: the server is a child subreaper and sweeps what tasks leave")
	fs.Var(listFlag{&cfg.ProcessSandboxRead}, "process-sandbox-read", "more dirs a confined process task may read and execute besides the system's (comma list of absolute paths), e.g. of its scripts")
	fs.IntVar(&cfg.ExecutorWorkers, "executor-workers", cfg.ExecutorWorkers, "concurrent reconciles of the executor")
	fs.IntVar(&cfg.MaxSystemFailures, "max-system-failures", cfg.MaxSystemFailures, "system failures after which an action fails permanently")
	fs.StringVar(&cfg.LeaderElectionNamespace, "leader-election-namespace", cfg.LeaderElectionNamespace, "namespace of the Leases on a cluster (the executor's, and the Kargo controllers')")
	fs.DurationVar(&cfg.LeaderElection.LeaseDuration, "leader-election-lease-duration", cfg.LeaderElection.LeaseDuration, "how long a Lease unrenewed holds before another replica takes it (a SIGKILLed leader's failover)")
	fs.DurationVar(&cfg.LeaderElection.RenewDeadline, "leader-election-renew-deadline", cfg.LeaderElection.RenewDeadline, "how long after its last renewal a leader stops its work and its writes")
	fs.DurationVar(&cfg.LeaderElection.RetryPeriod, "leader-election-retry-period", cfg.LeaderElection.RetryPeriod, "how often replicas try the Lease (a stopped leader releases it: the next takes it within this)")
	fs.DurationVar(&cfg.ShutdownGracePeriod, "shutdown-grace-period", cfg.ShutdownGracePeriod, "how long a stop waits for requests in flight")
	fs.StringVar(&cfg.Auth, "auth", cfg.Auth, "token: every API request needs a token or a session; kubernetes: also tokens the cluster accepts (TokenReview), their requests authorized by the cluster (SubjectAccessReview); none: no authentication (loopback --listen only)")
	fs.StringVar(&cfg.AuthTokensFile, "auth-tokens-file", "", "YAML file of subjects, their tokens and grants (see docs/operations.md); the admin token in <data-dir>/api-token works too")
	fs.Var(listFlag{&cfg.AllowedHosts}, "allowed-hosts", "Host names to answer besides the listen host, localhost, 127.0.0.1 and ::1 (comma list; * for any)")
	fs.Var(listFlag{&cfg.PromotionHTTPAllow}, "promotion-http-allow", "hosts the http promotion step may call (comma list of host, host:port, IP or CIDR; * for any); none by default, loopback included")
	fs.Var(listFlag{&cfg.AnalysisHTTPAllow}, "analysis-http-allow", "hosts AnalysisRuns' web and prometheus metrics may call (the syntax of --promotion-http-allow); none by default, loopback included")
	fs.BoolVar(&cfg.AnalysisJobs, "analysis-jobs", false, "let AnalysisRuns' job metrics run, each measurement a local process of the process plugin (the image is not pulled); off by default")
	fs.BoolVar(&cfg.PromotionGitLocal, "promotion-git-local", false, "let the git promotion steps use file:// URLs and local paths (repositories on this server's disk)")
	fs.StringVar(&cfg.KargoCredentialsFile, "kargo-credentials-file", "", "YAML file of repositories' credentials for the promotion steps (see docs/kargo.md); on a cluster Kargo's labelled Secrets come first")
	fs.BoolVar(&cfg.KargoCredentialsOverHTTP, "kargo-credentials-over-http", false, "also give credentials to http:// repositories (sent in clear; Kargo's ALLOW_CREDENTIALS_OVER_HTTP)")
	fs.Var(listFlag{&cfg.CORSOrigins}, "cors-origins", "origins whose pages may call the API (comma list of scheme://host[:port]); none by default")
	fs.StringVar(&cfg.MetricsListen, "metrics-listen", "", "also serve /metrics, without a token, on this address")
	fs.IntVar(&cfg.MaxConnections, "max-connections", 0, "bound on open HTTP connections (0: derived from the file descriptor limit)")
	fs.IntVar(&cfg.MaxProcesses, "max-processes", 0, "bound on process tasks running at once; more wait for a slot (0: derived from the file descriptor limit)")
	fs.IntVar(&cfg.MaxStreams, "max-streams", 0, "bound on open event streams; past it a stream gets 503 (0: derived from the file descriptor limit)")
	fs.StringVar(&cfg.HistoryDSN, "history-dsn", "", "history store: empty for SQLite in <data-dir>/history.db, postgres://... for PostgreSQL, or a SQLite file path")
	fs.DurationVar(&cfg.Retention, "retention", cfg.Retention, "how long a finished action stays in the control plane once history has it (0: forever)")
	fs.DurationVar(&cfg.OutputSweep, "output-sweep", cfg.OutputSweep, "how often to remove the output dirs of deleted runs from this replica's disk (0: never)")
	fs.Int64Var(&cfg.EtcdQuota, "etcd-quota", 0, "space quota of the embedded etcd in bytes (0: etcd's default, 2 GiB)")
	fs.Int64Var(&cfg.LogMaxBytes, "log-max-bytes", cfg.LogMaxBytes, "bytes of stdout and stderr kept per attempt of a task; the rest is dropped and counted")
	fs.StringVar(&cfg.TraceLinkTemplate, "trace-link-template", "", "URL of a trace in your tracing backend, {traceId} where its id goes (https://jaeger.example/trace/{traceId}): the dashboard links actions to their run's trace (traces are exported when OTEL_EXPORTER_OTLP_ENDPOINT is set)")
	fs.StringVar(&logLevel, "log-level", "info", "trace, debug, info, warn or error")
	fs.StringVar(&logFormat, "log-format", "", "json or console (default: console on a terminal, else json)")
	if err = fs.Parse(args); err != nil {
		return cfg, "", "", err
	}
	if fs.NArg() > 0 {
		return cfg, "", "", fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if err = applyEnv(fs, os.LookupEnv); err != nil {
		return cfg, logLevel, logFormat, err
	}
	// Traces: OpenTelemetry's own variables, not flags (OTEL_EXPORTER_OTLP_*,
	// OTEL_SERVICE_NAME, ...), as every OpenTelemetry SDK reads them.
	cfg.Tracing, err = tracing.FromEnv(os.LookupEnv)
	return cfg, logLevel, logFormat, err
}

// applyEnv sets each flag not given on the command line from
// TASKACTIONS_<FLAG>.
func applyEnv(fs *flag.FlagSet, lookup func(string) (string, bool)) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] || err != nil {
			return
		}
		name := EnvName(f.Name)
		if v, ok := lookup(name); ok {
			if e := f.Value.Set(v); e != nil {
				err = fmt.Errorf("%s=%q: %w", name, v, e)
			}
		}
	})
	return err
}

// listFlag is a comma-separated list flag.
type listFlag struct{ list *[]string }

func (f listFlag) String() string {
	if f.list == nil {
		return ""
	}
	return strings.Join(*f.list, ",")
}

func (f listFlag) Set(s string) error {
	*f.list = nil
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*f.list = append(*f.list, v)
		}
	}
	return nil
}

// EnvName is the environment variable of a flag.
func EnvName(flagName string) string {
	return "TASKACTIONS_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}
