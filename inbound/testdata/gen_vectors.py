#!/usr/bin/env python3
"""Builds vectors.json: signed requests for each inbound scheme, computed
with Python's hmac module from each provider's documented algorithm, never
with hookjet's Go code.

- standard: Standard Webhooks, "v1," + base64(HMAC-SHA256(base64-decoded
  whsec_ secret, id + "." + timestamp + "." + body)).
- stripe: Stripe-Signature "t=<ts>,v1=<hex HMAC-SHA256(secret string,
  ts + "." + body)>" (stripe.com/docs/webhooks/signatures, "verify manually").
- github: X-Hub-Signature-256 "sha256=" + hex HMAC-SHA256(secret, body)
  (docs.github.com, "Validating webhook deliveries"; its published example
  is the first github vector).
- shopify: X-Shopify-Hmac-Sha256 base64 HMAC-SHA256(client secret, body)
  (shopify.dev, "Verify webhooks").
- hmac: the configurable scheme.

Run: python3 gen_vectors.py > vectors.json
"""
import base64, hashlib, hmac, json

NOW = 1764547200  # 2025-12-01T00:00:00Z, the clock of every vector

def std_sig(secret, msg_id, ts, body):
    key = base64.b64decode(secret[len("whsec_"):])
    mac = hmac.new(key, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()

def stripe_sig(secret, ts, body):
    return hmac.new(secret.encode(), f"{ts}.".encode() + body, hashlib.sha256).hexdigest()

def mac(secret, body, algo="sha256"):
    return hmac.new(secret.encode(), body, getattr(hashlib, algo)).digest()

V = []
def add(name, source, headers, body, outcome, id="", type=""):
    V.append({"name": name, "source": source, "headers": headers,
              "body": body.decode(), "now": NOW, "outcome": outcome, "id": id, "type": type})

STD = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
STD2 = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
std = {"id": "std", "scheme": "standard", "secrets": [STD]}
b = b'{"type":"invoice.paid","data":{"n":1}}'
add("standard valid", std, {"webhook-id": "msg_1", "webhook-timestamp": str(NOW), "webhook-signature": std_sig(STD, "msg_1", NOW, b)}, b, "accepted", "msg_1", "invoice.paid")
add("standard second secret (rotation)", {**std, "secrets": [STD2, STD]}, {"webhook-id": "msg_1", "webhook-timestamp": str(NOW), "webhook-signature": std_sig(STD, "msg_1", NOW, b)}, b, "accepted", "msg_1", "invoice.paid")
add("standard several signatures", std, {"webhook-id": "msg_1", "webhook-timestamp": str(NOW), "webhook-signature": std_sig(STD2, "msg_1", NOW, b) + " " + std_sig(STD, "msg_1", NOW, b)}, b, "accepted", "msg_1", "invoice.paid")
add("standard body changed", std, {"webhook-id": "msg_1", "webhook-timestamp": str(NOW), "webhook-signature": std_sig(STD, "msg_1", NOW, b)}, b + b" ", "invalid_signature")
add("standard id changed", std, {"webhook-id": "msg_2", "webhook-timestamp": str(NOW), "webhook-signature": std_sig(STD, "msg_1", NOW, b)}, b, "invalid_signature")
add("standard old", std, {"webhook-id": "msg_1", "webhook-timestamp": str(NOW - 301), "webhook-signature": std_sig(STD, "msg_1", NOW - 301, b)}, b, "outside_window")
add("standard future", std, {"webhook-id": "msg_1", "webhook-timestamp": str(NOW + 301), "webhook-signature": std_sig(STD, "msg_1", NOW + 301, b)}, b, "outside_window")
add("standard at the edge", std, {"webhook-id": "msg_1", "webhook-timestamp": str(NOW - 300), "webhook-signature": std_sig(STD, "msg_1", NOW - 300, b)}, b, "accepted", "msg_1", "invoice.paid")
add("standard no signature", std, {"webhook-id": "msg_1", "webhook-timestamp": str(NOW)}, b, "missing_signature")
add("standard no id", std, {"webhook-timestamp": str(NOW), "webhook-signature": std_sig(STD, "", NOW, b)}, b, "missing_signature")

SK = "whsec_stripe_test_0123456789abcdef"
stripe = {"id": "stripe", "scheme": "stripe", "secrets": [SK]}
sb = b'{\n  "id": "evt_1NG8Du2eZvKYlo2CUI79vXWy",\n  "object": "event",\n  "type": "payment_intent.succeeded"\n}'
add("stripe valid", stripe, {"Stripe-Signature": f"t={NOW},v1={stripe_sig(SK, NOW, sb)},v0=6ffbb59b2300aae63f272406069a9788598b792a944a07aba816edb039989a39"}, sb, "accepted", "evt_1NG8Du2eZvKYlo2CUI79vXWy", "payment_intent.succeeded")
add("stripe rolling secret (two v1)", {**stripe, "secrets": ["whsec_new_secret_value"]}, {"Stripe-Signature": f"t={NOW},v1={stripe_sig(SK, NOW, sb)},v1={stripe_sig('whsec_new_secret_value', NOW, sb)}"}, sb, "accepted", "evt_1NG8Du2eZvKYlo2CUI79vXWy", "payment_intent.succeeded")
add("stripe wrong secret", {**stripe, "secrets": ["whsec_other"]}, {"Stripe-Signature": f"t={NOW},v1={stripe_sig(SK, NOW, sb)}"}, sb, "invalid_signature")
add("stripe timestamp changed", stripe, {"Stripe-Signature": f"t={NOW+1},v1={stripe_sig(SK, NOW, sb)}"}, sb, "invalid_signature")
add("stripe only v0", stripe, {"Stripe-Signature": f"t={NOW},v0={stripe_sig(SK, NOW, sb)}"}, sb, "invalid_signature")
add("stripe old", stripe, {"Stripe-Signature": f"t={NOW-600},v1={stripe_sig(SK, NOW-600, sb)}"}, sb, "outside_window")
add("stripe missing header", stripe, {}, sb, "missing_signature")

GH = "It's a Secret to Everybody"
gh = {"id": "gh", "scheme": "github", "secrets": [GH]}
hw = b"Hello, World!"
assert "sha256=" + mac(GH, hw).hex() == "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
add("github documented example", gh, {"X-Hub-Signature-256": "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17", "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958", "X-GitHub-Event": "issues"}, hw, "accepted", "72d3162e-cc78-11e3-81ab-4c9367dc0958", "issues")
add("github upper-case hex", gh, {"X-Hub-Signature-256": "sha256=" + mac(GH, hw).hex().upper(), "X-GitHub-Delivery": "d1", "X-GitHub-Event": "push"}, hw, "accepted", "d1", "push")
add("github sha1 header only", gh, {"X-Hub-Signature": "sha1=" + mac(GH, hw, "sha1").hex(), "X-GitHub-Delivery": "d1", "X-GitHub-Event": "push"}, hw, "missing_signature")
add("github wrong secret", {**gh, "secrets": ["other"]}, {"X-Hub-Signature-256": "sha256=" + mac(GH, hw).hex(), "X-GitHub-Delivery": "d1", "X-GitHub-Event": "push"}, hw, "invalid_signature")
add("github no prefix", gh, {"X-Hub-Signature-256": mac(GH, hw).hex(), "X-GitHub-Delivery": "d1", "X-GitHub-Event": "push"}, hw, "invalid_signature")
add("github rotation", {**gh, "secrets": ["new secret", GH]}, {"X-Hub-Signature-256": "sha256=" + mac(GH, hw).hex(), "X-GitHub-Delivery": "d2", "X-GitHub-Event": "pull_request"}, hw, "accepted", "d2", "pull_request")

SH = "shpss_0123456789abcdef0123456789abcdef"
shop = {"id": "shop", "scheme": "shopify", "secrets": [SH]}
ob = b'{"id":820982911946154508,"email":"jon@example.com"}'
add("shopify valid", shop, {"X-Shopify-Hmac-Sha256": base64.b64encode(mac(SH, ob)).decode(), "X-Shopify-Webhook-Id": "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043", "X-Shopify-Topic": "orders/create"}, ob, "accepted", "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043", "orders.create")
add("shopify hex instead of base64", shop, {"X-Shopify-Hmac-Sha256": mac(SH, ob).hex(), "X-Shopify-Webhook-Id": "w1", "X-Shopify-Topic": "orders/create"}, ob, "invalid_signature")
add("shopify missing header", shop, {"X-Shopify-Webhook-Id": "w1", "X-Shopify-Topic": "orders/create"}, ob, "missing_signature")
add("shopify body changed", shop, {"X-Shopify-Hmac-Sha256": base64.b64encode(mac(SH, ob)).decode(), "X-Shopify-Webhook-Id": "w1", "X-Shopify-Topic": "orders/create"}, ob[:-1] + b',"x":1}', "invalid_signature")

HK = "plain-secret"
h = {"id": "custom", "scheme": "hmac", "secrets": [HK], "header": "X-Signature", "algorithm": "sha512", "encoding": "base64", "prefix": "sha512=", "id_header": "X-Event-Id", "type_header": "X-Event-Type"}
cb = b'{"hello":"world"}'
add("hmac sha512 base64 prefix", h, {"X-Signature": "sha512=" + base64.b64encode(mac(HK, cb, "sha512")).decode(), "X-Event-Id": "e-1", "X-Event-Type": "thing.happened"}, cb, "accepted", "e-1", "thing.happened")
h1 = {"id": "legacy", "scheme": "hmac", "secrets": [HK], "header": "X-Sig", "algorithm": "sha1"}
add("hmac sha1 hex, no id or type headers", h1, {"X-Sig": mac(HK, cb, "sha1").hex()}, cb, "accepted", "sha256:" + hashlib.sha256(cb).hexdigest(), "")
add("hmac wrong algorithm", h1, {"X-Sig": mac(HK, cb).hex()}, cb, "invalid_signature")
h2 = {"id": "plain", "scheme": "hmac", "secrets": [HK], "header": "X-Sig"}
add("hmac default sha256 hex", h2, {"X-Sig": mac(HK, cb).hex()}, cb, "accepted", "sha256:" + hashlib.sha256(cb).hexdigest(), "")
add("hmac missing header", h2, {"X-Other": mac(HK, cb).hex()}, cb, "missing_signature")

print(json.dumps(V, indent=2))
