package reports

import "testing"

// Every kind in the table has a name and a meaning, and no name twice.
func TestFindingKindsTable(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range FindingKinds {
		if k.Name == "" || k.Means == "" || seen[k.Name] || !IsFindingKind(k.Name) {
			t.Errorf("kind %+v: want a unique name and a meaning", k)
		}
		seen[k.Name] = true
	}
	if IsFindingKind("queue-full") {
		t.Error("a dead-letter reason is not a kind of finding")
	}
}
