package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"fakelet.dev/fakelet/profiles"
)

func init() { subcommandFactories = append(subcommandFactories, newProfilesCommand) }

func newProfilesCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "profiles",
		Short: "List the built-in scenario profiles, or show one",
		Long: `A profile is the question a run asks the control plane: a fleet, groups of its nodes, and
phases of actions on them. fakelet carries built-in profiles; ` + "`fakelet run --profile`" + ` takes a
built-in name or a YAML file. The format is described in docs/profiles.md.`,
	}
	cmd.AddCommand(newProfilesListCommand(), newProfilesShowCommand())
	return cmd
}

func newProfilesListCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the built-in profiles and the question each answers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var list []*profiles.Profile
			for _, name := range profiles.BuiltinNames() {
				p, err := profiles.Builtin(name)
				if err != nil {
					return err
				}
				list = append(list, p)
			}
			return printProfileList(cmd.OutOrStdout(), list)
		},
	}
}

// printProfileList prints one line per profile: its name, its fleet, how long it runs and its
// question, then how to go further.
func printProfileList(w io.Writer, list []*profiles.Profile) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tNODES\tZONES\tDURATION\tQUESTION")
	for _, p := range list {
		name := p.Metadata.Name
		if name == profiles.DefaultProfile {
			name += " (default)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", name, p.Spec.Nodes, p.Spec.Zones, formatRunLength(p.Spec.Duration()), p.Summary())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "\nShow one with `fakelet profiles show NAME`; run one with `fakelet run --profile NAME|FILE`.")
	return err
}

// formatRunLength prints whole minutes as "5m" rather than time.Duration's "5m0s".
func formatRunLength(d time.Duration) string {
	if d%time.Minute == 0 {
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

func newProfilesShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show NAME|FILE",
		Short: "Check a profile and print it as written, comments included",
		Long: `Load a built-in profile by name, or a profile file by path, validate all of it and print it as
written. A profile with problems is not printed: every problem is reported instead, with its line
and field.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := profiles.Load(args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if _, err := out.Write(p.Raw); err != nil {
				return err
			}
			if len(p.Raw) > 0 && p.Raw[len(p.Raw)-1] != '\n' {
				_, err = io.WriteString(out, "\n")
			}
			return err
		},
	}
}
