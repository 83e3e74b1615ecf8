package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stormdrill/stormdrill/reports"
)

var brokenSenderBuild struct {
	once sync.Once
	bin  string
	err  error
	out  []byte
}

// brokenSender builds drills/external/testdata/broken-sender once per test
// binary: a small retrying sender with a switch for each defect.
func brokenSender(t *testing.T) string {
	t.Helper()
	b := &brokenSenderBuild
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "stormdrill-broken-sender-")
		if err != nil {
			b.err = err
			return
		}
		b.bin = filepath.Join(dir, "broken-sender")
		b.out, b.err = exec.Command("go", "build", "-o", b.bin, "../../drills/external/testdata/broken-sender").CombinedOutput()
	})
	if b.err != nil {
		t.Fatalf("building the broken sender: %v\n%s", b.err, b.out)
	}
	return b.bin
}

// brokenDrill writes testdata/broken-sender.toml with the sender's path and
// defect filled in (and extra lines added before its [system] table) and
// returns its path.
func brokenDrill(t *testing.T, defect, extra string) string {
	t.Helper()
	src, err := os.ReadFile("testdata/broken-sender.toml")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.NewReplacer("${BROKEN_SENDER}", brokenSender(t), "${BROKEN_SENDER_DEFECT}", defect).Replace(string(src))
	if extra != "" {
		s = strings.Replace(s, "\n[system]", "\n"+extra+"\n\n[system]", 1)
	}
	path := filepath.Join(t.TempDir(), "broken-sender.toml")
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBrokenSenderVerdicts runs the same short external drill against a
// correct sender and against each defect of the broken sender, through the
// CLI: the verdict, the exit status and the console's first lines must say
// what went wrong, and every run writes its report. The cases run in
// parallel: each is a few seconds of wall time, mostly waiting.
func TestBrokenSenderVerdicts(t *testing.T) {
	if raceEnabled {
		t.Skip("wall-time drills; they run in the plain test pass")
	}
	brokenSender(t)
	for _, tt := range []struct {
		name, defect, expect string
		code                 int
		// lines are wanted in the console's first lines (the verdict and
		// the findings), in this order.
		lines []string
		check func(t *testing.T, s *reports.Summary)
	}{
		{name: "correct", code: exitOK, lines: []string{"broken-sender: PASS: all 4 gates hold"},
			check: func(t *testing.T, s *reports.Summary) {
				if len(s.Findings) != 0 || s.Amplification == nil || s.Deliveries.DeadLettered == 0 {
					t.Errorf("findings %+v, amplification %v, dead-lettered %d: want none, measured, and acme's dead letters",
						s.Findings, reports.RatioText(s.Amplification), s.Deliveries.DeadLettered)
				}
				if !regexp.MustCompile(`^[0-9a-f]{6}$`).MatchString(s.External.RunID) {
					t.Errorf("run id %q: want 6 hex digits", s.External.RunID)
				}
			}},
		{name: "ingest refuses 20%", defect: "refuse-ingest", code: exitGateFail,
			lines: []string{"broken-sender: FAIL: finding ingest-refused", "  ! ingest-refused: the ingest refused 4 of 24 events (16 deliveries never taken by the system"},
			check: func(t *testing.T, s *reports.Summary) {
				d := s.Deliveries
				if d.Refused != 16 || d.Created != 80 || d.Lost != 0 || s.DeadLetterReasons["queue-full"] != 0 {
					t.Errorf("deliveries %+v, dead letters %v: want 16 refused beside 80 created, none a queue-full dead letter", d, s.DeadLetterReasons)
				}
			}},
		{name: "the same, expected by the drill", defect: "refuse-ingest", expect: `expect = ["ingest-refused"]`, code: exitOK,
			lines: []string{"broken-sender: PASS: all 4 gates hold; 1 expected finding(s)", "  ! ingest-refused: the ingest refused 4 of 24 events"},
			check: func(t *testing.T, s *reports.Summary) {
				if len(s.Findings) != 1 || !s.Findings[0].Expected || !strings.HasSuffix(reports.FindingText(s.Findings[0]), "; expected by the drill") {
					t.Errorf("findings %+v: want the refusal, expected", s.Findings)
				}
			}},
		{name: "no idempotency key", defect: "no-key", code: exitGateFail,
			lines: []string{"broken-sender: FAIL: finding unidentified-attempts; gate amplification <= 3, duplicates == 0, healthy.latency.p99 < 2s failed",
				"attempts could not be identified: they carried no Idempotency-Key header (at acme, healthy); amplification and duplicates are unknown"},
			check: func(t *testing.T, s *reports.Summary) {
				if s.Amplification != nil || s.Duplicates != nil || s.External.Unidentified == 0 {
					t.Errorf("amplification %v, duplicates %v, unidentified %d: want unknown, unknown, some",
						reports.RatioText(s.Amplification), reports.CountText(s.Duplicates), s.External.Unidentified)
				}
				for _, g := range s.Gates {
					if g.Expr == "amplification <= 3" && (g.Pass || !strings.HasPrefix(g.Display, "unknown: ") || !strings.HasSuffix(g.Display, " attempts could not be identified")) {
						t.Errorf("gate %+v: want it failed as unknown, saying why", g)
					}
				}
			}},
		{name: "new key on every retry", defect: "rekey", code: exitGateFail,
			lines: []string{"broken-sender: FAIL: finding unknown-keys; gate amplification <= 3, duplicates == 0 failed",
				"attempts could not be identified: their Idempotency-Key named no delivery of this run, as when a system changes the key on retries (at acme)",
				`key "evt-`},
			check: func(t *testing.T, s *reports.Summary) {
				// The keys it never issued are quoted: the run's own ids
				// (with the run id) changed on retry.
				if d := s.Findings[0].Detail; len(d) == 0 || !strings.HasPrefix(d[0], `key "evt-`+s.External.RunID+"-") {
					t.Errorf("finding detail %q: want the keys quoted, each with the run id %s", d, s.External.RunID)
				}
				for _, c := range s.Cohorts {
					if (c.Name == "acme") != (c.Amplification == nil) {
						t.Errorf("cohort %s amplification %v: want acme's unknown and only acme's", c.Name, reports.RatioText(c.Amplification))
					}
				}
				// Re-keyed retries are not counted as retries: the outage's
				// first-screen line says "retries unknown", never a short count.
				for _, o := range s.Outages {
					if o.Partner == "acme" && o.Retries != nil {
						t.Errorf("outage %s %s retries %d: want unknown (some attempts at acme were not identified)", o.Partner, o.Kind, *o.Retries)
					}
				}
			}},
		{name: "killed mid-drill", defect: "crash", code: exitGateFail,
			lines: []string{"broken-sender: FAIL: finding system-exited", "  ! system-exited: the system exited on its own (signal: killed); the drill ended there",
				"broken-sender: crashing on purpose (SIGKILL)"},
			check: func(t *testing.T, s *reports.Summary) {
				f := s.Findings[0]
				if f.FirstAtS == nil || *f.FirstAtS < 1.5 || *f.FirstAtS > 3 || s.DrillTimeS > 3.5 || s.Attempts.Total == 0 {
					t.Errorf("finding %+v, drill time %.1fs, %d attempts: want the crash about 1.5 s in (the sender's first event at 0), the drill ended there, and what the partners saw before it",
						f, s.DrillTimeS, s.Attempts.Total)
				}
			}},
		{name: "dead letters without a content type", defect: "dead-letter-no-content-type", code: exitOK,
			lines: []string{"broken-sender: PASS: all 4 gates hold"},
			check: func(t *testing.T, s *reports.Summary) {
				if s.Deliveries.DeadLettered == 0 || s.Deliveries.Pending != 0 {
					t.Errorf("deliveries %+v: want acme's dead letters taken as JSON without a content type", s.Deliveries)
				}
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			drill := brokenDrill(t, tt.defect, tt.expect)
			dir := t.TempDir()
			var out, errb bytes.Buffer
			code := run([]string{"run", drill, "--out", dir}, &out, &errb)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr: %s", code, tt.code, errb.String())
			}
			// The findings are named on the console's first lines: the
			// verdict and one line each (with their detail lines).
			first := strings.Join(strings.Split(out.String(), "\n")[:min(6, strings.Count(out.String(), "\n"))], "\n")
			at := 0
			for _, want := range tt.lines {
				i := strings.Index(first[at:], want)
				if i < 0 {
					t.Errorf("console's first lines lack %q after byte %d:\n%s", want, at, out.String())
					break
				}
				at += i + len(want)
			}
			data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
			if err != nil {
				t.Fatalf("no summary.json: %v (stdout %s)", err, out.String())
			}
			var s reports.Summary
			if err := json.Unmarshal(data, &s); err != nil {
				t.Fatal(err)
			}
			if s.Pass != (tt.code == exitOK) {
				t.Errorf("summary pass %v, exit %d", s.Pass, code)
			}
			for _, name := range []string{"report.md", "report.html"} {
				rep, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				// The findings come first in the report: before the
				// faulty-against-healthy table.
				f, sides := bytes.Index(rep, []byte("Findings</h2>")), bytes.Index(rep, []byte("Faulty against healthy"))
				if name == "report.md" {
					f = bytes.Index(rep, []byte("## Findings"))
				}
				if (len(s.Findings) > 0) != (f >= 0) || (f >= 0 && (sides < 0 || f > sides)) {
					t.Errorf("%s: findings section at %d, sides at %d, %d findings: want the findings first when there are any", name, f, sides, len(s.Findings))
				}
			}
			tt.check(t, &s)
		})
	}
}
