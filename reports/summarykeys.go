package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// SummaryKeys lists the keys of s as summary.json writes it, as dotted
// paths ("[]" for a list's elements), each with the kind of its value:
// null, number, string, bool, empty (an empty list), array or object. The
// dead-letter reason maps are data, not keys: left out. The modes' tests
// use it to check that every mode writes the same summary.
func SummaryKeys(s *Summary) (map[string]string, error) {
	var buf bytes.Buffer
	if err := WriteSummaryJSON(&buf, s); err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(buf.Bytes(), &v); err != nil {
		return nil, err
	}
	keys := map[string]string{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			switch {
			case path == "dead_letter_reasons":
				return // keyed by reason: data, not keys
			case strings.HasSuffix(path, ".dead_letters"):
				// Keyed by reason, and written only for a cohort that has
				// dead letters.
				delete(keys, path)
				return
			}
			for k, e := range x {
				p := k
				if path != "" {
					p = path + "." + k
				}
				keys[p] = kindOf(e)
				walk(p, e)
			}
		case []any:
			for _, e := range x {
				walk(path+"[]", e)
			}
		}
	}
	walk("", v)
	return keys, nil
}

func kindOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case float64:
		return "number"
	case string:
		return "string"
	case bool:
		return "bool"
	case []any:
		if len(x) == 0 {
			return "empty"
		}
		return "array"
	}
	return "object"
}

// KeyDifferences compares two key sets of SummaryKeys, named an and bn,
// and says, sorted, every key one has and the other lacks and every key
// whose kind differs. A null stands for any value ("not applicable") and
// an empty list for any list: what lies under them is not compared. Keys
// carry their unit (_s, _per_s, …), so the same keys means the same units.
func KeyDifferences(an string, a map[string]string, bn string, b map[string]string) []string {
	// under reports whether k lies under a null or an empty list of keys.
	under := func(k string, keys map[string]string) bool {
		for p, kind := range keys {
			if (kind == "null" || kind == "empty") && len(k) > len(p) && strings.HasPrefix(k, p) && (k[len(p)] == '.' || k[len(p)] == '[') {
				return true
			}
		}
		return false
	}
	wild := func(kind string) bool { return kind == "null" || kind == "empty" }
	var out []string
	for k, kind := range a {
		other, ok := b[k]
		switch {
		case !ok && !under(k, b):
			out = append(out, fmt.Sprintf("summary key %s: in %s, not in %s", k, an, bn))
		case ok && kind != other && !wild(kind) && !wild(other):
			out = append(out, fmt.Sprintf("summary key %s: %s in %s, %s in %s", k, kind, an, other, bn))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok && !under(k, a) {
			out = append(out, fmt.Sprintf("summary key %s: in %s, not in %s", k, bn, an))
		}
	}
	slices.Sort(out)
	return out
}
