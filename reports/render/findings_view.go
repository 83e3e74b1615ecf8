package render

// findingRow is one finding as the reports show it.
type findingRow struct {
	Kind     string // as summary.json and `expect` spell it
	Text     string
	Detail   []string
	Expected bool
}
