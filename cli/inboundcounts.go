package cli

import (
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/hookjet/hookjet/api"
)

// printInboundCounts writes a `hookjet status` line per inbound source.
func printInboundCounts(w io.Writer, counts map[string]api.InboundCounts) {
	for _, id := range slices.Sorted(maps.Keys(counts)) {
		c := counts[id]
		fmt.Fprintf(w, "inbound %s\t%d accepted, %d duplicates, %d signature failures, %d outside the window, %d too large, %d unavailable\n",
			id, c.Accepted, c.Duplicates, c.SignatureFailures, c.WindowRejections, c.TooLarge, c.Unavailable)
	}
}
