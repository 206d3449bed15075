// Package pgtest starts throw-away PostgreSQL clusters for tests: initdb and
// pg_ctl in a temporary directory, on a free loopback port, run as the
// unprivileged user postgres when the test runs as root (PostgreSQL refuses
// to run as root). It needs the PostgreSQL server binaries (Debian package
// postgresql, installed by .ci/run). Without them a test is skipped with the
// reason, except under CI (CI set), where it fails: CI must never skip.
package pgtest
