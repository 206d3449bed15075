package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// apiClient calls the admin API in process: it builds the request an
// outside client would send, with the admin token, hands it to the API's
// http.Handler and decodes the JSON the contract documents. The console and
// the portal see hookjet only through it.
type apiClient struct {
	h     http.Handler
	token string
}

// apiError is a non-2xx answer of the admin API.
type apiError struct {
	Status int
	Msg    string `json:"error"`
	Field  string `json:"field"`
}

func (e *apiError) Error() string {
	if e.Msg == "" {
		return fmt.Sprintf("admin API answered %d", e.Status)
	}
	return e.Msg
}

// missingRoute reports whether err is the admin API's answer for a route it
// does not have (a feature not built into this binary), as opposed to an
// unknown id.
func missingRoute(err error) bool {
	var ae *apiError
	if !errors.As(err, &ae) {
		return false
	}
	return ae.Status == http.StatusNotImplemented || (ae.Status == http.StatusNotFound && strings.HasPrefix(ae.Msg, "no route "))
}

// notFound reports whether err is a 404 for an unknown id.
func notFound(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound && !missingRoute(err)
}

// call sends method path (with its query) and in as a JSON body (nil: no
// body), and decodes a 2xx answer into out (nil: ignored). It returns the
// answer's headers.
func (c apiClient) call(ctx context.Context, method, path string, in, out any) (http.Header, error) {
	var body bytes.Buffer
	if in != nil {
		if err := json.NewEncoder(&body).Encode(in); err != nil {
			return nil, fmt.Errorf("encode %s %s: %w", method, path, err)
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, path, &body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.RemoteAddr = "127.0.0.1:0" // in process
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	c.h.ServeHTTP(rec, req)
	if rec.status < 200 || rec.status > 299 {
		ae := &apiError{Status: rec.status}
		_ = json.Unmarshal(rec.body.Bytes(), ae)
		return rec.header, ae
	}
	if out != nil && rec.status != http.StatusNoContent {
		if err := json.Unmarshal(rec.body.Bytes(), out); err != nil {
			return rec.header, fmt.Errorf("decode the answer of %s %s: %w", method, path, err)
		}
	}
	return rec.header, nil
}

// recorder is the http.ResponseWriter of an in-process call.
type recorder struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if !r.wrote {
		r.status, r.wrote = status, true
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.body.Write(b)
}
