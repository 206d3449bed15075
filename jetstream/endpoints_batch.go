package jetstream

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/hookjet/hookjet/config"
)

// putWindow bounds the asynchronous publishes PutAll has awaiting their
// PubAck when the bucket takes no atomic batches.
const putWindow = 1000

// digestContext derives the key of Digest from security.secret_key.
const digestContext = "hookjet endpoint definition digest v1"

// Digest is a keyed digest (HMAC-SHA256 with a key derived from
// security.secret_key) of spec's whole definition, secrets and header
// values included (the key keeps it from revealing anything about them to
// a reader of the bucket): two specs have the same digest exactly when they
// deliver the same way. PutAll stores it beside each value (header
// Hookjet-Digest), so that a process can tell whether the bucket holds its
// definition without opening the value. It is cheap: a process computes it
// for every endpoint of its file at each start.
func (s *EndpointStore) Digest(spec config.EndpointSpec) string {
	b := make([]byte, 0, 512)
	str := func(v string) { b = append(strconv.AppendInt(b, int64(len(v)), 10), ':'); b = append(b, v...) }
	str(spec.ID)
	str(spec.URL)
	b = strconv.AppendInt(b, int64(len(spec.Events)), 10)
	for _, e := range spec.Events {
		str(e)
	}
	str(spec.Tenant)
	str(spec.Description)
	str(spec.Owner)
	str(spec.Filter)
	str(spec.Transform)
	b = strconv.AppendBool(b, spec.InsecureSkipVerify)
	b = strconv.AppendInt(b, int64(len(spec.Secrets)), 10)
	for i, sec := range spec.Secrets {
		str(sec.Reveal())
		var exp int64
		if i < len(spec.SecretExpiry) && !spec.SecretExpiry[i].IsZero() {
			exp = spec.SecretExpiry[i].UnixNano()
		}
		b = strconv.AppendInt(append(b, '@'), exp, 10)
	}
	names := make([]string, 0, len(spec.Headers))
	for name := range spec.Headers {
		names = append(names, name)
	}
	slices.Sort(names)
	b = strconv.AppendInt(b, int64(len(names)), 10)
	for _, name := range names {
		str(name)
		str(spec.Headers[name].Reveal())
	}
	b = appendOverrides(b, spec.Overrides)
	mac := hmac.New(sha256.New, s.digestKey)
	mac.Write(b)
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// appendOverrides appends every field of o (pointers to numbers) to b: '-'
// for an unset one. It reads the fields by reflection, so a field added to
// Overrides is covered without a change here.
func appendOverrides(b []byte, o config.Overrides) []byte {
	v := reflect.ValueOf(o)
	for i := range v.NumField() {
		f := v.Field(i)
		b = append(b, '|')
		if f.Kind() != reflect.Pointer { // a kind Overrides does not have yet
			j, _ := json.Marshal(f.Interface())
			b = append(b, j...)
			continue
		}
		if f.IsNil() {
			b = append(b, '-')
			continue
		}
		switch e := f.Elem(); e.Kind() {
		case reflect.Int, reflect.Int64:
			b = strconv.AppendInt(b, e.Int(), 10)
		case reflect.Float64:
			b = strconv.AppendFloat(b, e.Float(), 'g', -1, 64)
		default: // a kind Overrides does not have yet
			j, _ := json.Marshal(e.Interface())
			b = append(b, j...)
		}
	}
	return b
}

// PutAll stores every spec, sealed, whatever is there (as Put does), with
// its digest beside it. Where the bucket's stream takes atomic batches
// (nats-server >= 2.12; PutAll allows them on it) it writes batches of
// 1,000, which a server that syncs always stores with one fsync each rather
// than one per value; otherwise, or for a batch the server refuses,
// asynchronous publishes, at most putWindow awaiting their PubAck. It
// returns the ids not stored and the error of the first of them; a spec
// that cannot be encoded stops it there, with the batches before it stored.
func (s *EndpointStore) PutAll(ctx context.Context, specs []config.EndpointSpec) (failed []string, err error) {
	// The messages are made a batch at a time, so that storing 100,000
	// endpoints holds 1,000 encoded values, not all of them.
	atomic := len(specs) > 1 && s.allowAtomic(ctx)
	for len(specs) > 0 {
		n := min(len(specs), maxAtomicBatch)
		msgs, encErr := s.encode(specs[:n])
		if encErr != nil {
			return failed, encErr
		}
		specs = specs[n:]
		if atomic && len(msgs) > 1 && s.sendBatch(ctx, msgs) {
			continue
		}
		f, ferr := s.publishAll(ctx, msgs)
		failed = append(failed, f...)
		if err == nil {
			err = ferr
		}
	}
	return failed, err
}

// encode makes the KV messages of specs: each sealed, with its digest.
func (s *EndpointStore) encode(specs []config.EndpointSpec) ([]*nats.Msg, error) {
	msgs := make([]*nats.Msg, len(specs))
	for i, spec := range specs {
		b, err := json.Marshal(s.Record(spec))
		if err != nil {
			return nil, fmt.Errorf("encode endpoint %s: %w", spec.ID, err)
		}
		m := nats.NewMsg("$KV." + s.bucket + "." + spec.ID)
		m.Data = b
		m.Header.Set(HdrDigest, s.Digest(spec))
		msgs[i] = m
	}
	return msgs, nil
}

// allowAtomic makes sure the bucket's stream takes atomic batches,
// reporting false when the server does not (before 2.12, or refused).
func (s *EndpointStore) allowAtomic(ctx context.Context) bool {
	st, err := s.js.Stream(ctx, "KV_"+s.bucket)
	if err != nil {
		return false
	}
	cfg := st.CachedInfo().Config
	if cfg.AllowAtomicPublish {
		return true
	}
	cfg.AllowAtomicPublish = true
	up, err := s.js.UpdateStream(ctx, cfg)
	if err != nil {
		s.log.Debug("bucket takes no atomic batches", "bucket", s.bucket, "err", err)
		return false
	}
	return up.CachedInfo().Config.AllowAtomicPublish // a server that does not know the field drops it
}

// sendBatch sends msgs as one atomic batch and reports whether the server
// stored them all. The batch headers are removed again.
func (s *EndpointStore) sendBatch(ctx context.Context, msgs []*nats.Msg) bool {
	nc := s.js.Conn()
	id := nuid.Next()
	defer func() {
		for _, m := range msgs {
			for _, h := range []string{hdrBatchID, hdrBatchSeq, hdrBatchCommit} {
				m.Header.Del(h)
			}
		}
	}()
	last := len(msgs) - 1
	for j, m := range msgs[:last] {
		m.Header.Set(hdrBatchID, id)
		m.Header.Set(hdrBatchSeq, strconv.Itoa(j+1))
		if err := nc.PublishMsg(m); err != nil {
			return false
		}
	}
	m := msgs[last]
	m.Header.Set(hdrBatchID, id)
	m.Header.Set(hdrBatchSeq, strconv.Itoa(last+1))
	m.Header.Set(hdrBatchCommit, "1")
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := nc.RequestMsgWithContext(rctx, m)
	if err != nil {
		s.log.Debug("atomic batch not stored", "bucket", s.bucket, "err", err)
		return false
	}
	var ack struct {
		Count int `json:"count"`
		Error *struct {
			Code        int    `json:"err_code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(resp.Data, &ack); err != nil || ack.Error != nil {
		s.log.Debug("atomic batch refused", "bucket", s.bucket, "err", err, "reply", string(resp.Data))
		return false
	}
	return ack.Count == len(msgs)
}

// publishAll publishes msgs asynchronously, at most putWindow at a time
// awaiting their PubAck.
func (s *EndpointStore) publishAll(ctx context.Context, msgs []*nats.Msg) (failed []string, first error) {
	type sent struct {
		msg *nats.Msg
		ack natsjs.PubAckFuture
	}
	fail := func(m *nats.Msg, err error) {
		id := m.Subject[len("$KV."+s.bucket+"."):]
		if first == nil {
			first = fmt.Errorf("store endpoint %s: %w", id, err)
		}
		failed = append(failed, id)
	}
	wait := func(p sent) {
		select {
		case <-p.ack.Ok():
		case err := <-p.ack.Err():
			fail(p.msg, err)
		case <-ctx.Done():
			fail(p.msg, ctx.Err())
		}
	}
	window := make([]sent, 0, putWindow)
	for _, m := range msgs {
		if len(window) == putWindow {
			wait(window[0])
			window = window[1:]
		}
		f, err := s.js.PublishMsgAsync(m)
		if err != nil {
			fail(m, err)
			continue
		}
		window = append(window, sent{m, f})
	}
	for _, p := range window {
		wait(p)
	}
	return failed, first
}
