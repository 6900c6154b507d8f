package capacity

import (
	"time"

	"github.com/spf13/pflag"
)

// AddFlags binds c's flags to fs, with their defaults: 1,000 nodes more every step from 1,000 to
// 10,000, each settling 2 minutes (registration and the node lifecycle controller's 60 s startup
// grace) and held 2 minutes, to DefaultLevels.
func AddFlags(fs *pflag.FlagSet, c *Config) {
	fs.IntVar(&c.Start, "start", 1000, "nodes of the first step")
	fs.IntVar(&c.Step, "step", 1000, "nodes each next step adds")
	fs.IntVar(&c.Max, "max", 10000, "nodes of the last step, if every step before held")
	fs.DurationVar(&c.Settle, "settle", 2*time.Minute, "how long each step runs before its levels are measured")
	fs.DurationVar(&c.Hold, "hold", 2*time.Minute, "how long each step's levels are measured (at least two renew intervals)")
	d := DefaultLevels()
	fs.IntVar(&c.Levels.FalseAlarms, "max-"+LevelFalseAlarms, d.FalseAlarms, "most false alarms a step may have (nodes fakelet kept healthy marked Unknown, tainted or evicted from)")
	fs.DurationVar(&c.Levels.MutatingP99, "max-"+LevelMutatingP99, d.MutatingP99, "highest p99 of the fleet's lease PUTs and status PATCHes as the apiserver measured them (the upstream API call latency SLO)")
	fs.IntVar(&c.Levels.APFRejections, "max-"+LevelAPFRejections, d.APFRejections, "most requests of node traffic API Priority and Fairness may reject")
	fs.Float64Var(&c.Levels.RenewalSlack, "max-"+LevelRenewalP99+"-slack", d.RenewalSlack, "how far the lease renewal interval's p99 may pass the renew interval, as a fraction of it")
	fs.IntVar(&c.Levels.FailedHeartbeats, "max-"+LevelFailedHeartbeats, d.FailedHeartbeats, "most lease renewals and status patches that may fail")
}
