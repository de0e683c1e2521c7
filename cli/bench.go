package cli

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/fieldrelay/fieldrelay/cli/bench"
	"github.com/fieldrelay/fieldrelay/engine/admin"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/server"
	"github.com/spf13/cobra"
)

// The load generator lives in cli/bench; this file is its command: the flags, and the
// admin socket through which it creates tenants on the node of --data.

func (a *app) newBenchCommand() *cobra.Command {
	f := bench.Config{}
	var database, keyFile string
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Load-test a running node with POST /v1/events, or with dispatch cycles, and report throughput and latency",
		Long: "Drive a running node with --conns keep-alive connections, each owned by one worker that posts\n" +
			"realistic events back to back: about 500-byte bodies with a unique idempotency_key, a type,\n" +
			"priority and vertical drawn like a dispatch site's traffic, and a payload near Lyon. Requests\n" +
			"rotate over the API keys of --api-key, or over the first keys of --tenants new mission-critical\n" +
			"tenants (never rate limited) that bench creates through the admin socket of the server running\n" +
			"on --data, or with --database in a central tier's database directly (they are named\n" +
			"bench-<run>-<i> and stay: suspend them afterwards if you like).\n\n" +
			"The run lasts --duration, or --count requests when that is set, after --warmup whose requests\n" +
			"are left out of the figures; Ctrl-C stops it early and still prints the report. A progress line\n" +
			"goes to stderr every second; the report goes to stdout (JSON with --json): requests, errors by\n" +
			"HTTP status (anything but 201) and by transport failure, requests per second, and the latency\n" +
			"of the 201 answers (p50, p90, p99, max in ms). For the self-signed certificate of serve, pass\n" +
			"--ca DATA/tls/cert.pem (the default with --data) or --insecure.\n\n" +
			"With --server-pid, or with --data where the pid is read from the admin socket (Linux), the\n" +
			"report adds the server's CPU time (utime+stime of /proc/PID/stat) and disk writes (write_bytes\n" +
			"of /proc/PID/io) over the measured run, per request, and with --data the growth of\n" +
			"DATA/fieldrelay.db.\n\n" +
			"--workload lifecycle plays the field response instead: each worker creates its own team (one\n" +
			"member near the events, the vertical of the events it posts) in its tenant, then loops over\n" +
			"cycles of six requests: POST /v1/events, POST /v1/teams/dispatch of its team, and PATCH\n" +
			"/v1/missions/:id/status ACK, ON_ROUTE, ON_SITE, COMPLETED (with feedback), which frees the team\n" +
			"for the next cycle. The report adds cycles per second, the cycle's latency, and requests,\n" +
			"errors and latency per step; --count counts cycles.",
		Example: `  fieldrelay bench --data /var/lib/fieldrelay --tenants 8 --conns 64 --duration 30s
  fieldrelay bench --url https://node.example:8443 --ca node-ca.pem --api-key fr_live_… --api-key fr_live_… --count 100000
  fieldrelay bench --url http://127.0.0.1:8080 --api-key "$KEY" --conns 16 --duration 10s --json
  fieldrelay bench --url http://127.0.0.1:8080 --api-key "$KEY" --server-pid "$(pgrep -x fieldrelay)"
  fieldrelay bench --url http://127.0.0.1:8080 --data ./data --tenants 4 --conns 32 --duration 10s --workload lifecycle
  fieldrelay bench --url http://lb.example:8080 --database "$FIELDRELAY_DATABASE" --tenants 10 --conns 64 --duration 30s`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			tuneGC() // a load generator on the node's machine takes as little CPU as it can
			return a.runBench(cmd, f, database, keyFile)
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.URL, "url", "https://127.0.0.1:8443", "base URL of the node")
	fl.StringVar(&f.Path, "path", "/v1/events", "path that the events are posted to")
	fl.IntVar(&f.Conns, "conns", 64, "keep-alive connections, one worker each")
	fl.DurationVar(&f.Duration, "duration", 10*time.Second, "length of the measured run (after the warm-up)")
	fl.Int64Var(&f.Count, "count", 0, "measured requests to send, then stop (wins over --duration; cycles with --workload lifecycle)")
	fl.DurationVar(&f.Warmup, "warmup", time.Second, "warm-up before the measured run, left out of the figures")
	fl.DurationVar(&f.Timeout, "timeout", 30*time.Second, "timeout of one request")
	fl.StringSliceVar(&f.APIKeys, "api-key", nil, "API key to send as x-svc-api-key (repeat, or comma-separate, to rotate over several; wins over --data)")
	fl.StringVar(&f.Data, "data", "", "data directory of the running node: create --tenants tenants through its admin socket")
	fl.StringVar(&database, "database", "", "postgres:// URL of the central tier's database behind --url: create --tenants tenants in it directly")
	fl.StringVar(&keyFile, secretKeyFlag, "", "with --database: the key file that opens the database's encrypted secrets")
	fl.IntVar(&f.Tenants, "tenants", 4, "tenants to create with --data or --database")
	fl.BoolVar(&f.Insecure, "insecure", false, "skip the verification of the node's TLS certificate")
	fl.StringVar(&f.CA, "ca", "", "PEM file of the CA (or self-signed certificate) to trust (default with --data: DATA/tls/cert.pem when it exists)")
	fl.BoolVar(&f.JSON, "json", false, "print the report as JSON")
	fl.StringVar(&f.Workload, "workload", bench.WorkloadEvents, "what each worker loops over: events (POST /v1/events) or lifecycle (event, dispatch of its own team, ACK, ON_ROUTE, ON_SITE, COMPLETED)")
	fl.IntVar(&f.ServerPID, "server-pid", 0, "pid of the server: report its CPU time and disk writes per request from /proc/PID (Linux; default with --data: the pid behind DATA/admin.sock)")
	return cmd
}

// runBench runs the bench that the flags describe until the run ends or a signal stops it
// (the report is printed all the same). With database, the tenants are created in that
// database directly, as `tenant create --database` does; else through the admin socket of
// the node on f.Data.
func (a *app) runBench(cmd *cobra.Command, f bench.Config, database, keyFile string) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if database != "" && len(f.APIKeys) == 0 {
		db, err := a.openDatabaseURL(ctx, database, keyFile, slog.New(slog.DiscardHandler))
		if err != nil {
			return err
		}
		defer db.Close()
		f.CreateTenant = func(ctx context.Context, in model.CreateTenantInput) (model.CreatedTenant, error) {
			raw, err := json.Marshal(in)
			if err != nil {
				return model.CreatedTenant{}, err
			}
			var res model.CreatedTenant
			err = a.runOp(ctx, db, admin.OpTenantCreate, raw, &res)
			return res, err
		}
	} else if f.Data != "" {
		sock := adminSocket(f.Data)
		f.AdminSocket = sock
		f.CreateTenant = func(ctx context.Context, in model.CreateTenantInput) (model.CreatedTenant, error) {
			var res model.CreatedTenant
			if err := server.CallAdmin(ctx, sock, admin.OpTenantCreate, in, &res); err != nil {
				if errors.Is(err, server.ErrAdminUnavailable) {
					return res, model.Errorf(model.KindUnavailable,
						"no fieldrelay server answers on %s: start `fieldrelay serve --data %s` first, or pass --api-key", sock, f.Data)
				}
				return res, err
			}
			return res, nil
		}
	}
	f.Version = version
	return bench.Run(ctx, f, cmd.OutOrStdout(), cmd.ErrOrStderr())
}
