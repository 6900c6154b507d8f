package profiles

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"fakelet.dev/fakelet/heartbeat"
	"k8s.io/apimachinery/pkg/util/validation"
)

// maxNodes bounds fleet sizes, indexes and added nodes. Group selection and the schedule are sized for
// 100,000 nodes; ten times that is a typo, and refusing it early keeps a typo from exhausting memory.
const maxNodes = 1_000_000

// maxPodsPerNode is the pod capacity every fake node reports (agent.DefaultCapacity).
const maxPodsPerNode = 110

// maxPodTolerationSeconds bounds spec.podTolerationSeconds at a day: a longer toleration is never
// reached in a run.
const maxPodTolerationSeconds = 86400

// nameRe is what group and phase names look like: they appear in paths, reports and flags, so no dots,
// spaces or brackets.
var nameRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,62}$`)

// Validate checks the whole profile and returns an *Error listing every problem, or nil. It expects
// SetDefaults to have run (Parse does both). What depends on the fleet size, which --nodes may change,
// is checked by Resolve.
func (p *Profile) Validate() error {
	ps := &problems{lines: p.lines}
	p.validate(ps)
	return ps.err(p.Source)
}

func (p *Profile) validate(ps *problems) {
	if p.APIVersion != APIVersion {
		ps.addf("apiVersion", "want %q, got %q", APIVersion, p.APIVersion)
	}
	if p.Kind != Kind {
		ps.addf("kind", "want %q, got %q", Kind, p.Kind)
	}
	switch name := p.Metadata.Name; {
	case name == "":
		ps.addf("metadata.name", "is required")
	default:
		if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
			ps.addf("metadata.name", "%q is not a valid name: %s", name, strings.Join(errs, "; "))
		}
	}
	p.Spec.validate(ps)
}

func (s *Spec) validate(ps *problems) {
	if s.Nodes < 1 || s.Nodes > maxNodes {
		ps.addf("spec.nodes", "must be between 1 and %d, got %d", maxNodes, s.Nodes)
	}
	if s.Zones < 1 || s.Zones > maxZones {
		ps.addf("spec.zones", "must be between 1 and %d, got %d", maxZones, s.Zones)
	}
	if s.PodsPerNode < 0 || s.PodsPerNode > maxPodsPerNode {
		ps.addf("spec.podsPerNode", "must be between 0 and %d (a node's pod capacity), got %d", maxPodsPerNode, s.PodsPerNode)
	}
	if t := s.PodTolerationSeconds; t != nil {
		switch {
		case s.PodsPerNode == 0:
			ps.addf("spec.podTolerationSeconds", "applies to pods, and spec.podsPerNode is 0")
		case *t < 0 || *t > maxPodTolerationSeconds:
			ps.addf("spec.podTolerationSeconds", "must be between 0 and %d, got %d", maxPodTolerationSeconds, *t)
		}
	}
	s.Heartbeat.validate(ps, "spec.heartbeat")
	for _, name := range slices.Sorted(maps.Keys(s.Groups)) {
		s.validateGroup(ps, name, s.Groups[name])
	}
	if len(s.Phases) == 0 {
		ps.addf("spec.phases", "a profile needs at least one phase")
	}
	seen := map[string]int{}
	added := 0
	var total time.Duration
	for i := range s.Phases {
		ph := &s.Phases[i]
		path := indexPath("spec.phases", i)
		switch first, dup := seen[ph.Name]; {
		case ph.Name == "":
			ps.addf(joinPath(path, "name"), "is required")
		case !nameRe.MatchString(ph.Name):
			ps.addf(joinPath(path, "name"), "%q is not a valid phase name: %s", ph.Name, nameRule)
		case dup:
			ps.addf(joinPath(path, "name"), "%q is already the name of spec.phases[%d]", ph.Name, first)
		default:
			seen[ph.Name] = i
		}
		switch d := ph.Duration.Duration; {
		case d <= 0:
			ps.addf(joinPath(path, "duration"), "must be more than 0")
		case d > maxRunDuration-total:
			ps.addf(joinPath(path, "duration"), "makes the run longer than %v", maxRunDuration)
			total = maxRunDuration
		default:
			total += d
		}
		for j := range ph.Actions {
			s.validateAction(ps, indexPath(joinPath(path, "actions"), j), ph, &ph.Actions[j])
			if add := ph.Actions[j].Add; add > 0 && add <= maxNodes { // a larger one has its own problem
				added += add
			}
		}
	}
	s.validateWorkloads(ps)
	if added > maxNodes {
		ps.addf("spec.phases", "churn adds %d nodes in all, more than the largest fleet fakelet runs (%d)", added, maxNodes)
	}
}

// maxRunDuration bounds the length of a run: a week is already far more than a control plane needs to
// react, and the bound keeps offsets far from overflowing.
const maxRunDuration = 7 * 24 * time.Hour

// maxZones bounds spec.zones: a zone per node of a large fleet is already meaningless.
const maxZones = 1000

const nameRule = "start with a letter, then letters, digits, '-' or '_', at most 63 characters"

func (h *Heartbeat) validate(ps *problems, path string) {
	if h.Mode != heartbeat.ModeLease && h.Mode != heartbeat.ModeStatus {
		ps.addf(joinPath(path, "mode"), "must be %s or %s, got %q", heartbeat.ModeLease, heartbeat.ModeStatus, h.Mode)
	}
	if h.LeaseDurationSeconds < 1 {
		ps.addf(joinPath(path, "leaseDurationSeconds"), "must be at least 1, got %d", h.LeaseDurationSeconds)
	}
	if h.StatusUpdateFrequency.Duration <= 0 {
		ps.addf(joinPath(path, "statusUpdateFrequency"), "must be more than 0")
	}
	if h.StatusReportFrequency.Duration <= 0 {
		ps.addf(joinPath(path, "statusReportFrequency"), "must be more than 0")
	} else if h.StatusReportFrequency.Duration < h.StatusUpdateFrequency.Duration {
		// The kubelet decides whether to report on each status update, so it cannot report more often
		// than it updates.
		ps.addf(joinPath(path, "statusReportFrequency"), "%v is shorter than statusUpdateFrequency %v: a status is only reported when it is updated",
			h.StatusReportFrequency.Duration, h.StatusUpdateFrequency.Duration)
	}
}

func (s *Spec) validateGroup(ps *problems, name string, g Group) {
	path := joinPath("spec.groups", name)
	if !nameRe.MatchString(name) {
		ps.addf(path, "%q is not a valid group name: %s", name, nameRule)
	}
	var selectors []string
	if g.Percent != nil {
		selectors = append(selectors, "percent")
		if pct := *g.Percent; !(pct > 0 && pct <= 100) {
			ps.addf(joinPath(path, "percent"), "must be more than 0 and at most 100, got %v", pct)
		}
	}
	if g.Count != nil {
		selectors = append(selectors, "count")
		if *g.Count < 1 {
			ps.addf(joinPath(path, "count"), "must be at least 1, got %d", *g.Count)
		}
	}
	if g.Names != nil {
		selectors = append(selectors, "names")
		if len(g.Names) == 0 {
			ps.addf(joinPath(path, "names"), "is empty")
		}
		seen := map[string]bool{}
		for i, n := range g.Names {
			switch {
			case n == "":
				ps.addf(indexPath(joinPath(path, "names"), i), "is empty")
			case seen[n]:
				ps.addf(indexPath(joinPath(path, "names"), i), "%q is listed twice", n)
			}
			seen[n] = true
		}
	}
	if g.Indexes != "" {
		selectors = append(selectors, "indexes")
		if _, err := parseIndexes(g.Indexes); err != nil {
			ps.addf(joinPath(path, "indexes"), "%v", err)
		}
	}
	if g.Zone != "" {
		selectors = append(selectors, "zone")
		if n, ok := parseZone(g.Zone); !ok || n > s.Zones {
			ps.addf(joinPath(path, "zone"), "unknown zone %q (zones: %s)", g.Zone, zoneList(s.Zones))
		}
	}
	s.validateGroupShape(ps, path, g)
	switch len(selectors) {
	case 0:
		ps.addf(path, "selects no nodes: set one of percent, count, names, indexes, zone")
	case 1:
	default:
		ps.addf(path, "sets %s: set only one of percent, count, names, indexes, zone", strings.Join(selectors, " and "))
	}
}

// zoneList names the zones of a profile for a message: "zone-1..zone-3".
func zoneList(zones int) string {
	if zones <= 1 {
		return ZoneName(1)
	}
	return ZoneName(1) + ".." + ZoneName(zones)
}
