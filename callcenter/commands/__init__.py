"""The `voiceswarm` commands, one module each: `register(subparsers)` adds its parser (see cli.COMMAND_MODULES)."""
