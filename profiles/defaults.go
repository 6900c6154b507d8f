package profiles

import "fakelet.dev/fakelet/heartbeat"

// Defaults. Heartbeat defaults are the kubelet's (package heartbeat), so that a profile that says
// nothing about heartbeats loads the control plane the way real kubelets do.
const (
	defaultZones    = 1
	defaultFlapDuty = 0.5
	// What a kubelet reports when its container runtime is down: the commonest real cause of a node
	// that renews its Lease but is not Ready.
	defaultNotReadyReason  = "KubeletNotReady"
	defaultNotReadyMessage = "container runtime is down"
	defaultConditionStatus = ConditionTrue
	// A process that fails exits 1: the commonest exit code of a crashing container.
	defaultCrashExitCode = 1
)

// SetDefaults fills in every field left out (or zero) that has a default. It only fills the parameters
// of an action's own verb, so Validate's check that no other parameter is set still holds after it.
// Parse calls it; a profile built in code may too.
func (p *Profile) SetDefaults() {
	s := &p.Spec
	if s.Zones == 0 {
		s.Zones = defaultZones
	}
	hb := &s.Heartbeat
	if hb.Mode == "" {
		hb.Mode = heartbeat.DefaultMode
	}
	if hb.LeaseDurationSeconds == 0 {
		hb.LeaseDurationSeconds = heartbeat.DefaultLeaseDurationSeconds
	}
	if hb.StatusUpdateFrequency.Duration == 0 {
		hb.StatusUpdateFrequency.Duration = heartbeat.DefaultStatusUpdateFrequency
	}
	if hb.StatusReportFrequency.Duration == 0 {
		hb.StatusReportFrequency.Duration = heartbeat.DefaultStatusReportFrequency
	}
	s.Workloads.setDefaults()
	for i := range s.Phases {
		for j := range s.Phases[i].Actions {
			a := &s.Phases[i].Actions[j]
			switch a.Do {
			case VerbFlap:
				if a.Duty == nil {
					duty := defaultFlapDuty
					a.Duty = &duty
				}
				if a.Jitter == nil {
					a.Jitter = &Duration{}
				}
			case VerbNotReady:
				if a.Reason == "" {
					a.Reason = defaultNotReadyReason
				}
				if a.Message == "" {
					a.Message = defaultNotReadyMessage
				}
			case VerbRestart:
				if a.Downtime == nil {
					a.Downtime = &Duration{}
				}
			case VerbCondition:
				if a.Status == "" {
					a.Status = defaultConditionStatus
				}
			case VerbCrashPods:
				if a.ExitCode == nil {
					code := int32(defaultCrashExitCode)
					a.ExitCode = &code
				}
			}
		}
	}
}
