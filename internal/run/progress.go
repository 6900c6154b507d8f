package run

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"fakelet.dev/fakelet/fleet"
)

// showProgress reports registration on w until every node is Ready or ctx ends: a live bar on a
// terminal, a log line every few seconds otherwise. After that it logs a line every logEvery.
func showProgress(ctx context.Context, w io.Writer, f *fleet.Fleet, logEvery time.Duration) {
	start := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	n := f.Config().Nodes
	var bar *progressbar.ProgressBar
	if file, ok := w.(*os.File); ok && term.IsTerminal(int(file.Fd())) {
		bar = progressbar.NewOptions(n,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription("registering"),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("nodes"),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionClearOnFinish(),
		)
	}
	registering := true
	lastLog := time.Time{}
	for {
		select {
		case <-ctx.Done():
			if bar != nil {
				_ = bar.Exit()
			}
			return
		case now := <-tick.C:
			p := f.Progress()
			line := progressLine(p, now.Sub(start))
			switch {
			case registering && bar != nil:
				bar.Describe(fmt.Sprintf("registered %d, Ready %d, errors %d", p.Registered, p.Ready, p.Errors))
				_ = bar.Set(p.Ready)
			case registering && now.Sub(lastLog) >= 5*time.Second:
				fmt.Fprintln(w, line)
				lastLog = now
			case !registering && now.Sub(lastLog) >= logEvery:
				fmt.Fprintln(w, line)
				lastLog = now
			}
			if registering && p.Ready >= n {
				registering = false
				if bar != nil {
					_ = bar.Finish()
				}
				fmt.Fprintf(w, "all %d nodes Ready after %s\n", n, now.Sub(start).Round(100*time.Millisecond))
				lastLog = now
			}
		}
	}
}

func progressLine(p fleet.Progress, elapsed time.Duration) string {
	rate := float64(p.Registered) / max(elapsed.Seconds(), 1e-9)
	pods := ""
	if p.Pods+p.PodsFailed > 0 {
		pods = fmt.Sprintf("  pods %d Ready %d", p.Pods, p.PodsReady)
		if p.PodsFailed > 0 {
			pods += fmt.Sprintf(" not created %d", p.PodsFailed)
		}
	}
	if p.PodAnnotationErrors > 0 {
		pods += fmt.Sprintf("  pods with bad fakelet.dev/ annotations %d", p.PodAnnotationErrors)
	}
	return fmt.Sprintf("%6s  started %d/%d  registered %d  Ready %d%s  errors %d  (%.0f nodes/s)",
		elapsed.Round(time.Second), p.Started, p.Nodes, p.Registered, p.Ready, pods, p.Errors, rate)
}
