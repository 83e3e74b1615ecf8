package queue

import "testing"

// A store that cannot be opened comes back as a nil Store, not a nil
// *Postgres inside a non-nil one (whose Close panicked in the live
// runner); a DSN is checked without connecting.
func TestOpenFailureReturnsNilStore(t *testing.T) {
	for _, dsn := range []string{
		"postgres://u@127.0.0.1:1/db?connect_timeout=2",
		"postgres://u@10.1.2.3:5432/db",
		"sqlite:/nonexistent-dir/x/queue.db",
	} {
		s, err := Open(dsn)
		if err == nil {
			s.Close()
			t.Fatalf("%s: opened", dsn)
		}
		if s != nil {
			t.Errorf("%s: a non-nil Store (%T) with the error %v", dsn, s, err)
		}
	}
	if err := CheckPostgresDSN("postgres://u@10.1.2.3:5432/db"); err == nil {
		t.Error("CheckPostgresDSN accepted a host that is not loopback")
	}
	if err := CheckPostgresDSN("postgres://u@127.0.0.1:1/db"); err != nil {
		t.Errorf("CheckPostgresDSN: %v", err)
	}
	for dsn, want := range map[string]bool{
		"postgres://u:pw@127.0.0.1/db":           true,
		"postgres://u@127.0.0.1/db?password=pw":  true,
		"postgres://u@127.0.0.1/db?sslmode=none": false,
		"postgres://u@127.0.0.1/db":              false,
	} {
		if got := InlineSecret(dsn); got != want {
			t.Errorf("InlineSecret(%q) = %v, want %v", dsn, got, want)
		}
	}
}
