"""`voiceswarm` subcommands that live in their own module (see cli.COMMAND_MODULES)."""
