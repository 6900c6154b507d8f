// Package record holds the Record of one run: every number a report shows, in one shape whoever
// measured it, so that package report only renders and each number has one origin. Two producers
// make a Record: package measure's Session, from the run's own watches and scrapes as it goes, and
// package promrecord, from a Prometheus server that scraped the run. Where they measure a number
// differently, the field's comment says where each takes it.
//
// The pure functions here turn what a session observed into a Record's fields: LoadOf (the load
// per phase and over the run from the scrapes), Storms (the storms with the apiserver's rejections
// around each), RunPhases and TimelineStep.
package record
