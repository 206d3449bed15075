package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// proxies are the TCP proxies between one hookjet process and the NATS
// nodes (one per node), run in-process with toxiproxy's own packages. A
// fault adds toxics to all of them (or one) and removes them afterwards.
type proxies struct {
	list []*toxiproxy.Proxy
}

// newProxies starts one proxy per upstream address (host:port) on a free
// loopback port.
func newProxies(srv *toxiproxy.ApiServer, name string, upstreams []string) (*proxies, error) {
	p := &proxies{}
	for i, up := range upstreams {
		px := toxiproxy.NewProxy(srv, fmt.Sprintf("%s-n%d", name, i+1), "127.0.0.1:0", up)
		if err := px.Start(); err != nil {
			p.stop()
			return nil, fmt.Errorf("proxy to %s: %w", up, err)
		}
		p.list = append(p.list, px)
	}
	return p, nil
}

// newToxiproxy is the in-process toxiproxy server the proxies belong to
// (no API listener, no metrics, no logs).
func newToxiproxy() *toxiproxy.ApiServer {
	return toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
}

// url is the nats.url that sends a client through these proxies.
func (p *proxies) url() string {
	urls := make([]string, len(p.list))
	for i, px := range p.list {
		urls[i] = "nats://" + px.Listen
	}
	return strings.Join(urls, ",")
}

// toxic is one toxic added in both directions.
type toxic struct {
	kind  string // toxiproxy type: latency, timeout
	attrs string // JSON attributes
}

// add adds t in both directions to the proxy of node (or to every proxy when
// node < 0).
func (p *proxies) add(t toxic, node int) error {
	for i, px := range p.list {
		if node >= 0 && i != node {
			continue
		}
		for _, stream := range []string{"upstream", "downstream"} {
			js := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":1,"attributes":%s}`, t.kind+"_"+stream, t.kind, stream, t.attrs)
			if _, err := px.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
				return fmt.Errorf("%s: add %s toxic: %w", px.Name, t.kind, err)
			}
		}
	}
	return nil
}

// clear removes every toxic (a timeout toxic closes the connections it held,
// as the end of a long partition does).
func (p *proxies) clear() {
	for _, px := range p.list {
		px.Toxics.ResetToxics(context.Background())
	}
}

func (p *proxies) stop() {
	for _, px := range p.list {
		px.Stop()
	}
}
