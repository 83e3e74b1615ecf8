package external

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/fakepartner"
	"github.com/stormdrill/stormdrill/reports"
)

// contractDoc is the external contract's documentation.
const contractDoc = "../../docs/external.md"

// contractDrill has the partners docs/external.md's examples call: acme
// takes deliveries, down is unavailable, busy throttles with Retry-After 2,
// picky rejects every delivery as bad data.
const contractDrill = `name = "contract"
mode = "external"
duration = "1m"
[system]
ingest_url   = "http://127.0.0.1:9/events"
dead_letters = "endpoint"
[source]
rate = "1/s"
[[partners]]
name    = "acme"
latency = { dist = "constant", value = "1ms" }
[[partners]]
name    = "down"
latency = { dist = "constant", value = "1ms" }
outages = [{ start = "0s", for = "1h", kind = "unavailable" }]
[[partners]]
name    = "busy"
latency = { dist = "constant", value = "1ms" }
outages = [{ start = "0s", for = "1h", kind = "throttle", retry_after = "2" }]
[[partners]]
name    = "picky"
latency = { dist = "constant", value = "1ms" }
permanent_errors = 1
`

// docBlock is one fenced block of the documentation: its info string
// ("http", "json event") and its text.
type docBlock struct{ info, text string }

var fence = regexp.MustCompile("(?ms)^```([^\n]*)\n(.*?)\n```$")

func docBlocks(t *testing.T) (string, []docBlock) {
	t.Helper()
	data, err := os.ReadFile(contractDoc)
	if err != nil {
		t.Fatal(err)
	}
	var out []docBlock
	for _, m := range fence.FindAllStringSubmatch(string(data), -1) {
		out = append(out, docBlock{info: strings.TrimSpace(m[1]), text: m[2]})
	}
	return string(data), out
}

// httpMessage is a request or an answer as the documentation writes it:
// a first line, headers, a blank line and a body.
type httpMessage struct {
	first   string
	headers http.Header
	body    string
}

func parseMessage(t *testing.T, text string) httpMessage {
	t.Helper()
	head, body, _ := strings.Cut(text, "\n\n")
	lines := strings.Split(head, "\n")
	m := httpMessage{first: lines[0], headers: http.Header{}, body: strings.TrimSpace(body)}
	for _, l := range lines[1:] {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			t.Fatalf("documented header line %q has no colon", l)
		}
		m.headers.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	return m
}

