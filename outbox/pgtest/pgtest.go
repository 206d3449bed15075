package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookjet/hookjet/internal/freeport"
)

// ErrUnavailable is wrapped by [New] errors meaning that PostgreSQL is not
// installed or cannot run here.
var ErrUnavailable = errors.New("PostgreSQL not available")

// Server is a running throw-away PostgreSQL cluster.
type Server struct {
	bin  string   // directory of initdb, pg_ctl
	dir  string   // temporary directory: data/, log
	as   []string // command prefix running as postgres, or nil
	port int
}

// Start is [New] for a test: it skips the test when PostgreSQL is not
// available (fails it under CI) and stops and removes the cluster in
// t.Cleanup.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := New()
	if errors.Is(err, ErrUnavailable) {
		Unavailable(t, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return s
}

// New initialises and starts a cluster with trust authentication on
// 127.0.0.1 and no Unix socket. Close stops it and removes it.
func New() (_ *Server, err error) {
	s := &Server{}
	if s.bin, err = findBin(); err != nil {
		return nil, err
	}
	var uid, gid int
	if os.Geteuid() == 0 {
		if s.as, uid, gid, err = asPostgres(); err != nil {
			return nil, err
		}
	}
	if s.dir, err = os.MkdirTemp("", "hookjet-pg-"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = s.Close()
		}
	}()
	if s.as != nil {
		if err := os.Chown(s.dir, uid, gid); err != nil {
			return nil, err
		}
	}
	if err := s.run("initdb", "-D", s.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"); err != nil {
		return nil, err
	}
	if s.port, err = freeport.Port(); err != nil {
		return nil, err
	}
	conf := fmt.Sprintf("\nport = %d\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = ''\nfsync = off\nsynchronous_commit = off\nfull_page_writes = off\nmax_connections = 50\n", s.port)
	f, err := os.OpenFile(filepath.Join(s.data(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	if _, err := f.WriteString(conf); err != nil {
		_ = f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return s, s.Start()
}

// Unavailable skips (or, under CI, fails) a test that cannot get PostgreSQL,
// loudly, with the reason.
func Unavailable(t testing.TB, err error) {
	t.Helper()
	msg := Reason(err)
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// Reason is the message to show when PostgreSQL is unavailable.
func Reason(err error) string {
	return fmt.Sprintf("PostgreSQL NOT AVAILABLE, test not run: %v. Install the Debian package postgresql (apt-get install postgresql; .ci/run does this)", err)
}

// findBin returns the newest /usr/lib/postgresql/*/bin holding initdb, or the
// directory of initdb on PATH.
func findBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", fmt.Errorf("%w: no initdb under /usr/lib/postgresql/*/bin or on PATH", ErrUnavailable)
}

// asPostgres returns the command prefix that runs a program as the user
// postgres, and that user's ids.
func asPostgres() ([]string, int, int, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%w: running as root and there is no user postgres to run the server as: %w", ErrUnavailable, err)
	}
	runuser, err := exec.LookPath("runuser")
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%w: running as root and runuser is missing: %w", ErrUnavailable, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return []string{runuser, "-u", "postgres", "--"}, uid, gid, nil
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

// run runs one of PostgreSQL's programs as the cluster's owner.
func (s *Server) run(prog string, args ...string) error {
	argv := append(slices.Clone(s.as), append([]string{filepath.Join(s.bin, prog)}, args...)...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = s.dir
	if out, err := cmd.CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "log"))
		return fmt.Errorf("pgtest: %s: %w\n%s\nserver log:\n%s", prog, err, out, log)
	}
	return nil
}

// Start starts the cluster (again) and waits until it accepts connections.
func (s *Server) Start() error {
	return s.run("pg_ctl", "-D", s.data(), "-l", filepath.Join(s.dir, "log"), "-w", "-t", "60", "start")
}

// Stop stops the cluster at once, like a crash (-m immediate); it is a no-op
// when it is not running.
func (s *Server) Stop() error {
	if _, err := os.Stat(filepath.Join(s.data(), "postmaster.pid")); err != nil {
		return nil
	}
	return s.run("pg_ctl", "-D", s.data(), "-m", "immediate", "-w", "stop")
}

// Close stops the cluster and removes its files.
func (s *Server) Close() error {
	return errors.Join(s.Stop(), os.RemoveAll(s.dir))
}

// DSN is the connection string of database postgres as user postgres.
func (s *Server) DSN() string { return s.DSNFor("postgres") }

// DSNFor is the connection string of database db as user postgres.
func (s *Server) DSNFor(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// CreateDB creates database name (dropping one of that name first) and
// returns its DSN.
func (s *Server) CreateDB(t testing.TB, name string) string {
	t.Helper()
	s.Exec(t, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize())
	s.Exec(t, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	return s.DSNFor(name)
}

// Exec runs sql (one or more statements) and fails the test on error.
func (s *Server) Exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	s.withConn(t, func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, sql, args...)
		return err
	})
}

// Count returns the result of a query returning one integer.
func (s *Server) Count(t testing.TB, query string, args ...any) int {
	t.Helper()
	var n int
	s.withConn(t, func(ctx context.Context, conn *pgx.Conn) error {
		return conn.QueryRow(ctx, query, args...).Scan(&n)
	})
	return n
}

// withConn runs fn on a new connection to database postgres.
func (s *Server) withConn(t testing.TB, fn func(context.Context, *pgx.Conn) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.DSN())
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer func() { _ = conn.Close(ctx) }()
	if err := fn(ctx, conn); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
}
