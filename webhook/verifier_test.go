package webhook_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookjet/hookjet/internal/testkit"
	"github.com/hookjet/hookjet/signature"
	"github.com/hookjet/hookjet/webhook"
)

// The Standard Webhooks specification's example.
const (
	specSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	specID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	specTS     = 1614265330
	specBody   = `{"test": 2432232314}`
	specSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="

	otherSecret = "whsec_aG9va2pldC1nb2xkZW4ta2V5LTItMDEyMzQ1Njc4OWFi"
)

var specTime = time.Unix(specTS, 0)

// refSign signs with the reference signer of package testkit, written
// independently of package signature.
func refSign(t testing.TB, secret, id, ts string, body []byte) string {
	t.Helper()
	return testkit.RefSign(testkit.RefKey(t, secret), id, ts, body)
}

func headers(id, ts, sig string) http.Header {
	h := http.Header{}
	if id != "" {
		h.Set(webhook.HeaderID, id)
	}
	if ts != "" {
		h.Set(webhook.HeaderTimestamp, ts)
	}
	if sig != "" {
		h.Set(webhook.HeaderSignature, sig)
	}
	return h
}

func fixedClock(t time.Time) webhook.Option {
	return webhook.WithClock(func() time.Time { return t })
}

func TestVerify(t *testing.T) {
	ts := strconv.FormatInt(specTS, 10)
	body := []byte(specBody)
	tol := webhook.DefaultTolerance
	signedAt := func(at time.Time) (string, string) {
		s := strconv.FormatInt(at.Unix(), 10)
		return s, refSign(t, specSecret, specID, s, body)
	}
	oldTS, oldSig := signedAt(specTime.Add(-tol - time.Second))
	edgeOldTS, edgeOldSig := signedAt(specTime.Add(-tol))
	newTS, newSig := signedAt(specTime.Add(tol + time.Second))
	edgeNewTS, edgeNewSig := signedAt(specTime.Add(tol))
	otherSig := refSign(t, otherSecret, specID, ts, body)
	mac := strings.TrimPrefix(specSig, "v1,")

	tests := []struct {
		name    string
		secrets []string
		h       http.Header
		body    string
		want    error
	}{
		{name: "spec example", h: headers(specID, ts, specSig)},
		{name: "rotation: signed with first secret", secrets: []string{specSecret, otherSecret}, h: headers(specID, ts, specSig)},
		{name: "rotation: signed with second secret", secrets: []string{specSecret, otherSecret}, h: headers(specID, ts, otherSig)},
		{name: "rotation: sender signs with both", secrets: []string{otherSecret}, h: headers(specID, ts, specSig+" "+otherSig)},
		{name: "wrong secret", secrets: []string{otherSecret}, h: headers(specID, ts, specSig), want: webhook.ErrNoMatchingSignature},
		{name: "tampered body", h: headers(specID, ts, specSig), body: `{"test": 2432232315}`, want: webhook.ErrNoMatchingSignature},
		{name: "empty body when signed non-empty", h: headers(specID, ts, specSig), body: "-", want: webhook.ErrNoMatchingSignature},
		{name: "tampered id", h: headers(specID+"x", ts, specSig), want: webhook.ErrNoMatchingSignature},
		{name: "tampered timestamp", h: headers(specID, strconv.FormatInt(specTS+1, 10), specSig), want: webhook.ErrNoMatchingSignature},
		{name: "missing webhook-id", h: headers("", ts, specSig), want: webhook.ErrMissingHeader},
		{name: "missing webhook-timestamp", h: headers(specID, "", specSig), want: webhook.ErrMissingHeader},
		{name: "missing webhook-signature", h: headers(specID, ts, ""), want: webhook.ErrMissingHeader},
		{name: "blank webhook-signature", h: headers(specID, ts, "   "), want: webhook.ErrMissingHeader},
		{name: "timestamp too old", h: headers(specID, oldTS, oldSig), want: webhook.ErrTimestampTooOld},
		{name: "timestamp exactly tolerance old", h: headers(specID, edgeOldTS, edgeOldSig)},
		{name: "timestamp too new", h: headers(specID, newTS, newSig), want: webhook.ErrTimestampTooNew},
		{name: "timestamp exactly tolerance ahead", h: headers(specID, edgeNewTS, edgeNewSig)},
		{name: "timestamp far in the future", h: headers(specID, "9223372036854775807", specSig), want: webhook.ErrTimestampTooNew},
		{name: "timestamp garbage", h: headers(specID, "yesterday", specSig), want: webhook.ErrInvalidTimestamp},
		{name: "timestamp negative", h: headers(specID, "-1614265330", specSig), want: webhook.ErrInvalidTimestamp},
		{name: "timestamp with sign", h: headers(specID, "+1614265330", specSig), want: webhook.ErrInvalidTimestamp},
		{name: "timestamp in milliseconds overflows", h: headers(specID, "99999999999999999999", specSig), want: webhook.ErrInvalidTimestamp},
		{name: "timestamp float", h: headers(specID, "1614265330.5", specSig), want: webhook.ErrInvalidTimestamp},
		{name: "several signatures, last valid", h: headers(specID, ts, "v1,AAAA v1,"+base64.StdEncoding.EncodeToString(make([]byte, 32))+" "+specSig)},
		{name: "several signatures, first valid", h: headers(specID, ts, specSig+" v1,garbage")},
		{name: "several signatures, none valid", h: headers(specID, ts, otherSig+" v1,garbage"), want: webhook.ErrNoMatchingSignature},
		{name: "unknown version ignored", h: headers(specID, ts, "v2,"+mac), want: webhook.ErrNoMatchingSignature},
		{name: "asymmetric version ignored", h: headers(specID, ts, "v1a,"+mac), want: webhook.ErrNoMatchingSignature},
		{name: "unknown version next to valid v1", h: headers(specID, ts, "v1a,abc v2,"+mac+" "+specSig)},
		{name: "entry without version", h: headers(specID, ts, mac), want: webhook.ErrNoMatchingSignature},
		{name: "truncated signature", h: headers(specID, ts, specSig[:len(specSig)-4]), want: webhook.ErrNoMatchingSignature},
		{name: "signature with padding changed", h: headers(specID, ts, strings.TrimSuffix(specSig, "=")), want: webhook.ErrNoMatchingSignature},
		{name: "signature in second header line", h: func() http.Header {
			h := headers(specID, ts, otherSig)
			h.Add(webhook.HeaderSignature, specSig)
			return h
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			secrets := tt.secrets
			if secrets == nil {
				secrets = []string{specSecret}
			}
			v, err := webhook.NewVerifier(secrets, fixedClock(specTime))
			if err != nil {
				t.Fatalf("NewVerifier: %v", err)
			}
			b := specBody
			if tt.body != "" {
				b = tt.body
			}
			if b == "-" {
				b = ""
			}
			err = v.Verify(tt.h, []byte(b))
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("Verify() = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestVerifyTolerance(t *testing.T) {
	tests := []struct {
		name      string
		tolerance time.Duration
		skew      time.Duration // how far the clock is ahead of the timestamp
		want      error
	}{
		{name: "1s tolerance, 1s behind", tolerance: time.Second, skew: time.Second},
		{name: "1s tolerance, 2s behind", tolerance: time.Second, skew: 2 * time.Second, want: webhook.ErrTimestampTooOld},
		{name: "1s tolerance, 2s ahead", tolerance: time.Second, skew: -2 * time.Second, want: webhook.ErrTimestampTooNew},
		{name: "1h tolerance, 59m behind", tolerance: time.Hour, skew: 59 * time.Minute},
		{name: "subsecond clock within tolerance", tolerance: time.Second, skew: 1500 * time.Millisecond, want: webhook.ErrTimestampTooOld},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := webhook.NewVerifier([]string{specSecret}, webhook.WithTolerance(tt.tolerance), fixedClock(specTime.Add(tt.skew)))
			if err != nil {
				t.Fatalf("NewVerifier: %v", err)
			}
			err = v.Verify(headers(specID, strconv.FormatInt(specTS, 10), specSig), []byte(specBody))
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("Verify() = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestNewVerifier(t *testing.T) {
	const secretMaterial = "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	tests := []struct {
		name    string
		secrets []string
		opts    []webhook.Option
		want    error
	}{
		{name: "whsec secret", secrets: []string{specSecret}},
		{name: "raw base64 without whsec_", secrets: []string{secretMaterial}, want: webhook.ErrInvalidSecret},
		{name: "unpadded base64", secrets: []string{"whsec_" + base64.RawStdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdefg"))}},
		{name: "shorter than 24 bytes", secrets: []string{"whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdefghijklm"))}, want: webhook.ErrInvalidSecret},
		{name: "longer than 64 bytes", secrets: []string{"whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 65))}, want: webhook.ErrInvalidSecret},
		{name: "surrounding white space", secrets: []string{" " + specSecret + "\n"}},
		{name: "no secrets", secrets: nil, want: webhook.ErrNoSecrets},
		{name: "empty secret", secrets: []string{""}, want: webhook.ErrInvalidSecret},
		{name: "prefix only", secrets: []string{"whsec_"}, want: webhook.ErrInvalidSecret},
		{name: "not base64", secrets: []string{specSecret, "whsec_" + secretMaterial + "!!"}, want: webhook.ErrInvalidSecret},
		{name: "zero tolerance", secrets: []string{specSecret}, opts: []webhook.Option{webhook.WithTolerance(0)}, want: webhook.ErrInvalidTolerance},
		{name: "negative tolerance", secrets: []string{specSecret}, opts: []webhook.Option{webhook.WithTolerance(-time.Minute)}, want: webhook.ErrInvalidTolerance},
		{name: "nil options ignored", secrets: []string{specSecret}, opts: []webhook.Option{nil, webhook.WithClock(nil)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := webhook.NewVerifier(tt.secrets, tt.opts...)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("NewVerifier() error = %v, want %v", err, tt.want)
			}
			if err != nil {
				if v != nil {
					t.Error("NewVerifier returned a Verifier along with an error")
				}
				if strings.Contains(err.Error(), secretMaterial) {
					t.Errorf("error %q leaks the secret", err)
				}
			}
		})
	}
}

func TestVerifierDoesNotPrintSecrets(t *testing.T) {
	v, err := webhook.NewVerifier([]string{specSecret})
	if err != nil {
		t.Fatal(err)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(specSecret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"%v", "%+v", "%#v", "%s", "%x", "%d"} {
		out := fmt.Sprintf(format, v)
		if strings.Contains(out, fmt.Sprintf("%x", key)) || strings.Contains(out, string(key)) || strings.Contains(out, fmt.Sprint(key)) {
			t.Errorf("Sprintf(%q, verifier) = %s: leaks the key", format, out)
		}
	}
}

// vector is one golden signature in testdata/vectors.json.
type vector struct {
	Name      string `json:"name"`
	Secret    string `json:"secret"`
	ID        string `json:"id"`
	Timestamp string `json:"timestamp"`
	Body      string `json:"body"`
	Signature string `json:"signature"`
}

func TestVerifyGoldenVectors(t *testing.T) {
	data, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vectors []vector
	if err := json.Unmarshal(data, &vectors); err != nil {
		t.Fatal(err)
	}
	if len(vectors) == 0 {
		t.Fatal("no vectors in testdata/vectors.json")
	}
	for _, vec := range vectors {
		t.Run(vec.Name, func(t *testing.T) {
			sec, err := strconv.ParseInt(vec.Timestamp, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			v, err := webhook.NewVerifier([]string{vec.Secret}, fixedClock(time.Unix(sec, 0)))
			if err != nil {
				t.Fatal(err)
			}
			if err := v.Verify(headers(vec.ID, vec.Timestamp, vec.Signature), []byte(vec.Body)); err != nil {
				t.Errorf("Verify() = %v, want nil", err)
			}
			// The reference signer used by the fuzz test agrees with the vector.
			if got := refSign(t, vec.Secret, vec.ID, vec.Timestamp, []byte(vec.Body)); got != vec.Signature {
				t.Errorf("reference signer = %s, want %s", got, vec.Signature)
			}
		})
	}
}

func FuzzVerify(f *testing.F) {
	specKey, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(specSecret, "whsec_"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(specKey, specID, int64(0), []byte(specBody), specSig, "1614265330")
	f.Add([]byte(strings.Repeat("k", 24)), "", int64(-300), []byte{}, "", "")
	f.Add(make([]byte, 64), "id with spaces", int64(300), []byte("\x00\xff"), "v1, v1,, ,v1 v2,abc", "-1")
	f.Add([]byte(strings.Repeat("key", 10)), "x", int64(1<<40), []byte("{}"), "v1,"+strings.Repeat("A", 44), "99999999999999999999999")
	f.Fuzz(func(t *testing.T, key []byte, id string, skew int64, body []byte, sigHeader, tsHeader string) {
		if len(key) < signature.MinSecretBytes || len(key) > signature.MaxSecretBytes {
			return // NewVerifier refuses it; TestNewVerifier covers that
		}
		secret := "whsec_" + base64.StdEncoding.EncodeToString(key)
		v, err := webhook.NewVerifier([]string{secret}, fixedClock(specTime))
		if err != nil {
			t.Fatalf("NewVerifier(valid key): %v", err)
		}

		// Arbitrary headers: never panics, and passes only if an entry is
		// exactly the reference signature.
		err = v.Verify(headers(id, tsHeader, sigHeader), body)
		if err == nil {
			want := testkit.RefSign(key, id, tsHeader, body)
			found := false
			for _, e := range strings.Fields(sigHeader) {
				found = found || e == want
			}
			if !found {
				t.Fatalf("Verify accepted %q for id %q ts %q, reference signature %s", sigHeader, id, tsHeader, want)
			}
		}

		// A request signed by the reference signer within tolerance verifies.
		if id == "" {
			return
		}
		tol := int64(webhook.DefaultTolerance / time.Second)
		ts := strconv.FormatInt(specTS+skew%(tol+1), 10)
		sig := testkit.RefSign(key, id, ts, body)
		if err := v.Verify(headers(id, ts, sig), body); err != nil {
			t.Fatalf("Verify(reference-signed) = %v", err)
		}
	})
}

func BenchmarkVerify(b *testing.B) {
	body := []byte(strings.Repeat(`{"k":"v"}`, 110)) // ~1 KiB
	ts := strconv.FormatInt(specTS, 10)
	for _, n := range []int{1, 2} {
		b.Run(fmt.Sprintf("secrets=%d", n), func(b *testing.B) {
			secrets := []string{otherSecret, specSecret}[2-n:]
			v, err := webhook.NewVerifier(secrets, fixedClock(specTime))
			if err != nil {
				b.Fatal(err)
			}
			h := headers(specID, ts, refSign(b, specSecret, specID, ts, body))
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if err := v.Verify(h, body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestCanonicalHeaderKeys(t *testing.T) {
	for name, key := range webhook.CanonicalKeys {
		if want := http.CanonicalHeaderKey(name); key != want {
			t.Errorf("canonical key for %s = %q, want %q", name, key, want)
		}
	}
}
