package cli

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/hookjet/hookjet/api"
)

// orderingFlags defines --ordering and --ordering-on-dead-letter on fs; the
// function it returns copies those given into an endpoint body under their
// JSON names. The API checks the values and names the field when one is
// wrong.
func orderingFlags(fs *flag.FlagSet) func(in map[string]any) {
	ordering := fs.String("ordering", "", "none, or key: deliver the events of one ordering key one at a time, in publish order")
	onDead := fs.String("ordering-on-dead-letter", "", "skip (a key moves on past a dead letter) or hold (it waits until the dead letter is replayed or discarded)")
	return func(in map[string]any) {
		fs.Visit(func(fl *flag.Flag) {
			switch fl.Name {
			case "ordering":
				in["ordering"] = *ordering
			case "ordering-on-dead-letter":
				in["ordering_on_dead_letter"] = *onDead
			}
		})
	}
}

// maxHeldShown bounds the held keys `endpoints show` lists.
const maxHeldShown = 10

// orderingText is the ordering line of `endpoints show`: the setting and,
// when keys are held, how many, since when and why.
func orderingText(s *api.EndpointSettings, h *api.HeldKeys) string {
	out := "none"
	if s != nil && s.Ordering != "" {
		out = s.Ordering
	}
	if s != nil && s.Ordering == "key" {
		onDead := s.OrderingOnDeadLetter
		if onDead == "" {
			onDead = "skip"
		}
		out += " (on dead letter: " + onDead + ")"
	}
	if h == nil || h.Count == 0 {
		return out
	}
	out += "; " + plural(h.Count, "key") + " held"
	if h.Oldest != nil {
		out += ", oldest since " + fmtTime(h.Oldest)
	}
	if why := h.WhyCounts(); why != "" {
		out += ", why: " + why
	}
	return out
}

// printHeldKeys lists up to maxHeldShown held keys under the ordering line.
func printHeldKeys(w io.Writer, h *api.HeldKeys) {
	if h == nil {
		return
	}
	shown := h.Keys[:min(len(h.Keys), maxHeldShown)]
	for _, k := range shown {
		fmt.Fprintf(w, "  %s  %s\n", keyText(k.Key), heldKeyText(k))
	}
	if more := h.Count - len(shown); more > 0 && len(shown) > 0 {
		fmt.Fprintf(w, "  (%d more held)\n", more)
	}
}

// heldKeyText says why one key is held, since when and what it waits on.
func heldKeyText(k api.HeldKey) string {
	out := k.Why + " since " + fmtTime(&k.Since) + ", event " + k.EventID
	if k.Attempts > 0 {
		out += ", " + plural(k.Attempts, "attempt")
	}
	if k.NextAttempt != nil {
		out += ", next attempt " + k.NextAttempt.UTC().Format(time.RFC3339)
	}
	return out
}

// keyText is an ordering key as `endpoints show` prints it: as it is, or
// quoted when it holds white space or is empty.
func keyText(k string) string {
	if k == "" || strings.ContainsFunc(k, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) {
		return strconv.Quote(k)
	}
	return k
}

// plural is "1 key", "3 keys".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}
