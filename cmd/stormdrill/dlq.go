package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/model/runtime/queue"
)

const dlqExamples = `  stormdrill dlq list --store sqlite:out/live-restart/queue.db --reason max-attempts
  stormdrill dlq show --store sqlite:out/live-restart/queue.db 'evt-000012:acme-0' --json
  stormdrill dlq replay --store sqlite:out/live-restart/queue.db --reason max-attempts --batch 10 --rate 2 --dry-run
  stormdrill dlq replay --store sqlite:out/live-restart/queue.db --reason max-attempts --batch 10`

// maxErrorColumn bounds the last-error column of the table.
const maxErrorColumn = 60

// dlqNow is the wall clock the dlq command measures ages and replays
// from; a test moves it on rather than waiting for the wall clock.
var dlqNow = time.Now

func cmdDLQ(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintf(stdout, "Usage: stormdrill dlq list|show|replay --store sqlite:PATH [flags]\n\nExamples:\n%s\n", dlqExamples)
			return nil
		}
		return usagef("stormdrill dlq: want list, show or replay (see --help)")
	}
	sub, args := args[0], args[1:]
	fs := newFlags("dlq "+sub, "--store sqlite:PATH [flags]", dlqExamples, stdout)
	store := fs.String("store", "", "the durable queue: sqlite:PATH (a live run writes DIR/queue.db) or postgres://USER:PASS@127.0.0.1:PORT/DB")
	reason := fs.String("reason", "", "only this dead-letter reason (permanent, max-attempts, window-expired, ...)")
	partner := fs.String("partner", "", "only this partner (subscriber), e.g. acme-0")
	cohort := fs.String("cohort", "", "only this cohort (the drill's partner name), e.g. acme")
	var older durationFlag
	fs.Var(&older, "older-than", "only entries dead-lettered at least this long ago on the wall clock, e.g. 10m")
	limit := fs.Int("limit", 0, "at most this many entries (0: no limit beyond the store's)")
	asJSON := fs.Bool("json", false, "JSON output for scripts")
	var batch *int
	var rate *float64
	var dryRun, all *bool
	switch sub {
	case "list", "show":
	case "replay":
		all = fs.Bool("all", false, "replay every dead letter, whatever its reason (permanent ones included); without it, --reason is required")
		batch = fs.Int("batch", queue.DefaultReplayBatch, "dead letters moved per transaction")
		rate = fs.Float64("rate", 0, "batches per second (0: no pause between batches)")
		dryRun = fs.Bool("dry-run", false, "count what would move, move nothing")
	default:
		return usagef("stormdrill dlq: unknown subcommand %q; want list, show or replay", sub)
	}
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *store == "" {
		return usagef("stormdrill dlq %s: --store is required (see --help)", sub)
	}
	if sub == "show" && len(pos) != 1 {
		return usagef("stormdrill dlq show: name exactly one delivery id")
	}
	if sub != "show" && len(pos) > 0 {
		return usagef("stormdrill dlq %s: unexpected argument %q", sub, pos[0])
	}
	if sub == "replay" {
		if err := checkReplay(*reason, *partner, *cohort, *all, *batch, *rate); err != nil {
			return err
		}
	}
	if *reason != "" && !knownReason(*reason) {
		return usagef("stormdrill dlq: --reason %q: want one of %s", *reason, strings.Join(reasonNames(), ", "))
	}
	if *limit < 0 {
		return usagef("stormdrill dlq: --limit %d: must not be negative", *limit)
	}
	st, err := openStore("dlq "+sub, *store)
	if err != nil {
		return err
	}
	defer st.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A live run at a speed other than 1 writes drill-clock instants; the
	// clock it recorded turns them into the wall-clock instants of the run,
	// which is what this command shows and what --older-than measures
	// from: the DLQ outlives the run, whose drill clock has stopped.
	clock, err := st.Clock(ctx)
	if err != nil {
		return runError{err}
	}
	f := queue.DLQFilter{Reason: *reason, Partner: *partner, Cohort: *cohort, Limit: *limit}
	now := dlqNow()
	f.Now, f.OlderThan = clock.At(now), clock.At(now).Sub(clock.At(now.Add(-time.Duration(older))))
	switch sub {
	case "list":
		return dlqList(ctx, st, clock, f, *asJSON, stdout)
	case "show":
		return dlqShow(ctx, st, clock, pos[0], *asJSON, stdout)
	}
	req := model.ReplayRequest{Reason: *reason, Partner: *partner, Cohort: *cohort, All: *all, Batch: *batch, Rate: *rate}
	return dlqReplay(ctx, st, clock, f, req, *dryRun, *asJSON, stdout)
}

