// Package upgrade upgrades, at start, a deployment of hookjet's first
// design (a durable consumer per endpoint, HOOKJET_REPLAY, disabled states
// in HOOKJET_ENDPOINTS) into the current one: the events and replays that
// waited become tasks in package dispatch/settle's stored form, the states
// move to HOOKJET_ENDPOINT_STATE. It runs once, before the fan-out starts,
// and never imports package dispatch, which hands it what it needs
// (Options).
package upgrade
