// Package opsevent publishes hookjet's own events: when an endpoint is
// disabled or enabled, when its breaker opens or closes, and when it
// dead-letters, hookjet stores an ordinary event in HOOKJET_EVENTS, on
// hookjet.events.<type>, that endpoints subscribe to like any other:
//
//   - hookjet.endpoint.disabled, hookjet.endpoint.enabled,
//     hookjet.endpoint.breaker_opened, hookjet.endpoint.breaker_closed: one
//     event per change, at the moment hookjet.ops.* announces it;
//   - hookjet.dead_letter: at most one per endpoint and minute, published
//     when the minute is over, with the number of dead letters of that
//     minute (this process's; with several processes the first to store
//     its count wins, since the event id is the endpoint and the minute).
//
// Each carries the payload [Payload] ({"type", "endpoint": {"id",
// "description"}, "tenant", "reason", "count", "at"}: no URL, error text or
// owner) and the endpoint's tenant in Hookjet-Tenant, so tenant routing
// applies. A client may publish to hookjet.events.hookjet.* itself: such an
// event goes to no one, since only hookjet can make the mark it carries in
// [HeaderMark] (an HMAC over its id, type, tenant and payload under a key
// derived from security.secret_key, which every hookjet process shares).
// [Key.About] checks the mark and says which endpoint an event is about:
// the match stage never delivers it to that endpoint.
//
// [Publisher] keeps state only for the endpoints that dead-lettered in the
// current minute, and runs one goroutine (Run) that stores the events; the
// delivery path never waits for it. The package imports NATS and the
// standard library, never the engine.
package opsevent
