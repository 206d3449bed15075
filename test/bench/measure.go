package main

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuTime is the user plus system CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// resetPeakRSS collects garbage, returns free memory to the OS and resets the
// kernel's peak-RSS mark (VmHWM) so the next reading covers one scenario. It
// reports whether the reset worked (Linux >= 4.0 supports it); otherwise
// VmHWM is the peak since the process started.
func resetPeakRSS() bool {
	runtime.GC()
	debug.FreeOSMemory()
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// memStatus reads the memory lines of /proc/self/status, in bytes:
// VmHWM (peak RSS), VmRSS, RssAnon and RssFile (mapped files, such as the
// bbolt state file); zero where unknown.
func memStatus() map[string]int64 { return procStatus("self") }

// procStatus reads the memory lines of /proc/<pid>/status (pid "self":
// this process), in bytes; zero where unknown.
func procStatus(pid string) map[string]int64 {
	out := map[string]int64{}
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return out
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || !strings.HasPrefix(key, "Vm") && !strings.HasPrefix(key, "Rss") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		if err == nil {
			out[key] = kb << 10
		}
	}
	return out
}

// machineCPU is the CPU time every process on the machine has used since
// boot (all of /proc/stat's "cpu" line but idle and iowait), at the usual
// USER_HZ of 100; zero if unknown. Minus this process's own time over a window
// it shows how much other processes competed with the run.
func machineCPU() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0
	}
	var busy int64
	for i, v := range f[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0
		}
		busy += n
	}
	return time.Duration(busy) * 10 * time.Millisecond
}

// latencyStats summarises publish→delivery latencies in milliseconds.
type latencyStats struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p999_ms"`
	Max   float64 `json:"max_ms"`
	Mean  float64 `json:"mean_ms"`
}

func summarise(d []time.Duration) latencyStats {
	if len(d) == 0 {
		return latencyStats{}
	}
	slices.Sort(d)
	var sum time.Duration
	for _, v := range d {
		sum += v
	}
	q := func(p float64) float64 {
		i := int(p*float64(len(d))+0.5) - 1
		return ms(d[min(max(i, 0), len(d)-1)])
	}
	return latencyStats{
		Count: len(d),
		P50:   q(0.50),
		P90:   q(0.90),
		P99:   q(0.99),
		P999:  q(0.999),
		Max:   ms(d[len(d)-1]),
		Mean:  ms(sum / time.Duration(len(d))),
	}
}

func ms(d time.Duration) float64 { return round(d.Seconds()*1000, 3) }

func round(v float64, digits int) float64 {
	p := 1.0
	for range digits {
		p *= 10
	}
	if v < 0 {
		return float64(int64(v*p-0.5)) / p
	}
	return float64(int64(v*p+0.5)) / p
}
