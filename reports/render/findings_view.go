package render

// findingRow is one finding as the reports show it.
type findingRow struct {
	Text     string
	Detail   []string
	Expected bool
}
