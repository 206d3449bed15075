package cli

import (
	"context"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/server"
)

// Options are the knobs of [Start]: [server.Options].
type Options = server.Options

// Start runs hookjet in this process as 'hookjet serve' does, without
// signals or the command line: the in-process entry of the end-to-end
// tests. It is [server.Start]; the commands themselves only parse
// arguments.
func Start(ctx context.Context, cfg *config.Config, o Options) (*server.Server, error) {
	return server.Start(ctx, cfg, o)
}
