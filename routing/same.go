package routing

import (
	"reflect"
	"time"

	"github.com/hookjet/hookjet/config"
)

// Same reports whether a and b are the same definition: every field of
// config.Endpoint is compared, so a setting added to it is compared
// without a change here (TestSameComparesEveryField fails otherwise). Times
// compare as instants; an empty list or map is the same as none.
func Same(a, b config.Endpoint) bool {
	ca, cb := canonical(a), canonical(b)
	return reflect.DeepEqual(&ca, &cb)
}

// canonical is ep in the form Same compares: times without their
// monotonic reading and location, empty lists and maps as nil.
func canonical(ep config.Endpoint) config.Endpoint {
	ep.CreatedAt, ep.UpdatedAt = instant(ep.CreatedAt), instant(ep.UpdatedAt)
	if len(ep.SecretExpiry) == 0 {
		ep.SecretExpiry = nil
	} else {
		exp := make([]time.Time, len(ep.SecretExpiry))
		for i, t := range ep.SecretExpiry {
			exp[i] = instant(t)
		}
		ep.SecretExpiry = exp
	}
	if len(ep.Events) == 0 {
		ep.Events = nil
	}
	if len(ep.Secrets) == 0 {
		ep.Secrets = nil
	}
	if len(ep.Headers) == 0 {
		ep.Headers = nil
	}
	if len(ep.Destination.Brokers) == 0 {
		ep.Destination.Brokers = nil
	}
	if ep.Destination.Type == config.DestinationWebhook {
		ep.Destination.Type = "" // the default, named or not
	}
	if len(ep.Auth.Scopes) == 0 {
		ep.Auth.Scopes = nil
	}
	return ep
}

func instant(t time.Time) time.Time { return t.Round(0).UTC() }
