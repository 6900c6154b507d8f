package main

import "github.com/spf13/pflag"

// aliasFlag adds old to fs as a hidden, deprecated spelling of its flag name (pflag says so on
// stderr when old is used). A value given to old is set through name, so that Changed(name) holds
// whichever spelling was used and every check reads one flag.
func aliasFlag(fs *pflag.FlagSet, old, name string) {
	f := fs.Lookup(name)
	fs.AddFlag(&pflag.Flag{Name: old, Usage: f.Usage, Value: aliasValue{fs: fs, name: name}, DefValue: f.DefValue, NoOptDefVal: f.NoOptDefVal})
	if err := fs.MarkDeprecated(old, "use --"+name); err != nil {
		panic(err) // old was just added
	}
}

// aliasValue is a deprecated spelling's value: the flag it stands for.
type aliasValue struct {
	fs   *pflag.FlagSet
	name string
}

func (a aliasValue) Set(s string) error { return a.fs.Set(a.name, s) }
func (a aliasValue) String() string     { return a.fs.Lookup(a.name).Value.String() }
func (a aliasValue) Type() string       { return a.fs.Lookup(a.name).Value.Type() }
