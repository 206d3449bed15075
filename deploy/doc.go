// Package deploy holds hookjet's operations assets: Prometheus alerting rules
// (prometheus/alerts.yml and their promtool unit tests), a Grafana dashboard
// (grafana/hookjet.json) and notes on installing them (README.md).
//
// The package has no Go API. Its tests parse the assets and check that every
// hookjet_* metric and label they query is one hookjet exports, so that a
// renamed metric cannot silently leave a dashboard panel empty or an alert
// unable to fire.
package deploy
