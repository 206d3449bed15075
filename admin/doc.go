// Package admin serves hookjet's HTTP admin API: health, readiness,
// Prometheus metrics, endpoint status and control, endpoint management,
// the dead-letter tools and the delivery log's routes. It speaks package
// api's types and maps api's error kinds to statuses (404 unknown
// endpoint, 400 bad request, 409 exists or conflict, 504 timed out).
//
// It declares what it needs from the rest of the process with its own
// interfaces: [Backend] (the delivery engine), [Deliveries] and
// [EndpointStore] (endpoint management, over package endpoints' stored
// form), [DeliveryLog] and [EventLookup]. Package server passes the
// implementations (dispatch, jetstream); admin imports neither, nor NATS.
package admin
