package main

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookjet/hookjet/signature"
	"github.com/hookjet/hookjet/webhook"
)

// receiver is the endpoints' HTTP server: POST /<endpoint> verifies the
// signature and appends one line per request to its log:
//
//	ok <endpoint> <webhook-id> <unix ms>     answered 204: delivered
//	fail <endpoint> <webhook-id> <unix ms>   answered 503 by the script (failRate)
//	bad <endpoint> <webhook-id> <unix ms>    signature did not verify: 401
//
// The checker reads the log; the in-memory count of distinct deliveries only
// tells the quiet period when everything has arrived.
type receiver struct {
	srv      *http.Server
	ln       net.Listener
	verifier *webhook.Verifier
	failRate float64

	mu     sync.Mutex
	rnd    *rand.Rand
	log    *bufio.Writer
	file   *os.File
	seen   map[string]bool // endpoint + " " + id delivered
	lastOK time.Time

	requests, failed, bad atomic.Int64
}

func newReceiver(path string, secrets []string, failRate float64, seed uint64) (*receiver, error) {
	v, err := webhook.NewVerifier(secrets)
	if err != nil {
		return nil, err
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	r := &receiver{
		ln: ln, verifier: v, failRate: failRate, file: f, log: bufio.NewWriter(f),
		rnd: rand.New(rand.NewPCG(seed, 0x5eed)), seen: map[string]bool{},
	}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// url is endpoint's URL.
func (r *receiver) url(endpoint string) string {
	return "http://" + r.ln.Addr().String() + "/" + endpoint
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	r.requests.Add(1)
	endpoint := strings.TrimPrefix(req.URL.Path, "/")
	id := req.Header.Get(signature.HeaderID)
	outcome, status := "ok", http.StatusNoContent
	if r.verifier.Verify(req.Header, body) != nil {
		outcome, status = "bad", http.StatusUnauthorized
		r.bad.Add(1)
	}
	r.mu.Lock()
	if outcome == "ok" && r.failRate > 0 && r.rnd.Float64() < r.failRate {
		outcome, status = "fail", http.StatusServiceUnavailable
		r.failed.Add(1)
	}
	now := time.Now()
	fmt.Fprintf(r.log, "%s %s %s %d\n", outcome, endpoint, id, now.UnixMilli())
	if outcome == "ok" {
		r.seen[endpoint+" "+id] = true
		r.lastOK = now
	}
	r.mu.Unlock()
	w.WriteHeader(status)
}

// progress returns the number of distinct deliveries so far and the time of
// the latest one.
func (r *receiver) progress() (int, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen), r.lastOK
}

// missing reports which of the wanted "endpoint id" pairs have not arrived.
func (r *receiver) missing(want []string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, k := range want {
		if !r.seen[k] {
			out = append(out, k)
		}
	}
	return out
}

// flush writes the buffered log lines to the file.
func (r *receiver) flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log.Flush()
}

// close stops the server and closes the log.
func (r *receiver) close() error {
	_ = r.srv.Close()
	err := r.flush()
	if cerr := r.file.Close(); err == nil {
		err = cerr
	}
	return err
}
