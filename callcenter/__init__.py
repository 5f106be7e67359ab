"""The application: the shop, its agents, one call's conversation, config and the command line."""
