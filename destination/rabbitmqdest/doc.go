// Package rabbitmqdest is the RabbitMQ destination (type "rabbitmq"), over
// github.com/rabbitmq/amqp091-go: each attempt publishes the event to an
// exchange with a routing key, persistent and mandatory, and counts once the
// broker confirmed it (publisher confirms); a message no queue takes comes
// back (312 NO_ROUTE) and is a permanent failure, as is an exchange that
// does not exist (404 NOT_FOUND) or refused credentials (403
// ACCESS_REFUSED).
//
// Connections are shared per URL (credentials and virtual host included),
// TLS and guard, dialed through the SSRF guard's dialer (amqp091's
// Config.Dial), and each endpoint has a channel of its own on it, so that
// one endpoint's channel error never closes another's. Channels and
// connections close when idle. The package imports the destination
// vocabulary and amqp091, never the engine.
//
// The tests start Debian's rabbitmq-server as a throw-away node
// (internal/rabbittest).
package rabbitmqdest
