package agent

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"fakelet.dev/fakelet/internal/scheduler"
)

// An agent's Node as the server returns it decodes to what Node.Unmarshal makes of it, its images
// the template's list, for any template; a nil Template decodes it whole.
func TestUnmarshalNodeSharesTheTemplatesImages(t *testing.T) {
	for _, images := range []int{MaxImages, 3, -1} {
		tmpl, err := NewTemplate(TemplateOptions{Fleet: "decode", Images: images})
		if err != nil {
			t.Fatal(err)
		}
		cfg := &Config{Template: tmpl, Heartbeat: kubeletHeartbeat(t), Footprint: FootprintHeartbeat, Scheduler: scheduler.New(testingclock.NewFakeClock(t0))}
		a := New(cfg, Clients{}, "fakelet-00003", 3, "")
		now := metav1.NewTime(t0)
		raw, err := tmpl.initialNode(a, now, a.health.conditions(nil, now)).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		var want corev1.Node
		if err := want.Unmarshal(raw); err != nil {
			t.Fatal(err)
		}
		for _, tt := range []*Template{tmpl, nil} {
			var got corev1.Node
			if err := tt.UnmarshalNode(&got, raw); err != nil || !reflect.DeepEqual(&got, &want) {
				t.Fatalf("%d images: decoded %+v, %v\nwant %+v", images, got, err, want)
			}
			if shared := len(got.Status.Images) > 0 && &got.Status.Images[0] == &tmpl.Images[0]; shared != (tt != nil && images > 0) {
				t.Errorf("%d images, template %v: the images are shared: %v", images, tt != nil, shared)
			}
		}
	}
}

func TestTemplateFromIsTheRequestsAgents(t *testing.T) {
	tmpl, err := NewTemplate(TemplateOptions{Fleet: "decode"})
	if err != nil {
		t.Fatal(err)
	}
	of, _ := RequestContextOf(context.Background(), "n", tmpl)
	plain, _ := RequestContext(context.Background(), "n")
	if TemplateFrom(of) != tmpl || TemplateFrom(plain) != nil || TemplateFrom(context.Background()) != nil {
		t.Error("TemplateFrom is not the template of the request's agent")
	}
}