// dlqReplay moves the dead letters f matches back into the queue (or, on
// a dry run, counts them) and says what it did.
func dlqReplay(ctx context.Context, st queue.Store, clock queue.Clock, f queue.DLQFilter, req model.ReplayRequest, dryRun, asJSON bool, stdout io.Writer) error {
	who := os.Getenv("USER")
	if who == "" {
		who = "stormdrill"
	}
	// Replayed deliveries run from now on the store's clock.
	res, err := queue.RunReplay(ctx, st, req, f, queue.ReplayOptions{DryRun: dryRun, Who: who,
		Now: func() time.Time { return clock.At(dlqNow()) }})
	if err != nil {
		var pe *queue.ReplayProblemError
		if errors.As(err, &pe) || strings.Contains(err.Error(), "rate") {
			return usageError{err}
		}
		return runError{err}
	}
	if asJSON {
		return writeJSONOut(stdout, map[string]any{"matched": res.Matched, "moved": res.Moved, "batches": res.Batches,
			"dry_run": dryRun, "who": who, "batch_size": req.Batch})
	}
	if dryRun {
		fmt.Fprintf(stdout, "dry run: %d dead letters match; a replay would move them in %d batches of at most %d (audit record written)\n", res.Matched, res.Batches, req.Batch)
		return nil
	}
	fmt.Fprintf(stdout, "replayed %d of %d matching dead letters in %d batches of at most %d, as %s (one audit record per batch)\n", res.Moved, res.Matched, res.Batches, req.Batch, who)
	return nil
}

// checkReplay refuses a replay's flags before the store is opened.
func checkReplay(reason, partner, cohort string, all bool, batch int, rate float64) error {
	if err := checkReplayScope(reason, partner, cohort, all); err != nil {
		return err
	}
	if batch < 1 || batch > queue.MaxReplayBatch {
		return usagef("stormdrill dlq replay: --batch %d: must be between 1 and %d", batch, queue.MaxReplayBatch)
	}
	if rate < 0 {
		return usagef("stormdrill dlq replay: --rate %v: must not be negative", rate)
	}
	return nil
}

// openStore opens the durable queue a command works on. The file must
// exist: opening a mistyped path would create an empty queue and report
// nothing, and a memory: store is empty by construction. Every problem is a
// usage error (exit 2).
func openStore(cmd, dsn string) (queue.Store, error) {
	scheme, path, ok := strings.Cut(dsn, ":")
	switch {
	case !ok:
		return nil, usagef("stormdrill %s: --store %q: want sqlite:PATH or postgres://…", cmd, queue.RedactDSN(dsn))
	case strings.EqualFold(scheme, "memory"):
		return nil, usagef("stormdrill %s: --store %q: an in-memory store starts empty; want sqlite:PATH or postgres://…", cmd, queue.RedactDSN(dsn))
	case strings.EqualFold(scheme, "sqlite") && path != "":
		fi, err := os.Stat(path)
		if err != nil {
			return nil, usagef("stormdrill %s: --store %q: no queue there (%v); a live run writes one as DIR/queue.db", cmd, queue.RedactDSN(dsn), errors.Unwrap(err))
		}
		if !fi.Mode().IsRegular() {
			return nil, usagef("stormdrill %s: --store %q: not a file", cmd, queue.RedactDSN(dsn))
		}
	}
	st, err := queue.Open(dsn)
	if err != nil {
		return nil, usagef("stormdrill %s: --store: %s", cmd, queue.RedactMessage(err.Error(), dsn))
	}
	return st, nil
}

func knownReason(r string) bool {
	_, ok := model.ParseReason(r)
	return ok
}

func reasonNames() []string { return model.ReasonNames() }

type dlqEntryJSON struct {
	ID        string    `json:"id"`
	Event     string    `json:"event"`
	Partner   string    `json:"partner"`
	Cohort    string    `json:"cohort"`
	Reason    string    `json:"reason"`
	LastError string    `json:"last_error"`
	Attempts  int       `json:"attempts"`
	Created   time.Time `json:"created"`
	FirstSeen time.Time `json:"first_seen,omitzero"`
	DeadAt    time.Time `json:"dead_at"`
}

