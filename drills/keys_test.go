package drills

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestKeysCoverSchema checks, through the toml tags of Drill, that every key
// has a KeyDoc (itself or a documented parent table), that every KeyDoc
// names a real key, and that the documented type is the Go type's.
func TestKeysCoverSchema(t *testing.T) {
	docs := map[string]KeyDoc{}
	for _, k := range Keys {
		if _, dup := docs[k.Key]; dup {
			t.Errorf("%s documented twice", k.Key)
		}
		docs[k.Key] = k
	}
	for path, sk := range schema() {
		if sk.Kind != leafKey {
			continue
		}
		covered := false
		for p := path; p != ""; p = strings.TrimSuffix(parentKey(p), "[]") {
			if _, ok := docs[p]; ok {
				covered = true
				break
			}
		}
		if !covered {
			t.Errorf("schema key %s has no KeyDoc", path)
		}
	}
	for _, k := range Keys {
		sk, ok := schema()[k.Key]
		if !ok {
			t.Errorf("KeyDoc %s names no key of Drill", k.Key)
			continue
		}
		want := typeName(sk.Type)
		if sk.Type == reflect.TypeFor[Latency]() && (strings.HasSuffix(k.Key, "network_delay") || strings.HasSuffix(k.Key, "answer_after")) {
			want = "latency table"
		}
		if k.Type != want {
			t.Errorf("KeyDoc %s: type %q, want %q", k.Key, k.Type, want)
		}
		if k.Doc == "" {
			t.Errorf("KeyDoc %s has no text", k.Key)
		}
	}
}

// TestKeysMarkdown checks the table's shape: a header and one row per key.
func TestKeysMarkdown(t *testing.T) {
	md := KeysMarkdown()
	lines := strings.Split(strings.TrimSuffix(md, "\n"), "\n")
	if len(lines) != len(Keys)+2 {
		t.Fatalf("%d lines for %d keys", len(lines), len(Keys))
	}
	for i, l := range lines {
		if strings.Count(l, " | ")-strings.Count(l, `\|`) != 3 {
			t.Errorf("line %d has the wrong number of cells: %s", i+1, l)
		}
	}
	if !strings.Contains(md, "| `policy.retry.base` | duration | \"1s\" |") {
		t.Error("policy.retry.base row missing or changed")
	}
}

// TestDocsKeys checks that docs/drill-keys.md is what KeysReferenceCommand
// writes, so the published reference cannot drift from the decoder's keys.
func TestDocsKeys(t *testing.T) {
	path := filepath.Join("..", "docs", "drill-keys.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != KeysReferenceMarkdown() {
		t.Fatalf("%s is stale; run: %s", path, KeysReferenceCommand)
	}
}
