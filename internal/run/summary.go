package run

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/heartbeat"
)

// runSummary is what the end of a run prints.
type runSummary struct {
	Target    string
	Profile   string // how the profile's run went; empty without --profile
	Mode      heartbeat.Mode
	Elapsed   time.Duration
	Progress  fleet.Progress
	Register  fleet.Registration
	Heartbeat map[string][2]int64 // kind -> ok, failed
	Requests  []fleet.Count
	Conns     fleet.Connections
	Failures  []error
	PodsErr   error // why the last pod the fleet gave up creating was not created
	Usage     processUsage
}

func summarize(target string, f *fleet.Fleet, elapsed time.Duration) runSummary {
	s := runSummary{
		Target: target, Mode: f.Config().Heartbeat.Mode, Elapsed: elapsed,
		Progress: f.Progress(), Register: f.Registration(), Heartbeat: map[string][2]int64{}, Conns: f.Connections(),
		Requests: f.Tally().Requests(), Failures: f.Failures(), PodsErr: f.PodCreateErr(), Usage: selfUsage(),
	}
	for _, kind := range []string{agent.KindLease, agent.KindStatus} {
		ok, failed := f.Tally().Heartbeats(kind)
		s.Heartbeat[kind] = [2]int64{ok, failed}
	}
	return s
}

func (s runSummary) render(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := s.Progress
	fmt.Fprintf(tw, "fakelet run summary\n")
	fmt.Fprintf(tw, "  target\t%s\n", s.Target)
	if s.Profile != "" {
		fmt.Fprintf(tw, "  profile\t%s\n", s.Profile)
	}
	fmt.Fprintf(tw, "  duration\t%s\n", s.Elapsed.Round(100*time.Millisecond))
	fmt.Fprintf(tw, "  nodes\t%d started, %d registered, %d Ready at the end, %d refused\n", p.Started, p.Registered, p.Ready, p.Failed)
	fmt.Fprintf(tw, "  registration\t%s\n", registrationText(s.Register))
	if p.Pods+p.PodsFailed > 0 {
		fmt.Fprintf(tw, "  pods\t%d at the end, %d of them Ready, %d not created\n", p.Pods, p.PodsReady, p.PodsFailed)
		if s.PodsErr != nil {
			fmt.Fprintf(tw, "  \tlast not created: %v\n", s.PodsErr)
		}
	}
	if p.Added+p.Removed > 0 {
		fmt.Fprintf(tw, "  churn\t%d nodes added, %d removed\n", p.Added, p.Removed)
	}
	fmt.Fprintf(tw, "  heartbeat mode\t%s\n", s.Mode)
	if s.Conns.Mode != "" {
		fmt.Fprintf(tw, "  connections\t%s, identity by %s: %d dialed (a TCP and TLS handshake each: %s)\n", s.Conns.Mode, s.Conns.Identity, s.Conns.Dialed, s.Conns.DialedBy)
	}
	secs := max(s.Elapsed.Seconds(), 1e-9)
	for _, kind := range []string{agent.KindLease, agent.KindStatus} {
		hb := s.Heartbeat[kind]
		fmt.Fprintf(tw, "  %s heartbeats\t%d ok, %d failed (%.1f/s)\n", kind, hb[0], hb[1], float64(hb[0])/secs)
	}
	var total, failed int64
	for _, c := range s.Requests {
		total += c.OK + c.Failed
		failed += c.Failed
	}
	fmt.Fprintf(tw, "  requests\t%d (%.1f/s), %d failed\n", total, float64(total)/secs, failed)
	for _, c := range s.Requests {
		fmt.Fprintf(tw, "    %s %s\t%d ok, %d failed, %.1f MiB sent, %.1f MiB received\n", c.Verb, c.Resource, c.OK, c.Failed,
			mib(c.RequestBytes), mib(c.ResponseBytes))
	}
	fmt.Fprintf(tw, "  fleet CPU\t%.2f s (%.1f%% of a core)\n", s.Usage.CPU.Seconds(), 100*s.Usage.CPU.Seconds()/secs)
	fmt.Fprintf(tw, "  fleet memory\t%.1f MiB RSS, %.1f MiB peak\n", mib(s.Usage.RSS), mib(s.Usage.MaxRSS))
	_ = tw.Flush()
	for i, err := range s.Failures {
		if i == 5 {
			fmt.Fprintf(w, "  ... and %d more refused nodes\n", len(s.Failures)-5)
			break
		}
		fmt.Fprintf(w, "  refused: %v\n", err)
	}
}

// registrationText says how fast the control plane let the initial nodes register and what failed
// meanwhile: the pacer's rate is what the server's answers allowed, up to --register-qps.
func registrationText(r fleet.Registration) string {
	paced := fmt.Sprintf("paced from %g/s up to %.0f/s of --register-qps %g, %d cuts", min(fleet.PaceStartQPS, r.CeilingQPS), r.PeakQPS, r.CeilingQPS, r.Cuts)
	took := "not every node registered"
	if d := r.Duration(); d > 0 {
		took = fmt.Sprintf("%d nodes in %s (%.1f/s)", r.Nodes, d.Round(100*time.Millisecond), r.QPS())
	}
	return fmt.Sprintf("%s; %s; %d 429s, %d failed requests meanwhile", took, paced, r.Throttled, r.Failed)
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
