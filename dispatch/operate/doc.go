// Package operate carries out the operator's actions on the delivery
// engine: a signed test event to one endpoint, the history of an
// endpoint's events sent again, a deleted endpoint's waiting deliveries
// dropped, and breaker resets in every process. It writes tasks in the
// stored form of package dispatch/settle and wakes the endpoint's drain;
// it is apart from the delivery path and never imports package dispatch,
// which serves it the endpoints in force through [Endpoints].
package operate
