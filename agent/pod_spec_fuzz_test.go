package agent

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Whatever a pod's fakelet.dev/ annotations and command say, reading them does not panic, and the
// pod's runtime then advances and stops without panicking.
func FuzzPodSpecFromUserInput(f *testing.F) {
	f.Add("5s", "1m", "3", "sleep", "30")
	f.Add("soon", "-1s", "-1", "/bin/sleep", "1e300")
	f.Fuzz(func(t *testing.T, ready, run, code, cmd, arg string) {
		pod := onePod(corev1.RestartPolicyOnFailure, map[string]string{PodAnnotationReady: ready, PodAnnotationRunDuration: run,
			PodAnnotationExitCode: code, PodAnnotationStopDelay: run}, corev1.Container{Name: "c", Command: []string{cmd, arg}})
		st := runtimePod(t, pod, PodTiming{})
		for i := range 20 {
			st.advance(t0.Add(time.Duration(i)*time.Minute), PodFault{Crash: i%7 == 3})
			st.settle(t0.Add(time.Duration(i) * time.Minute))
		}
		st.stop(t0.Add(time.Hour), st.stopCode())
		_ = st.conditions()
	})
}
