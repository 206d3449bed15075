package server

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/hookjet/hookjet/dispatch"
	"github.com/hookjet/hookjet/internal/durable"
)

// runMarker is data_dir/hookjet.running: written when a server starts and
// removed when it stops, so a start that finds one knows the previous run
// did not stop cleanly (killed, crashed, a power cut). state.db's lock keeps
// two servers off one data_dir, so the marker is only ever this server's.
const runMarker = "hookjet.running"

// runRecord is the marker's content.
type runRecord struct {
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	Version string    `json:"version"`
}

// markRunning writes the marker and returns the previous run's, when it
// left one.
func (s *Server) markRunning() *runRecord {
	path := filepath.Join(s.cfg.DataDir, runMarker)
	var prev *runRecord
	if b, err := os.ReadFile(path); err == nil {
		prev = &runRecord{}
		if json.Unmarshal(b, prev) != nil {
			prev = &runRecord{} // unreadable (cut short): unclean all the same
		}
		if err := os.Remove(path); err != nil {
			s.log.Warn("remove the previous run's marker", "path", path, "err", err)
		}
	}
	b, _ := json.Marshal(runRecord{PID: os.Getpid(), Started: time.Now().UTC(), Version: Version})
	if err := durable.CreateFile(path, b, 0o600); err != nil {
		s.log.Warn("write the run marker; the next start cannot tell whether this one stopped cleanly", "path", path, "err", err)
	}
	s.marked = true
	return prev
}

// clearRunning removes the marker at a clean stop.
func (s *Server) clearRunning() {
	if !s.marked {
		return
	}
	s.marked = false
	path := filepath.Join(s.cfg.DataDir, runMarker)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Warn("remove the run marker", "path", path, "err", err)
	}
}

// logUnclean says at start that the previous run did not stop cleanly and
// what it left waiting, and when that goes again.
func (s *Server) logUnclean(prev *runRecord, lo dispatch.Leftover) {
	args := []any{"previous_pid", prev.PID, "previous_start", prev.Started.Format(time.RFC3339), "marker", filepath.Join(s.cfg.DataDir, runMarker),
		"tasks_waiting", lo.Tasks}
	if lo.Taken > 0 {
		args = append(args, "tasks_taken", lo.Taken, "tasks_taken_endpoints", lo.TakenEndpoints, "tasks_taken_back_within", lo.TakenFor.String())
	}
	if lo.Events > 0 {
		args = append(args, "events_unsettled", lo.Events, "events_back_within", lo.EventsFor.String())
	}
	s.log.Warn("the previous run did not stop cleanly (killed or crashed): its waiting deliveries resume now, and those it was delivering come back from NATS within their ack wait", args...)
}
