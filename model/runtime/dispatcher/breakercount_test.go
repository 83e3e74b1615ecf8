package dispatcher

import (
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/model"
)

// The breaker's count survives the configuration file, and a bad name is
// refused naming the key.
func TestFileBreakerCount(t *testing.T) {
	c := validConfig()
	c.Partners = c.Partners[:1]
	b := model.BreakerSettings{Threshold: 5, Count: model.Count5xx | model.CountTimeout}
	c.Partners[0].Breaker = &b
	raw, err := Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"count"`) {
		t.Fatalf("count not written:\n%s", raw)
	}
	got, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got.Partners[0].Breaker.Count != b.Count {
		t.Errorf("count read back as %v, want %v", got.Partners[0].Breaker.Count, b.Count)
	}
	_, err = Parse([]byte(`{"partners": [{"name": "a", "url": "http://127.0.0.1:1/a", "breaker": {"trip": "consecutive", "count": ["503"]}}]}`))
	if err == nil || !strings.Contains(err.Error(), "breaker.count") {
		t.Errorf("a bad count name: %v", err)
	}
}
