package main

// Progress while a run goes on. On a terminal, a status line names the
// case running with the estimated time left and is replaced by the case's
// result line when it ends; elsewhere (a log, CI) each case prints one
// plain line when it ends, with no control characters.

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

type progress struct {
	w     io.Writer
	tty   bool
	total int
	done  int
	start time.Time
	// guess is the time a case is expected to take before any has ended:
	// its runs plus the ramp.
	guess time.Duration
	// deadline, when set, bounds the ETA: cases after it are skipped.
	deadline time.Time
}

func newProgress(w io.Writer, total int, guess time.Duration, deadline time.Time) *progress {
	return &progress{w: w, tty: isTerminal(w), total: total, start: time.Now(), guess: guess, deadline: deadline}
}

// eta estimates the time left from the cases done so far.
func (p *progress) eta() time.Duration {
	left := p.total - p.done
	if left <= 0 {
		return 0
	}
	per := p.guess
	if p.done > 0 {
		per = time.Since(p.start) / time.Duration(p.done)
	}
	eta := per * time.Duration(left)
	if !p.deadline.IsZero() {
		eta = min(eta, max(time.Until(p.deadline), 0))
	}
	return eta
}

// begin shows the case about to run (on a terminal only).
func (p *progress) begin(name, impl string) {
	if !p.tty {
		return
	}
	fmt.Fprintf(p.w, "\r\x1b[K[%*d/%d] %s %s  running, about %s left", width(p.total), p.done+1, p.total,
		name, impl, fmtETA(p.eta()))
}

// end prints the case's result line.
func (p *progress) end(c *CaseResult) {
	p.done++
	if p.tty {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
	fmt.Fprintf(p.w, "[%*d/%d] %-34s %-16s %s  (%s left)\n", width(p.total), p.done, p.total,
		c.Name(), c.Impl, resultText(c), fmtETA(p.eta()))
}

// resultText is a case's result in a few words.
func resultText(c *CaseResult) string {
	switch c.Status {
	case StatusOK:
		s := fmtNs(c.Median) + "/op"
		if c.Spread > 0 {
			s += fmt.Sprintf(" ±%.0f%%", c.Spread)
		}
		if c.Note != "" {
			s += " (" + firstLine(c.Note) + ")"
		}
		return s
	case StatusSkipped:
		return "skipped: " + firstLine(c.Note)
	default:
		return "FAILED: " + firstLine(c.Note)
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func width(n int) int { return len(fmt.Sprint(n)) }

func fmtETA(d time.Duration) string {
	switch {
	case d < time.Second:
		return "<1s"
	case d < time.Minute:
		return d.Round(time.Second).String()
	default:
		return d.Round(10 * time.Second).String()
	}
}

// isTerminal reports whether w is a terminal that understands the
// escape that clears a line.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	return fileIsTerminal(f)
}
