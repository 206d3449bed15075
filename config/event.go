package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// OperationalPrefix starts the types of hookjet's own events
// (hookjet.endpoint.disabled, hookjet.dead_letter, ...): applications cannot
// publish them, and only patterns that name it match them.
const OperationalPrefix = "hookjet."

// IsOperational reports whether eventType is one of hookjet's own types: it
// starts with [OperationalPrefix].
func IsOperational(eventType string) bool {
	return strings.HasPrefix(eventType, OperationalPrefix)
}

// namesOperational reports whether pattern's first token is literally
// "hookjet": the only patterns that match hookjet's own event types.
func namesOperational(pattern string) bool {
	return strings.HasPrefix(pattern, OperationalPrefix)
}

// MatchEvent reports whether the NATS-style pattern matches eventType. Tokens
// are separated by '.'; '*' matches exactly one token and '>', allowed only as
// the last token, one or more trailing tokens. An invalid pattern or an event
// type with an empty token matches nothing. hookjet's own types
// ([IsOperational]) match only patterns whose first token is "hookjet"
// (hookjet.>, hookjet.endpoint.*), never > or *.*. MatchEvent does not
// allocate.
func MatchEvent(pattern, eventType string) bool {
	if pattern == "" || eventType == "" {
		return false
	}
	if IsOperational(eventType) && !namesOperational(pattern) {
		return false
	}
	p, s := pattern, eventType
	for {
		var pt, st string
		var pMore, sMore bool
		pt, p, pMore = strings.Cut(p, ".")
		st, s, sMore = strings.Cut(s, ".")
		if st == "" {
			return false
		}
		switch pt {
		case ">":
			return !pMore && (!sMore || validTokens(s))
		case "*":
		default:
			if pt != st {
				return false
			}
		}
		if !pMore || !sMore {
			return pMore == sMore
		}
	}
}

// validTokens reports whether s is one or more non-empty '.'-separated tokens.
func validTokens(s string) bool {
	return s != "" && s[0] != '.' && s[len(s)-1] != '.' && !strings.Contains(s, "..")
}

// validatePattern checks an event pattern: non-empty tokens without white
// space, '*' and '>' only as whole tokens, '>' only last.
func validatePattern(p string) error {
	if p == "" {
		return errors.New("empty pattern")
	}
	if len(p) > MaxEventTypeLen {
		// A subject past nats-server's 4 KiB control line makes the server
		// close the publishing connection.
		return fmt.Errorf("pattern is %d bytes, at most %d", len(p), MaxEventTypeLen)
	}
	if strings.ContainsFunc(p, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\r' || r == '\n' || r == 0 || r == 0x7f || r < ' '
	}) {
		return errors.New("pattern contains white space or control characters")
	}
	tokens := strings.Split(p, ".")
	for i, t := range tokens {
		switch {
		case t == "":
			return errors.New("pattern has an empty token")
		case t == ">" && i != len(tokens)-1:
			return errors.New(`">" must be the last token`)
		case t != "*" && t != ">" && strings.ContainsAny(t, "*>"):
			return errors.New(`"*" and ">" must be whole tokens`)
		}
	}
	return nil
}

// MaxEventTypeLen is the longest event type or pattern, in bytes.
const MaxEventTypeLen = 255

// ValidateEventType checks an event type as published (the subject after
// "hookjet.events."): what [MatchEvent] accepts as a pattern, without the
// wildcards '*' and '>'. The error does not repeat s.
func ValidateEventType(s string) error {
	for t := range strings.SplitSeq(s, ".") {
		if t == "*" || t == ">" {
			return errors.New(`"*" and ">" are wildcards, not allowed in an event type`)
		}
	}
	if err := validatePattern(s); err != nil {
		return errors.New(strings.Replace(err.Error(), "pattern", "event type", 1))
	}
	return nil
}

// CheckPublishable checks an event type an application publishes: a valid
// type ([ValidateEventType]) that is not one of hookjet's own
// ([IsOperational]). The error does not repeat s.
func CheckPublishable(s string) error {
	if err := ValidateEventType(s); err != nil {
		return err
	}
	if IsOperational(s) {
		return errors.New(`is reserved: types starting with "hookjet." are hookjet's own operational events, which applications cannot publish`)
	}
	return nil
}

// covers reports whether every event type that valid pattern b matches is
// also matched by valid pattern a.
func covers(a, b string) bool {
	if namesOperational(b) && !namesOperational(a) {
		return false // b matches hookjet's own types, which a never does
	}
	for {
		var at, bt string
		var aMore, bMore bool
		at, a, aMore = strings.Cut(a, ".")
		bt, b, bMore = strings.Cut(b, ".")
		switch {
		case at == ">":
			return true // b has at least this token left
		case bt == ">":
			return false // b matches any number of tokens here, a a fixed one
		case at != "*" && at != bt:
			return false
		}
		if !aMore || !bMore {
			return aMore == bMore
		}
	}
}

// normalizeEvents returns patterns without duplicates and without patterns
// that another valid pattern in the list covers, keeping the order. Invalid
// patterns are kept for validation to report.
func normalizeEvents(patterns []string) []string {
	out := make([]string, 0, len(patterns))
	for i, p := range patterns {
		if validatePattern(p) != nil {
			out = append(out, p)
			continue
		}
		if slices.Contains(patterns[:i], p) {
			continue // a duplicate
		}
		covered := false
		for _, q := range patterns {
			if q != p && validatePattern(q) == nil && covers(q, p) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, p)
		}
	}
	return out
}
