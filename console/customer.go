package console

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/config"
)

// The portal speaks to a platform's customer, who knows neither circuit
// breakers nor parking: these say what happens to their deliveries, since
// when and until when, in UTC.

// customerState says why deliveries to e wait, or "" when they go, in the
// customer's words. Whether they wait, and why, is the admin API's answer
// (e.Waiting, from api.Waits); this only renders it, the most telling
// reason first: paused by the platform, the breaker, the receiver's hold.
func customerState(e endpoint) string {
	b := e.Breaker
	if w, ok := api.Find(e.Waiting, api.WaitDisabled); ok {
		switch {
		case strings.HasPrefix(w.Detail, "gone"):
			return "Paused because your endpoint answered 410 Gone: nothing is sent to it until it is enabled again. Events keep waiting for it."
		case w.Detail == "disabled by an operator": // the portal's Disable, or the platform's
			return "This endpoint is paused: nothing is sent to it until it is enabled again. Events keep waiting for it."
		}
		return "Paused by the platform: nothing is sent to this endpoint until it is turned back on. Events keep waiting for it."
	}
	if w, ok := api.Find(e.Waiting, api.WaitBreakerOpen); ok {
		s := "Paused after " + failures(b.ConsecutiveFailures) + " in a row"
		if b.OpenedAt != nil {
			s += " since " + clock(*b.OpenedAt)
		}
		if w.Until != nil {
			return s + "; retrying at " + clock(*w.Until) + ". Events keep waiting and nothing is lost."
		}
		return s + "; retrying soon. Events keep waiting and nothing is lost."
	}
	if _, ok := api.Find(e.Waiting, api.WaitHalfOpen); ok {
		return "Trying one delivery to see whether the endpoint works again (after " + failures(b.ConsecutiveFailures) + " in a row); the others follow once it succeeds."
	}
	if w, ok := api.Find(e.Waiting, api.WaitHeld); ok && w.Until != nil {
		return "Your endpoint asked us to wait (Retry-After); sending again at " + clock(*w.Until) + "."
	}
	return ""
}

// customerReason turns a parked record's reason into the customer's words.
func customerReason(reason string) string {
	switch reason {
	case "breaker":
		return "waiting: deliveries are paused after repeated failures; no request was sent"
	case "rate_limit":
		return "waiting: the endpoint's sending rate limit; no request was sent yet"
	case "in_flight":
		return "waiting: the most requests allowed at once are in progress"
	case "disabled":
		return "waiting: the endpoint is paused"
	case "held":
		return "waiting: the endpoint asked us to wait (Retry-After)"
	}
	return "waiting to be sent"
}

// failures is "10 failures" or "1 failure"; "repeated failures" when the
// count is not known.
func failures(n int) string {
	switch n {
	case 0:
		return "repeated failures"
	case 1:
		return "1 failure"
	}
	return strconv.Itoa(n) + " failures"
}

// clock is t as "14:02 UTC", with the date when it is not today (UTC).
func clock(t time.Time) string {
	t = t.UTC()
	if y, m, d := t.Date(); y != time.Now().UTC().Year() || m != time.Now().UTC().Month() || d != time.Now().UTC().Day() {
		return t.Format("Jan 2 15:04 UTC")
	}
	return t.Format("15:04 UTC")
}

// operatorWords are the phrases of hookjet's messages that name the
// operator's settings, and what the portal says instead: a customer
// cannot change the platform's configuration, only their endpoint.
var operatorWords = strings.NewReplacer(
	" ("+config.TenantGuardReason+")", " (deliveries go only to public internet addresses; use one)",
	" (security.https_only is set)", " (deliveries go only to https URLs)",
	" (portal.destinations)", "",
)

// maxEndpointsWords is the 409 of a create past security.max_endpoints.
var maxEndpointsWords = regexp.MustCompile(`security\.max_endpoints \(\d+\) reached`)

// configEndpointWords is the 409 of a change to an endpoint of the
// config file, which names the file.
var configEndpointWords = regexp.MustCompile(`endpoint "[^"]*" comes from .* \(source config\): \w+ it by editing that file and reloading \(SIGHUP\)`)

// customerWords is msg, an error of the admin API or of a delivery, in
// the customer's words: never an operator config key or file.
func customerWords(msg string) string {
	msg = operatorWords.Replace(msg)
	msg = configEndpointWords.ReplaceAllString(msg, "this endpoint is managed by the platform: ask it to change the endpoint")
	return maxEndpointsWords.ReplaceAllString(msg, "the most endpoints this platform allows already exist")
}

// expiresIn says how long until t, rounded to the minute, for a customer:
// "2h", "1h 30m", "45m", "6d 23h"; "now" once it is past.
func expiresIn(t time.Time) string {
	d := time.Until(t).Round(time.Minute)
	if d <= 0 {
		return "now"
	}
	days, hours, mins := int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour), int(d%time.Hour/time.Minute)
	var parts []string
	if days > 0 {
		parts = append(parts, strconv.Itoa(days)+"d")
	}
	if hours > 0 {
		parts = append(parts, strconv.Itoa(hours)+"h")
	}
	if mins > 0 && days == 0 {
		parts = append(parts, strconv.Itoa(mins)+"m")
	}
	if len(parts) == 0 {
		return "less than a minute"
	}
	return strings.Join(parts, " ")
}
