package console

import (
	"math"
	"strconv"
	"time"
)

// chart is a latency-over-time chart of an endpoint's attempts, laid out
// on the server and drawn as inline SVG by the template (no script, no
// style attributes).
type chart struct {
	W, H   int
	Left   int // x of the y axis
	Bottom int // y of the x axis
	Points []chartPoint
	Line   string // polyline points through the successful attempts
	YTicks []chartTick
	XTicks []chartTick
	Empty  bool
}

type chartPoint struct {
	X, Y  float64
	OK    bool
	Title string
}

type chartTick struct {
	X, Y   float64
	Label  string
	Anchor string // text-anchor of an x label
}

// Chart geometry in SVG user units.
const (
	chartW, chartH           = 720, 220
	chartLeft, chartRight    = 56, 12
	chartTop, chartBottomPad = 12, 28
)

// latencyChart lays out attempts (any order) by start time and duration.
func latencyChart(attempts []attempt) chart {
	c := chart{W: chartW, H: chartH, Left: chartLeft, Bottom: chartH - chartBottomPad}
	var t0, t1 time.Time
	maxMS := 0.0
	n := 0
	for _, a := range attempts {
		if a.StartedAt.IsZero() || !isAttempt(a.Class) {
			continue
		}
		n++
		if t0.IsZero() || a.StartedAt.Before(t0) {
			t0 = a.StartedAt
		}
		if a.StartedAt.After(t1) {
			t1 = a.StartedAt
		}
		maxMS = math.Max(maxMS, a.DurationMS)
	}
	if n == 0 {
		c.Empty = true
		return c
	}
	top := niceCeil(maxMS)
	span := t1.Sub(t0)
	if span <= 0 {
		span = time.Second
		t0 = t0.Add(-span / 2)
	}
	plotW := float64(chartW - chartLeft - chartRight)
	plotH := float64(c.Bottom - chartTop)
	x := func(t time.Time) float64 { return float64(chartLeft) + plotW*float64(t.Sub(t0))/float64(span) }
	y := func(ms float64) float64 { return float64(c.Bottom) - plotH*ms/top }
	// The line joins successes from the oldest to the newest.
	ok := make([]chartPoint, 0, n)
	for i := len(attempts) - 1; i >= 0; i-- {
		a := attempts[i]
		if a.StartedAt.IsZero() || !isAttempt(a.Class) {
			continue
		}
		pt := chartPoint{X: round1(x(a.StartedAt)), Y: round1(y(a.DurationMS)), OK: a.Class == "success",
			Title: a.StartedAt.UTC().Format(time.RFC3339) + " · " + strconv.FormatFloat(a.DurationMS, 'f', 1, 64) + " ms · " + a.Class + statusText(a.Status)}
		c.Points = append(c.Points, pt)
		if pt.OK {
			ok = append(ok, pt)
		}
	}
	for _, pt := range ok {
		c.Line += strconv.FormatFloat(pt.X, 'f', 1, 64) + "," + strconv.FormatFloat(pt.Y, 'f', 1, 64) + " "
	}
	for i := 0; i <= 4; i++ {
		ms := top * float64(i) / 4
		c.YTicks = append(c.YTicks, chartTick{X: chartLeft - 6, Y: round1(y(ms)), Label: strconv.FormatFloat(ms, 'f', -1, 64) + " ms"})
	}
	layout := "15:04:05"
	switch {
	case span < time.Minute:
		layout = "15:04:05.000"
	case span > 24*time.Hour:
		layout = "01-02 15:04"
	}
	for i := 0; i <= 3; i++ {
		t := t0.Add(span * time.Duration(i) / 3)
		anchor := "middle"
		switch i {
		case 0:
			anchor = "start"
		case 3:
			anchor = "end"
		}
		c.XTicks = append(c.XTicks, chartTick{X: round1(x(t)), Y: float64(c.Bottom + 18), Label: t.UTC().Format(layout), Anchor: anchor})
	}
	return c
}

// isAttempt reports whether a log record's class is an HTTP attempt (not a
// dead-lettering, parking or expiry record).
func isAttempt(class string) bool {
	switch class {
	case "dead_letter", "parked", "expired":
		return false
	}
	return true
}

func statusText(s int) string {
	if s == 0 {
		return ""
	}
	return " · HTTP " + strconv.Itoa(s)
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (at least 1).
func niceCeil(v float64) float64 {
	if v <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }
