package dispatcher

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/model"
)

// The breaker's count survives the configuration file, and a bad name is
// refused naming the key.
func TestFileBreakerCount(t *testing.T) {
	c := validConfig()
	c.Partners = c.Partners[:1]
	count := (model.Count5xx | model.CountTimeout).Names()
	c.Partners[0].Policy.Breaker.Count = count
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
	if !reflect.DeepEqual(got.Partners[0].Policy.Breaker.Count, count) {
		t.Errorf("count read back as %v, want %v", got.Partners[0].Policy.Breaker.Count, count)
	}
	_, err = Parse([]byte(`{"partners": [{"name": "a", "url": "http://127.0.0.1:1/a", "policy": {"breaker": {"trip": "consecutive", "count": ["503"]}}}]}`))
	if err == nil || !strings.Contains(err.Error(), "partners[0].policy.breaker.count") {
		t.Errorf("a bad count name: %v", err)
	}
}
