// Package deploy holds hookjet's operations assets: Prometheus alerting rules
// (prometheus/alerts.yml and their promtool unit tests), a Grafana dashboard
// (grafana/hookjet.json) and notes on installing them (README.md); the Helm
// chart (helm/hookjet, tested by the module helmtest) and the compose
// cluster (compose/); docs/deploy.md says how to install hookjet.
//
// The package has no Go API. Its tests parse the assets and check that every
// hookjet_* metric and label they query is one hookjet exports, so that a
// renamed metric cannot silently leave a dashboard panel empty or an alert
// unable to fire; that the compose cluster's config passes hookjet's
// validation; and, given TEST_IMAGE, what the container image holds.
package deploy
