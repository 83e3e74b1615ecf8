package drills

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BadCorpus lists the drills of testdata/bad: each one that a careless or
// hostile user wrote and that once validated and then hung, spun, ran out
// of memory or overflowed, or was refused without a line or a key. The
// first line of each says what the refusal must name:
// "# want: KEY | fragment of the message".
func badCorpus(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "bad", "*.toml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no bad drills: %v", err)
	}
	return append(files, filepath.Join("testdata", "bad", "bomb", "bomb-0.toml"))
}

// wantOf reads a bad drill's "# want: KEY | fragment" line.
func wantOf(t testing.TB, path string) (key, fragment string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if w, ok := strings.CutPrefix(sc.Text(), "# want: "); ok {
			k, frag, _ := strings.Cut(w, "|")
			return strings.TrimSpace(k), strings.TrimSpace(frag)
		}
	}
	t.Fatalf("%s: no \"# want: KEY | fragment\" line", path)
	return "", ""
}

// Every bad drill is refused with a line, the key it wants and its message;
// no error line is longer than a clipped key and message allow.
func TestBadCorpusRefused(t *testing.T) {
	for _, path := range badCorpus(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			key, frag := wantOf(t, path)
			d, err := Load(path, nil)
			if err == nil {
				t.Fatalf("validated (%s); want it refused at %s", d.Name, key)
			}
			es, ok := AsErrors(err)
			if !ok {
				t.Fatalf("error %v is not Errors", err)
			}
			found := false
			for _, e := range es {
				if len(e.Error()) > len(e.File)+12+maxEchoKey+maxEchoMsg {
					t.Errorf("error line of %d bytes: %.120s…", len(e.Error()), e.Error())
				}
				if (e.Key == key || strings.HasPrefix(e.Key, key+"[") || strings.HasPrefix(e.Key, key+".")) && strings.Contains(e.Msg, frag) {
					found = true
					if e.Line == 0 {
						t.Errorf("%s: no line", e)
					}
				}
			}
			if !found {
				t.Errorf("got\n%v\nwant an error at key %s saying %q", err, key, frag)
			}
		})
	}
}

// The ceilings are raised by the drill's [limits] table, and by an
// override as --limit does.
func TestLimitsRaised(t *testing.T) {
	path := filepath.Join("testdata", "bad", "gates.toml")
	if _, err := Load(path, nil); err == nil {
		t.Fatal("gates.toml validated")
	}
	if _, err := Load(path, map[string]string{"limits.gates": "200"}); err != nil {
		t.Fatalf("with limits.gates = 200: %v", err)
	}
	if _, err := Load(path, map[string]string{"limits.gates": "-1"}); err == nil || !strings.Contains(err.Error(), "limits.gates") {
		t.Fatalf("limits.gates = -1: %v, want it refused", err)
	}
	// A ceiling can also be lowered: the smallest valid drill has 1 subscriber.
	_, err := Parse("t.toml", []byte(validBase+"[limits]\nsubscribers = 1\ndeliveries = 10\n"))
	if err == nil || !strings.Contains(err.Error(), "source.rate: the drill asks for about 60 deliveries") {
		t.Fatalf("deliveries ceiling of 10 on 60 events: %v", err)
	}
}

// BenchmarkValidateBadCorpus measures refusing every bad drill: each must
// take well under a second (the include bomb and the 1,000-cohort drill
// are the slow ones).
func BenchmarkValidateBadCorpus(b *testing.B) {
	files := badCorpus(b)
	for i := 0; i < b.N; i++ {
		for _, f := range files {
			if _, err := Load(f, nil); err == nil {
				b.Fatalf("%s validated", f)
			}
		}
	}
}
