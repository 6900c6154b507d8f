package profiles

import (
	"strconv"
	"strings"
)

// ZoneLabel is the label the agent sets on each node to its ZoneOf value; the node lifecycle controller
// groups nodes into zones by it (with the region label, which fakelet does not set).
const ZoneLabel = "topology.kubernetes.io/zone"

// zonePrefix starts every zone name. Zones are numbered from 1, as people count them: zone-1 .. zone-N.
const zonePrefix = "zone-"

// ZoneOf returns the zone of node index in a fleet of zones zones: round-robin, node i in
// zone-(i mod zones + 1). This is the one definition of a node's zone: the agent labels nodes with it
// and a group's zone: selects by it. zones below 1 count as 1.
func ZoneOf(index, zones int) string {
	return ZoneName(ZoneNumber(index, zones))
}

// ZoneNumber returns the 1-based number of node index's zone (see ZoneOf).
func ZoneNumber(index, zones int) int {
	if zones < 1 {
		zones = 1
	}
	return index%zones + 1
}

// ZoneName returns the name of zone n, counted from 1.
func ZoneName(n int) string {
	return zonePrefix + strconv.Itoa(n)
}

// parseZone returns the number of a zone name, or false when the name is not zone-N with N >= 1.
func parseZone(name string) (int, bool) {
	digits, ok := strings.CutPrefix(name, zonePrefix)
	if !ok || digits == "" || digits[0] == '0' || digits[0] == '+' {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 1 {
		return 0, false
	}
	return n, true
}