func entryJSON(d queue.DeadLetter) dlqEntryJSON {
	return dlqEntryJSON{ID: d.ID, Event: d.Event, Partner: d.Partner, Cohort: d.Cohort, Reason: d.Reason, LastError: d.LastError,
		Attempts: d.Attempts, Created: d.Created, FirstSeen: d.FirstSeen, DeadAt: d.DeadAt}
}

// onWall turns a dead letter's times into wall-clock instants.
func onWall(c queue.Clock, d queue.DeadLetter) queue.DeadLetter {
	d.Created, d.FirstSeen, d.DeadAt = c.Wall(d.Created), c.Wall(d.FirstSeen), c.Wall(d.DeadAt)
	return d
}

func dlqList(ctx context.Context, st queue.Store, clock queue.Clock, f queue.DLQFilter, asJSON bool, stdout io.Writer) error {
	ds, err := st.DeadLetters(ctx, f)
	if err != nil {
		return runError{err}
	}
	for i := range ds {
		ds[i] = onWall(clock, ds[i])
	}
	if asJSON {
		out := make([]dlqEntryJSON, 0, len(ds))
		for _, d := range ds {
			out = append(out, entryJSON(d))
		}
		return writeJSONOut(stdout, out)
	}
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPARTNER\tREASON\tATTEMPTS\tDEAD AT\tLAST ERROR")
	for _, d := range ds {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", d.ID, d.Partner, d.Reason, d.Attempts, d.DeadAt.Format(time.RFC3339), clipText(d.LastError, maxErrorColumn))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d dead letters\n", len(ds))
	return nil
}

func dlqShow(ctx context.Context, st queue.Store, clock queue.Clock, id string, asJSON bool, stdout io.Writer) error {
	ds, err := st.DeadLetters(ctx, queue.DLQFilter{})
	if err != nil {
		return runError{err}
	}
	var found *queue.DeadLetter
	for i := range ds {
		if ds[i].ID == id {
			found = &ds[i]
			break
		}
	}
	if found == nil {
		return usagef("stormdrill dlq show: %q is not in the dead-letter queue", id)
	}
	*found = onWall(clock, *found)
	hist, err := st.Attempts(ctx, id)
	if err != nil {
		return runError{err}
	}
	if asJSON {
		type attempt struct {
			Ordinal int       `json:"ordinal"`
			Started time.Time `json:"started"`
			Ended   time.Time `json:"ended"`
			Status  int       `json:"status"`
			Error   string    `json:"error"`
			Owner   string    `json:"owner"`
		}
		out := struct {
			dlqEntryJSON
			PayloadBytes int       `json:"payload_bytes"`
			History      []attempt `json:"attempts_history"`
		}{dlqEntryJSON: entryJSON(*found), PayloadBytes: len(found.Payload), History: []attempt{}}
		for _, a := range hist {
			out.History = append(out.History, attempt{a.Ordinal, clock.Wall(a.Started), clock.Wall(a.Ended), a.Status, a.Error, a.Owner})
		}
		return writeJSONOut(stdout, out)
	}
	fmt.Fprintf(stdout, "id:         %s\nevent:      %s\npartner:    %s (cohort %s)\nreason:     %s\nlast error: %s\nattempts:   %d\ncreated:    %s\ndead at:    %s\npayload:    %d bytes\n",
		found.ID, found.Event, found.Partner, found.Cohort, found.Reason, found.LastError, found.Attempts,
		found.Created.Format(time.RFC3339Nano), found.DeadAt.Format(time.RFC3339Nano), len(found.Payload))
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nATTEMPT\tSTARTED\tTOOK\tSTATUS\tERROR\tOWNER")
	for _, a := range hist {
		// TOOK is drill time, as every duration the tool reports.
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\n", a.Ordinal, clock.Wall(a.Started).Format(time.RFC3339Nano), a.Ended.Sub(a.Started).Round(time.Microsecond), a.Status, clipText(a.Error, maxErrorColumn), a.Owner)
	}
	return tw.Flush()
}

func clipText(s string, n int) string {
	if len(s) > n {
		return s[:n-1] + "…"
	}
	return s
}

func writeJSONOut(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
