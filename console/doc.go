// Package console serves hookjet's pages in the browser: the operators'
// console (/console/, on the admin listener) and the customers' portal
// (/portal/, on the admin listener or portal.listen). Both render HTML on
// the server (html/template, embedded with the stylesheet and a small
// script) from the admin API's JSON, which they get by calling the admin
// API's http.Handler in process: they depend on the API's contract, not on
// the delivery engine.
//
// Security: every value is escaped by html/template; the Content-Security-
// Policy allows only this origin's script and stylesheet (no inline script
// or style); every form carries a CSRF token of its session, and POSTs must
// come from this origin (Origin, Sec-Fetch-Site). Console sessions are
// HttpOnly, SameSite=Strict cookies (Secure over TLS) signed with a key
// derived from security.secret_key and admin.token; portal sessions are
// signed links scoped to one tenant. Both expire. No secret is rendered but
// the new one after creating an endpoint or rotating its secret.
package console
