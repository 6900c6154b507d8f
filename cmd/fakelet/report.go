package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"fakelet.dev/fakelet/report"
)

func init() { subcommandFactories = append(subcommandFactories, newReportCommand) }

func newReportCommand() *cobra.Command {
	var htmlPath string
	var prom promFlags
	cmd := &cobra.Command{
		Use:   "report FILE.json | report --prometheus URL --from T1 --to T2",
		Short: "Render a saved report.json again, or build a run's report from a Prometheus server",
		Long: `Render a report.json that fakelet run wrote: print its summary table and write its HTML
page (by default report.html beside the JSON file). The report is a pure function of the JSON,
so the output is the same as at the end of the run.

With --prometheus, build the report of the run between --from and --to from the series a
Prometheus server scraped of fakelet (every shard) and the control plane, and write report.json,
report.html, perfdata.json and summary.txt into --out: one report for a run spread over
several processes or machines (docs/report.md).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if prom.url != "" {
				if len(args) > 0 {
					return fmt.Errorf("--prometheus reads the run from Prometheus, not from %s: give one or the other", args[0])
				}
				if cmd.Flags().Changed("html") {
					return fmt.Errorf("--html is for a report.json; with --prometheus, report.html goes into --out")
				}
				return nil
			}
			for _, name := range []string{"from", "to", "step", "phases-from", "out"} {
				if cmd.Flags().Changed(name) {
					return fmt.Errorf("--%s is for a report from Prometheus: give --prometheus URL", name)
				}
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if prom.url != "" {
				return prom.run(cmd)
			}
			r, err := report.ReadFile(args[0])
			if err != nil {
				return err
			}
			if err := r.WriteText(cmd.OutOrStdout()); err != nil {
				return err
			}
			if htmlPath == "" {
				htmlPath = filepath.Join(filepath.Dir(args[0]), report.HTMLFile)
			}
			if err := writeFile(htmlPath, "the HTML report", r.WriteHTML); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "report: %s\n", htmlPath)
			return nil
		},
	}
	cmd.Flags().StringVar(&htmlPath, "html", "", "where to write the HTML page (default: report.html beside FILE.json)")
	prom.register(cmd)
	cmd.AddCommand(newReportMergeCommand())
	return cmd
}

// writeFile creates path and writes what (as an error names it) into it with write, closing it.
func writeFile(path, what string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write %s: %w", what, err)
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
