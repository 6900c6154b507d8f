// Package fleetname holds the names and shapes a fleet's objects share with everything that must
// find, grant or count them: its nodes' names and numbers, its label and run annotation, its shards
// and their claims, its zones and the namespaces of its pods and workloads. It imports nothing of
// fakelet's, so that the packages that only need to name a fleet's objects (deploy's RBAC, capacity's
// steps, lockstep's board) do not depend on the fleet that runs it.
package fleetname

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Label marks every Node fakelet creates with its fleet's name. fakelet only ever adopts, changes
// or deletes objects that carry it with its own fleet's value.
const Label = "fakelet.dev/fleet"

// RunAnnotation names the run that created or last adopted an object: every Node, Lease and pod
// fakelet writes carries its run's ID. The fleet label says which fleet an object belongs to; this
// says which run holds it, so that two runs of one fleet can tell each other apart.
const RunAnnotation = "fakelet.dev/run"

// Defaults of a fleet's names.
const (
	DefaultNamePrefix = "fakelet"
	DefaultFleet      = "fakelet"
)

// MaxNodes bounds a fleet's node numbers, as a profile's spec.nodes is bounded: group selection and
// the schedule are sized for 100,000 nodes, and ten times that is a typo that would exhaust memory.
const MaxNodes = 1_000_000

// dnsLabel is what a node name prefix and a label value must look like.
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// CheckNamePrefix reports why prefix cannot begin the names of a fleet's nodes.
func CheckNamePrefix(prefix string) error {
	if len(prefix) > 40 || !dnsLabel.MatchString(prefix) {
		return fmt.Errorf("name prefix %q must be a lower-case DNS label of at most 40 characters", prefix)
	}
	return nil
}

// CheckFleet reports why name cannot name a fleet.
func CheckFleet(name string) error {
	if len(name) > 63 || !dnsLabel.MatchString(name) {
		return fmt.Errorf("fleet name %q must be a lower-case DNS label (it is a label value)", name)
	}
	return nil
}

// CheckRunID reports why id cannot name a run (it is a label value).
func CheckRunID(id string) error {
	if len(id) > 63 || !dnsLabel.MatchString(id) {
		return fmt.Errorf("run ID %q must be a lower-case DNS label", id)
	}
	return nil
}

// NodeName is the name of node number index.
func NodeName(prefix string, index int) string {
	return fmt.Sprintf("%s-%05d", prefix, index)
}

// NodeIndex is the node number of a name NodeName gave with prefix, and false for any other name.
func NodeIndex(prefix, name string) (int, bool) {
	digits, ok := strings.CutPrefix(name, prefix+"-")
	if !ok || len(digits) < 5 || (len(digits) > 5 && digits[0] == '0') {
		return 0, false
	}
	index, err := strconv.Atoi(digits)
	if err != nil || index < 0 || digits[0] == '+' || digits[0] == '-' {
		return 0, false
	}
	return index, true
}

// Zone is the zone of node number index in a fleet of zones zones: zone-1..zone-zones round-robin.
func Zone(index, zones int) string {
	return fmt.Sprintf("zone-%d", index%zones+1)
}

// NewRunID returns a new run's ID: when it started, to the second, and random hex against two runs
// started in one second.
func NewRunID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}
