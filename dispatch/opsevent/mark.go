package opsevent

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
)

// HeaderMark is the header that marks an event in HOOKJET_EVENTS as one of
// hookjet's own: "v1," and the base64 HMAC-SHA256 of its id, type, tenant
// and payload under the [Key].
const HeaderMark = "Hookjet-Origin"

// markVersion starts a mark's value.
const markVersion = "v1,"

// Key makes and checks the marks of hookjet's own events. It is derived
// from security.secret_key, which every hookjet process shares and no
// application knows, so an application that publishes to
// hookjet.events.hookjet.* cannot make one.
type Key struct {
	k []byte
}

// NewKey derives the marking key from the secret key (security.secret_key
// or the generated one); the secret key itself never signs anything.
func NewKey(secret []byte) Key {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("hookjet operational events v1"))
	return Key{k: m.Sum(nil)}
}

// Mark is the value of HeaderMark for an event with id, type typ, tenant
// ("" for none) and payload data.
func (k Key) Mark(id, typ, tenant string, data []byte) string {
	return markVersion + base64.StdEncoding.EncodeToString(k.sum(id, typ, tenant, data))
}

func (k Key) sum(id, typ, tenant string, data []byte) []byte {
	m := hmac.New(sha256.New, k.k)
	// Ids, types and tenants hold no newline (publish.CheckID,
	// config.ValidateEventType, config.CheckTenant): the fields stay apart.
	m.Write([]byte(id + "\n" + typ + "\n" + tenant + "\n"))
	m.Write(data)
	return m.Sum(nil)
}

// About reports whether a stored event (its id, type, tenant, headers and
// payload) is one hookjet published, and the id of the endpoint it is
// about. An event without a valid mark, or whose payload names no
// endpoint, is not hookjet's (ok false). A zero Key knows no event.
func (k Key) About(id, typ, tenant string, h map[string][]string, data []byte) (endpoint string, ok bool) {
	if len(k.k) == 0 {
		return "", false
	}
	v := h[HeaderMark]
	if len(v) != 1 || len(v[0]) <= len(markVersion) || v[0][:len(markVersion)] != markVersion {
		return "", false
	}
	got, err := base64.StdEncoding.DecodeString(v[0][len(markVersion):])
	if err != nil || !hmac.Equal(got, k.sum(id, typ, tenant, data)) {
		return "", false
	}
	var p struct {
		Endpoint Endpoint `json:"endpoint"`
	}
	if json.Unmarshal(data, &p) != nil || p.Endpoint.ID == "" {
		return "", false
	}
	return p.Endpoint.ID, true
}

// About is [Key.About] with the Publisher's key; a nil Publisher knows no
// event.
func (p *Publisher) About(id, typ, tenant string, h map[string][]string, data []byte) (endpoint string, ok bool) {
	if p == nil {
		return "", false
	}
	return p.key.About(id, typ, tenant, h, data)
}
