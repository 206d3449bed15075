// Package helmtest tests hookjet's Helm chart (deploy/helm/hookjet): every
// manifest rendered from the chart's defaults and from each values file of
// its examples/ decodes strictly into the Kubernetes API types (k8s.io/api,
// and the Prometheus Operator's for ServiceMonitor and PrometheusRule), and
// the rendered hookjet.yaml, with the environment the pod gets, passes
// hookjet's own config validation.
//
// It is a module of its own, so that hookjet's module gains no Kubernetes
// dependency; it also pins the helm command that make helm-lint builds
// (go.mod's tool line). Run it with make helm-test.
package helmtest
