package endpoints

import (
	"time"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/config"
)

// SettingsOf is ep's effective settings at now, as the admin API shows them.
func SettingsOf(ep config.Endpoint, now time.Time) *api.EndpointSettings {
	s := ep.Settings
	var out api.EndpointSettings
	out.Timeout, out.MaxInFlight, out.MaxBacklog = s.Timeout.String(), s.MaxInFlight, s.MaxBacklog
	out.Ordering, out.OrderingOnDeadLetter = s.Ordering, s.OrderingOnDeadLetter
	if !s.Ordered() { // a Settings built without the defaults: "" is none
		out.Ordering = config.OrderingNone
	}
	if !s.HoldsOnDeadLetter() {
		out.OrderingOnDeadLetter = config.OnDeadLetterSkip
	}
	out.RateLimit.RPS, out.RateLimit.Burst = s.RateLimit.RPS, s.RateLimit.Burst
	out.Retry.Base, out.Retry.Cap, out.Retry.MaxAttempts, out.Retry.MaxAge = s.Retry.Base.String(), s.Retry.Cap.String(), s.Retry.MaxAttempts, s.Retry.MaxAge.String()
	out.Breaker.FailureThreshold, out.Breaker.Cooldown = s.Breaker.FailureThreshold, s.Breaker.Cooldown.String()
	out.Breaker.MaxCooldown, out.Breaker.SlowP95 = s.Breaker.MaxCooldown.String(), s.Breaker.SlowP95.String()
	out.TransformTimeout, out.TransformMaxMemory = s.TransformTimeout.String(), s.TransformMaxMemory
	out.Auth, out.Proxy = ep.Auth.Type, config.RedactedProxy(ep.Proxy)
	d := &ep.Destination
	out.Destination = api.Destination{Type: d.TypeName()}
	if !d.IsWebhook() {
		out.Destination = api.Destination{
			Type: d.Type, URL: d.MaskedURL(), Subject: d.Subject, JetStream: d.JetStream, Brokers: d.Brokers,
			Topic: d.Topic, SASLMechanism: d.SASL.Mechanism, Exchange: d.Exchange, RoutingKey: d.RoutingKey,
			TLS: d.TLS != (config.DestinationTLS{}),
		}
	}
	for _, t := range ep.SecretExpiry {
		if !t.IsZero() && t.After(now) {
			out.SecretsExpire = append(out.SecretsExpire, t.UTC())
		}
	}
	return &out
}
