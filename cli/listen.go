package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hookjet/hookjet/webhook"
)

const listenHelp = `hookjet listen --secret whsec_... [--addr 127.0.0.1:9000] [--status 200]

Runs a local webhook receiver: it verifies each request's Standard Webhooks
signature with the given secret(s), drops duplicate webhook-ids, and prints
what arrives. Repeat --secret to accept several during a rotation.`

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func runListen(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlags("listen", listenHelp, stdout)
	var secrets multiFlag
	fs.Var(&secrets, "secret", "signing secret whsec_... (repeatable; default $HOOKJET_LISTEN_SECRET)")
	addr := fs.String("addr", "127.0.0.1:9000", "address to listen on")
	status := fs.Int("status", http.StatusOK, "HTTP status to answer verified deliveries with")
	if _, err := parseArgs(fs, args, 0); err != nil {
		return err
	}
	if len(secrets) == 0 && getenv("HOOKJET_LISTEN_SECRET") != "" {
		secrets = append(secrets, getenv("HOOKJET_LISTEN_SECRET"))
	}
	if len(secrets) == 0 {
		return usagef("listen: --secret is required")
	}
	if *status < 200 || *status > 599 {
		return usagef("listen: --status must be an HTTP status code")
	}
	v, err := webhook.NewVerifier(secrets)
	if err != nil {
		return usagef("listen: --secret: %v", err)
	}
	var mu sync.Mutex
	n := 0
	show := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		n++
		fmt.Fprintf(stdout, "#%d %s verified id=%s timestamp=%s bytes=%d\n%s\n", n, time.Now().Format(time.TimeOnly),
			r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"), len(body), body)
		mu.Unlock()
		w.WriteHeader(*status)
	})
	h := webhook.Handler(v, webhook.NewDeduper(24*time.Hour, 100000), show)
	logged := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		if rec.status == http.StatusUnauthorized || rec.status == http.StatusBadRequest {
			fmt.Fprintf(stderr, "rejected %s %s: HTTP %d (signature or headers invalid)\n", r.Method, r.URL.Path, rec.status)
		}
	})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{Handler: logged, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "listening on http://%s (verifying %d secret(s)); Ctrl-C to stop\n", ln.Addr(), len(secrets))
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}
