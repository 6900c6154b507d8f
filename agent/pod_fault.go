package agent

// PodFault is what a profile does to the containers of a node's pods: crash them, or make them
// fail their readiness. The zero PodFault is none.
type PodFault struct {
	// Crash makes every container exit with ExitCode (0 means 1) as soon as it runs; the kubelet
	// restarts it after its CrashLoopBackOff as the pod's restartPolicy says.
	Crash    bool
	ExitCode int32
	// Unready keeps the containers running but not ready, so that the pods' Ready turns False.
	Unready bool
}

func (f PodFault) exitCode() int32 {
	if f.ExitCode == 0 {
		return 1
	}
	return f.ExitCode
}

// SetPodFault applies f to all the node's pods from now on, replacing the fault before; the zero
// PodFault clears it. The pods' next sync (at once) shows its effect.
func (a *Agent) SetPodFault(f PodFault) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.podFault = f
	if r := a.run; r != nil && r.pods.live {
		for _, st := range a.pods {
			if st.admitted && !st.terminal {
				st.next = r.pods.last // due at once
			}
		}
		r.pods.schedule(a.cfg.Scheduler.Clock().Now())
	}
}

// PodFault returns the fault applied to the node's pods.
func (a *Agent) PodFault() PodFault {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.podFault
}
