package console

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// volume is a bar chart of an endpoint's deliveries and failed attempts
// per hour over the last 24 hours, laid out on the server and drawn as
// inline SVG by the template (no script, no style attributes). Every hour
// has its slot, so an hour without attempts reads as zero, not as a gap a
// line would jump over.
type volume struct {
	W, H      int
	Left      int // x of the y axis
	Bottom    int // y of the x axis
	Hours     []volumeHour
	YTicks    []chartTick
	XTicks    []chartTick
	Delivered int // over the counted hours
	Failed    int
	// Partial is the oldest time the records read reach back to when
	// they do not cover the 24 hours (a busy endpoint): hours before it
	// are drawn as not counted, never as zero, and its own hour's counts
	// are "at least". Zero when all 24 hours are counted.
	Partial time.Time
}

// volumeHour is one hour's slot: its bars, or a "not counted" mark.
type volumeHour struct {
	Start     time.Time
	Delivered int
	Failed    int
	Counted   bool
	AtLeast   bool    // only part of the hour was read
	X, W      float64 // the slot
	OK, Bad   volumeBar
	Title     string
}

// volumeBar is a bar's rectangle; H 0 is drawn as a zero mark on the axis.
type volumeBar struct{ X, Y, W, H float64 }

// Volume chart geometry in SVG user units.
const (
	volumeW, volumeH     = 760, 240
	volumeLeft           = 48
	volumeRight          = 12
	volumeTop            = 26
	volumeBottomPad      = 40
	volumeHours          = 24
	volumePages          = 2 // pages of the delivery log read, 1000 records each
	volumePageSize       = 1000
	volumeSlotGapPercent = 18
)

// hourlyVolume counts attempts (newest first, as the delivery log pages
// them) into the 24 hours ending with the hour of now. from, when not zero,
// is the oldest time the records cover: hours that end before it are not
// counted.
func hourlyVolume(attempts []attempt, now, from time.Time) volume {
	v := volume{W: volumeW, H: volumeH, Left: volumeLeft, Bottom: volumeH - volumeBottomPad}
	first := now.UTC().Truncate(time.Hour).Add(-(volumeHours - 1) * time.Hour)
	v.Hours = make([]volumeHour, volumeHours)
	for i := range v.Hours {
		h := &v.Hours[i]
		h.Start = first.Add(time.Duration(i) * time.Hour)
		h.Counted = from.IsZero() || h.Start.Add(time.Hour).After(from)
		h.AtLeast = !from.IsZero() && h.Counted && !h.Start.After(from)
	}
	v.Partial = from
	for _, a := range attempts {
		if a.StartedAt.IsZero() || !isAttempt(a.Class) || a.Class == "discarded" || a.Class == "cancelled" {
			continue
		}
		i := int(a.StartedAt.UTC().Sub(first) / time.Hour)
		if a.StartedAt.Before(first) || a.StartedAt.Before(from) || i >= volumeHours || !v.Hours[i].Counted {
			continue
		}
		if a.Class == "success" {
			v.Hours[i].Delivered++
			v.Delivered++
		} else {
			v.Hours[i].Failed++
			v.Failed++
		}
	}
	v.layout()
	return v
}

// layout places the bars, the axes' ticks and the hours' titles.
func (v *volume) layout() {
	most := 0
	for _, h := range v.Hours {
		most = max(most, h.Delivered, h.Failed)
	}
	top, step := countScale(most)
	plotW := float64(v.W - v.Left - volumeRight)
	plotH := float64(v.Bottom - volumeTop)
	slot := plotW / volumeHours
	gap := slot * volumeSlotGapPercent / 100
	barW := (slot - gap) / 2
	y := func(n int) float64 { return float64(v.Bottom) - plotH*float64(n)/float64(top) }
	for i := range v.Hours {
		h := &v.Hours[i]
		h.X, h.W = round1(float64(v.Left)+slot*float64(i)), round1(slot)
		x0 := float64(v.Left) + slot*float64(i) + gap/2
		h.OK = volumeBar{X: round1(x0), Y: round1(y(h.Delivered)), W: round1(barW), H: round1(float64(v.Bottom) - y(h.Delivered))}
		h.Bad = volumeBar{X: round1(x0 + barW), Y: round1(y(h.Failed)), W: round1(barW), H: round1(float64(v.Bottom) - y(h.Failed))}
		span := h.Start.Format("15:04") + "–" + h.Start.Add(time.Hour).Format("15:04") + " UTC"
		switch {
		case h.AtLeast:
			h.Title = span + ": at least " + plural(h.Delivered, "delivery", "deliveries") + ", " + plural(h.Failed, "failed attempt", "failed attempts") + " (only the most recent attempts were read)"
		case h.Counted:
			h.Title = span + ": " + plural(h.Delivered, "delivery", "deliveries") + ", " + plural(h.Failed, "failed attempt", "failed attempts")
		default:
			h.Title = span + ": not counted (only the most recent attempts were read)"
		}
		if i%3 == 0 {
			v.XTicks = append(v.XTicks, chartTick{X: round1(x0 + barW), Y: float64(v.Bottom + 16), Label: h.Start.Format("15:04"), Anchor: "middle"})
		}
	}
	for n := 0; n <= top; n += step {
		v.YTicks = append(v.YTicks, chartTick{X: float64(v.Left - 6), Y: round1(y(n)), Label: strconv.Itoa(n)})
	}
}

// countScale is the top of a count axis at least most (at least 1) and
// the step of its ticks: whole numbers only, at most 5 ticks above zero.
func countScale(most int) (top, step int) {
	if most < 1 {
		return 1, 1
	}
	if most <= 5 {
		return most, 1
	}
	step = int(niceCeil(float64(most) / 5))
	top = (most + step - 1) / step * step
	return top, step
}

// plural is "1 delivery" or "3 deliveries".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// loadVolume reads endpoint id's attempts of the last 24 hours from the
// delivery log, at most volumePages pages, and charts them.
func (c *Console) loadVolume(ctx context.Context, id string, now time.Time) (volume, error) {
	var all []attempt
	var from time.Time
	after := ""
	for page := 0; ; page++ {
		v := url.Values{"since": {now.Add(-volumeHours * time.Hour).UTC().Format(time.RFC3339)}, "limit": {strconv.Itoa(volumePageSize)}}
		if after != "" {
			v.Set("after", after)
		}
		var pg attemptPage
		if _, err := c.api.call(ctx, http.MethodGet, "/api/v1/endpoints/"+url.PathEscape(id)+"/attempts?"+v.Encode(), nil, &pg); err != nil {
			return volume{}, err
		}
		all = append(all, pg.Attempts...)
		if pg.Next == "" {
			break
		}
		if page+1 == volumePages {
			// More than the chart reads: count the hours the records
			// read cover, whole, and say so.
			from = all[len(all)-1].StartedAt
			break
		}
		after = pg.Next
	}
	return hourlyVolume(all, now, from), nil
}
