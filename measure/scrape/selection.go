package scrape

// Selection is every metric fakelet's reports use, with the labels each is grouped by; series that
// differ only in other labels (group, version, scope, component, flow schema) are summed.
var Selection = map[string]Metric{
	// kube-apiserver
	"apiserver_request_total":                             {Counter, []string{"verb", "resource", "subresource", "code"}},
	"apiserver_request_duration_seconds":                  {Histogram, []string{"verb", "resource", "subresource"}},
	"apiserver_request_body_size_bytes":                   {Histogram, []string{"verb", "resource"}},
	"apiserver_response_sizes":                            {Histogram, []string{"verb", "resource", "subresource"}},
	"apiserver_flowcontrol_dispatched_requests_total":     {Counter, []string{"priority_level"}},
	"apiserver_flowcontrol_rejected_requests_total":       {Counter, []string{"priority_level"}},
	"apiserver_flowcontrol_request_wait_duration_seconds": {Histogram, []string{"priority_level", "execute"}},
	"apiserver_watch_events_total":                        {Counter, []string{"resource"}},
	"apiserver_watch_events_sizes":                        {Histogram, []string{"resource"}},
	"etcd_request_duration_seconds":                       {Histogram, []string{"operation", "resource"}},
	// every component
	"process_cpu_seconds_total":     {Counter, nil},
	"process_resident_memory_bytes": {Gauge, nil},
	// etcd (v3.6 exports the WAL byte count as a gauge; it only grows)
	"etcd_mvcc_db_total_size_in_bytes":              {Gauge, nil},
	"etcd_mvcc_db_total_size_in_use_in_bytes":       {Gauge, nil},
	"etcd_disk_wal_write_bytes_total":               {Counter, nil},
	"etcd_mvcc_put_total":                           {Counter, nil},
	"etcd_network_client_grpc_received_bytes_total": {Counter, nil},
	"etcd_network_client_grpc_sent_bytes_total":     {Counter, nil},
	"etcd_disk_wal_fsync_duration_seconds":          {Histogram, nil},
	"etcd_disk_backend_commit_duration_seconds":     {Histogram, nil},
	// kube-controller-manager's node lifecycle controller
	"node_collector_zone_health":                              {Gauge, []string{"zone"}},
	"node_collector_unhealthy_nodes_in_zone":                  {Gauge, []string{"zone"}},
	"node_collector_evictions_total":                          {Counter, []string{"zone"}},
	"node_collector_update_all_nodes_health_duration_seconds": {Histogram, nil},
	// the fleet's own view (see FleetSource)
	FleetRequests:        {Counter, []string{"verb", "resource", "result"}},
	FleetRequestDuration: {Histogram, []string{"verb", "resource"}},
	FleetRequestBytes:    {Counter, []string{"verb", "resource"}},
	FleetResponseBytes:   {Counter, []string{"verb", "resource"}},
	FleetSendLag:         {Histogram, nil},
	FleetWatchesHeld:     {Gauge, []string{"resource"}},
	FleetWatchLists:      {Counter, []string{"resource"}},
	FleetWatchOpens:      {Counter, []string{"resource"}},
	FleetWatchEvents:     {Counter, []string{"resource"}},
}
