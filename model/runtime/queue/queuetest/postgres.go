package queuetest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/stormdrill/stormdrill/internal/testsuite"
)

// EnvPostgres names the PostgreSQL server the tests use. .ci/run starts
// one on loopback and sets it.
const EnvPostgres = "STORMDRILL_TEST_POSTGRES"

// PostgresDSN is the server's DSN. Without one the test is recorded as not
// run and skips, except in CI, which must have PostgreSQL.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvPostgres)
	if dsn == "" {
		testsuite.NotRun(t, "PostgreSQL", EnvPostgres+" is not set")
	}
	return dsn
}

var schemaSeq atomic.Int64

// PostgresSchema creates an empty schema for this test and returns the DSN
// whose search_path points at it; the schema is dropped at cleanup. The
// name holds the prefix and the process id, so test binaries running at
// once (the plain and the race run, other packages) never share one.
func PostgresSchema(t testing.TB, prefix string) string {
	t.Helper()
	base := PostgresDSN(t)
	name := fmt.Sprintf("%s_%d_%d", prefix, os.Getpid(), schemaSeq.Add(1))
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connecting to %s: %v", EnvPostgres, err)
	}
	defer admin.Close(ctx)
	// A schema left by a killed run with the same pid is dropped first.
	if _, err := admin.Exec(ctx, `DROP SCHEMA IF EXISTS `+name+` CASCADE; CREATE SCHEMA `+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err != nil {
			t.Errorf("dropping schema %s: %v", name, err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+name+` CASCADE`); err != nil {
			t.Errorf("dropping schema %s: %v", name, err)
		}
	})
	return WithSearchPath(t, base, name)
}

// WithSearchPath returns dsn with its search_path set to schema.
func WithSearchPath(t testing.TB, dsn, schema string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("%s is not a URL: %v", EnvPostgres, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
