package app

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/kplan-dev/kplan/internal/errkind"
)

// groupAnnotation marks a command that only groups subcommands; the usage
// template then shows "kplan lab [command]" without a line of its own.
const groupAnnotation = "kplan:group"

// typeUsageErrors makes cobra's own usage errors usage errors by type, at
// their source, so that no error is ever classified by its text (an EINVAL
// from a cgroup write says "invalid argument" and is still a runtime error):
//
//   - every Args validator's error (a wrong number of arguments) is wrapped
//     as a usage error;
//   - a group command (subcommands, nothing to run of its own) answers an
//     unknown subcommand with a usage error naming it, with cobra's wording
//     and suggestions; without arguments it prints its help, as before;
//   - `kplan help` refuses a topic that names no command;
//   - a runnable command checks its required flags and flag groups itself,
//     before cobra would (cobra returns those errors untyped).
//
// Flag parsing errors go through the root's flag error function.
func typeUsageErrors(c *cobra.Command) {
	if c.Runnable() {
		checkFlagsFirst(c)
	}
	switch {
	case c.Name() == "help" && c.HasParent() && !c.Parent().HasParent():
		c.Args = helpTopic
	case c.HasSubCommands() && !c.Runnable():
		c.Args = unknownSubcommand
		c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[groupAnnotation] = "true"
	case c.Args != nil:
		validate := c.Args
		c.Args = func(c *cobra.Command, args []string) error { return errkind.Wrap(errkind.Usage, "", validate(c, args)) }
	}
	for _, sub := range c.Commands() {
		typeUsageErrors(sub)
	}
}

// unknownSubcommand is a group command's argument check: any argument is a
// subcommand the group does not have.
func unknownSubcommand(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	hint := ""
	if s := c.SuggestionsFor(args[0]); len(s) > 0 && !c.DisableSuggestions {
		hint = "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return errkind.Usagef("", "unknown command %q for %q%s", args[0], c.CommandPath(), hint)
}

// checkFlagsFirst makes c check its required flags and flag groups in its
// PreRunE, as usage errors; cobra's own later check then finds them met.
func checkFlagsFirst(c *cobra.Command) {
	preE, pre := c.PreRunE, c.PreRun
	c.PreRunE = func(c *cobra.Command, args []string) error {
		if err := c.ValidateRequiredFlags(); err != nil {
			return errkind.Wrap(errkind.Usage, "", err)
		}
		if err := c.ValidateFlagGroups(); err != nil {
			return errkind.Wrap(errkind.Usage, "", err)
		}
		switch {
		case preE != nil:
			return preE(c, args)
		case pre != nil:
			pre(c, args)
		}
		return nil
	}
}

// helpTopic is the argument check of `kplan help`: the arguments must name
// a command (group commands no longer fail cobra's own lookup).
func helpTopic(c *cobra.Command, args []string) error {
	if _, rest, err := c.Root().Find(args); err != nil || len(rest) > 0 {
		return errkind.Usagef("", "unknown help topic %q", strings.Join(args, " "))
	}
	return nil
}

// hideGroupUseLine keeps a group command's usage as cobra prints it for a
// command with nothing to run ("kplan lab [command]"), although
// typeUsageErrors gave it a run function.
func hideGroupUseLine(root *cobra.Command) {
	root.SetUsageTemplate(strings.Replace(root.UsageTemplate(), "{{if .Runnable}}",
		`{{if and .Runnable (not (index .Annotations "`+groupAnnotation+`"))}}`, 1))
}
