package test

import (
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/hookjet/hookjet/cli"
)

// The start-up line "hookjet serving" counts every endpoint in force (the
// file's and the admin API's), not only the file's: with one in the file
// and two created through the API it says endpoints=3 after a restart
// (issue 47, walkthrough 8: it said endpoints=1).
func TestServingLineCountsEveryEndpointInForce(t *testing.T) {
	rcv := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, _ delivery) { w.WriteHeader(http.StatusOK) })
	dir := t.TempDir()
	file := endpointYAML{ID: "file", URL: rcv.URL, Events: []string{"order.*"}}
	h := startHookjet(t, testConfig(t, dir, "", file), cli.Options{})
	h.createAPIEndpoint("api-1", rcv.URL, "invoice.*")
	h.createAPIEndpoint("api-2", rcv.URL, "refund.*")
	h.stop()

	logs := &syncBuffer{t: t}
	startHookjet(t, testConfig(t, dir, "", file), cli.Options{Log: slog.New(slog.NewTextHandler(logs, nil))})
	var serving string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `msg="hookjet serving"`) {
			serving = l
		}
	}
	if serving == "" {
		t.Fatalf("no hookjet serving line:\n%s", logs.String())
	}
	if m := regexp.MustCompile(` endpoints=(\d+)`).FindStringSubmatch(serving); m == nil || m[1] != "3" {
		t.Errorf("serving line %q: want endpoints=3 (1 from the file, 2 from the API)", serving)
	}
	if !strings.Contains(serving, " from_file=1") {
		t.Errorf("serving line %q: want from_file=1", serving)
	}
}
