// Package client is a typed Go client of hookjet's admin and publish APIs
// (docs/api.md; the OpenAPI document is api/openapi.json, served at
// GET /api/v1/openapi.json), over package api's types.
//
//	c := client.New("http://127.0.0.1:8089", client.WithToken(token))
//	res, err := c.Publish(ctx, []api.PublishEvent{{Type: "order.created", Data: json.RawMessage(`{"order":42}`)}})
//	for rec, err := range c.EndpointAttempts(ctx, "crm", client.AttemptQuery{}) { ... }
//
// Every call takes a context first. Listings page with cursors: a Page
// method returns one page and its next cursor (Endpoints,
// EndpointAttemptsPage, AttemptsPage), and an iterator follows them to the
// end (AllEndpoints, EndpointAttempts, Attempts). An error answer is an
// [*Error] carrying the status and the server's message and fields, matched
// with errors.As; it wraps the api error kinds where they map
// (api.ErrUnknownEndpoint for a 404 of an endpoint route, api.ErrBadRequest
// for a 400, api.ErrEndpointExists and api.ErrConflict for a 409), matched
// with errors.Is. The command line (package cli) makes every API call
// through it.
package client
