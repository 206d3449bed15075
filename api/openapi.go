package api

import (
	_ "embed"
	"slices"
)

//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the OpenAPI 3.1 document of the admin and publish APIs
// (openapi.json in this package), which the admin API serves at
// GET /api/v1/openapi.json and the end-to-end tests validate every request
// and answer against.
func OpenAPI() []byte { return slices.Clone(openAPI) }