// sameJSON compares an answer with the documented one, where "…" stands
// for any value.
func sameJSON(doc, got any) bool {
	if s, ok := doc.(string); ok && s == "…" {
		return got != nil
	}
	dm, ok1 := doc.(map[string]any)
	gm, ok2 := got.(map[string]any)
	if ok1 && ok2 {
		if len(dm) != len(gm) {
			return false
		}
		for k, v := range dm {
			if g, ok := gm[k]; !ok || !sameJSON(v, g) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(doc, got)
}

// TestContractExamples sends every HTTP example of docs/external.md to an
// external run's partner server, in the order written, and checks the
// answer written under it: status, the headers it names and the JSON body.
// The other examples are checked against what reads or writes them: the
// event against the event the harness sends, the dead-letter listings
// against the parser the harness reads them with, the findings table
// against reports.FindingKinds, and the environment table against what a
// started system is given.
func TestContractExamples(t *testing.T) {
	h := harnessFor(t, "contract.toml", contractDrill)
	text, blocks := docBlocks(t)
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	sent := 0
	for i := 0; i < len(blocks); i++ {
		b := blocks[i]
		switch b.info {
		case "http":
			if i+1 >= len(blocks) || blocks[i+1].info != "http" || !strings.HasPrefix(blocks[i+1].text, "HTTP/1.1 ") {
				t.Fatalf("the example %q has no answer written under it", b.text)
			}
			checkExample(t, c, h.base, parseMessage(t, b.text), parseMessage(t, blocks[i+1].text))
			sent++
			i++
		case "json event":
			checkEventExample(t, b.text)
		case "json dead-letter-command":
			var got []fakepartner.DeadLetter
			if err := parseDeadLetters(strings.NewReader(b.text), func(dl fakepartner.DeadLetter) { got = append(got, dl) }); err != nil {
				t.Errorf("dead-letter listing example: %v", err)
			} else if len(got) != 2 || got[0].ID != "evt-3fa9c1-000004:acme-0" || got[0].Attempts != 4 ||
				!got[0].At.Equal(time.Date(2026, 12, 1, 6, 10, 2, 0, time.UTC)) || got[1].Reason != "permanent" {
				t.Errorf("dead-letter listing example read as %+v", got)
			}
		}
	}
	if sent < 10 {
		t.Errorf("%d HTTP examples checked; the page documents more", sent)
	}
	if dead := h.rec.dead; len(dead) != 2 || dead[1].ID != "evt-3fa9c1-000003:acme-0" {
		t.Errorf("dead letters %+v recorded: want the 2 the examples post", dead)
	}
	if rr := h.srv.ReportsRefused(); rr.Count != 2 {
		t.Errorf("refused reports %+v: want the 2 bad examples", rr)
	}

	// The findings table is reports.FindingKinds.
	var want strings.Builder
	want.WriteString("<!-- findings:begin -->\n| kind | means |\n| --- | --- |\n")
	for _, k := range reports.FindingKinds {
		fmt.Fprintf(&want, "| `%s` | %s |\n", k.Name, k.Means)
	}
	want.WriteString("<!-- findings:end -->")
	if !strings.Contains(text, want.String()) {
		t.Errorf("%s: the findings table is not reports.FindingKinds; want:\n%s", contractDoc, want.String())
	}
	// Every variable a started system gets is documented.
	env := []string{"STORMDRILL_INGEST_URL", "STORMDRILL_INGEST_ADDR", "STORMDRILL_PARTNER_TOKEN"}
	for k := range h.env {
		env = append(env, k)
	}
	sort.Strings(env)
	for _, k := range env {
		if !strings.Contains(text, "`"+k+"`") {
			t.Errorf("%s does not document $%s", contractDoc, k)
		}
	}
}

// harnessFor parses an external drill's text and makes its harness (its
// partner server listening), closed when the test ends.
func harnessFor(t *testing.T, name, text string) *harness {
	t.Helper()
	d, err := drills.Parse(name, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	h, err := newHarness(d, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.close)
	return h
}

func checkExample(t *testing.T, c *http.Client, base string, req, doc httpMessage) {
	t.Helper()
	method, path, ok := strings.Cut(req.first, " ")
	if !ok {
		t.Fatalf("example request line %q: want METHOD PATH", req.first)
	}
	r, err := http.NewRequest(method, base+path, strings.NewReader(req.body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header = req.headers
	resp, err := c.Do(r)
	if err != nil {
		t.Fatalf("%s: %v", req.first, err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	status, _ := strconv.Atoi(strings.Fields(doc.first)[1])
	if resp.StatusCode != status || strings.Fields(doc.first)[2] != strings.Fields(http.StatusText(status))[0] {
		t.Errorf("%s: answered %d %s, documented %q", req.first, resp.StatusCode, bytes.TrimSpace(body), doc.first)
	}
	for k := range doc.headers {
		if got := resp.Header.Get(k); got != doc.headers.Get(k) {
			t.Errorf("%s: %s %q, documented %q", req.first, k, got, doc.headers.Get(k))
		}
	}
	var dj, gj any
	if err := json.Unmarshal([]byte(doc.body), &dj); err != nil {
		t.Fatalf("%s: the documented answer %q is not JSON: %v", req.first, doc.body, err)
	}
	if err := json.Unmarshal(body, &gj); err != nil || !sameJSON(dj, gj) {
		t.Errorf("%s: answered %s, documented %s", req.first, bytes.TrimSpace(body), doc.body)
	}
}

// checkEventExample holds the documented event to the event the harness
// sends: the same fields, at every level.
func checkEventExample(t *testing.T, text string) {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatalf("the event example is not JSON: %v", err)
	}
	ev := Event{EventID: "evt-3fa9c1-000001", Created: time.Now(), Payload: json.RawMessage(`{"data":"x"}`),
		Deliveries: []Delivery{{ID: "evt-3fa9c1-000001:acme-0", URL: "http://127.0.0.1:1/p/acme/0"}}}
	data, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if k1, k2 := keysOf(doc), keysOf(got); k1 != k2 {
		t.Errorf("documented event fields %s, the harness sends %s", k1, k2)
	}
	id, _ := doc["event_id"].(string)
	if !regexp.MustCompile(`^evt-[0-9a-f]{6}-\d{6}$`).MatchString(id) {
		t.Errorf("documented event id %q is not of the form the harness makes", id)
	}
}

// keysOf lists a JSON value's object keys at every level, as "a b.c".
func keysOf(v any) string {
	var out []string
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				out = append(out, prefix+k)
				walk(prefix+k+".", e)
			}
		case []any:
			for _, e := range x {
				walk(prefix, e)
			}
		}
	}
	walk("", v)
	sort.Strings(out)
	return strings.Join(out, " ")
}
