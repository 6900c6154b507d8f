package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"fakelet.dev/fakelet/report"
)

func newReportMergeCommand() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "merge A.json B.json ...",
		Short: "Merge the report.json files of a sharded run's shards into the report of the whole fleet",
		Long: `Merge the report.json that each shard of one run (fakelet run --shard) wrote into the report
of the whole fleet, write it to -o and print its summary table. Counts add up; reaction latencies
are recomputed from the shards' samples; the control plane's load is the first report's, since every
shard scraped the same control plane (docs/distributed.md). The reports of every shard of a
sharded fakelet capacity run merge into the fleet's levels at each step and the answer found again
from them (docs/capacity.md). Render its HTML page with fakelet report MERGED.json.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var shards []*report.Report
			for _, path := range args {
				r, err := report.ReadFile(path)
				if err != nil {
					return err
				}
				shards = append(shards, r)
			}
			merged, err := report.Merge(shards)
			if err != nil {
				return err
			}
			merged.Parameters.Args = append([]string{"fakelet", "report", "merge"}, args...)
			if err := writeFile(out, "the merged report", merged.WriteJSON); err != nil {
				return err
			}
			if err := merged.WriteText(cmd.OutOrStdout()); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "merged %d reports of %d nodes in all: %s\n", len(shards), merged.Parameters.Nodes, out)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "merged.json", "where to write the merged report.json")
	aliasFlag(cmd.Flags(), "output", "out")
	return cmd
}
