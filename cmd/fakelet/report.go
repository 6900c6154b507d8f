package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"fakelet.dev/fakelet/report"
)

func init() { subcommandFactories = append(subcommandFactories, newReportCommand) }

func newReportCommand() *cobra.Command {
	var htmlPath string
	cmd := &cobra.Command{
		Use:   "report FILE.json",
		Short: "Render a saved report.json again: the summary table, and report.html",
		Long: `Render a report.json that fakelet run wrote: print its summary table and write its HTML
page (by default report.html beside the JSON file). The report is a pure function of the JSON,
so the output is the same as at the end of the run.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
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
			f, err := os.Create(htmlPath)
			if err != nil {
				return fmt.Errorf("write the HTML report: %w", err)
			}
			if err := r.WriteHTML(f); err != nil {
				f.Close()
				return fmt.Errorf("write %s: %w", htmlPath, err)
			}
			if err := f.Close(); err != nil {
				return fmt.Errorf("write %s: %w", htmlPath, err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "report: %s\n", htmlPath)
			return nil
		},
	}
	cmd.Flags().StringVar(&htmlPath, "html", "", "where to write the HTML page (default: report.html beside FILE.json)")
	cmd.AddCommand(newReportMergeCommand())
	return cmd
}
