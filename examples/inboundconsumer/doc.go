// Package inboundconsumer is an example of an application's own consumer of
// the webhooks hookjet's inbound gateway stored in HOOKJET_INBOUND: a durable
// JetStream consumer shared by every replica, with a [webhook.Store] (here
// NATS KV, webhook/kvdedupe) so that a provider's duplicate or a redelivery
// causes its effect once, and a failed effect is retried.
//
//	c, err := inboundconsumer.Start(ctx, js, inboundconsumer.Options{
//		Durable: "billing", Filter: "hookjet.inbound.stripe.>",
//		Handle:  func(ctx context.Context, ev inboundconsumer.Event) error { return charge(ctx, ev) },
//	})
//	defer c.Stop()
package inboundconsumer
